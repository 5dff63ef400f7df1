import { describe, expect, it } from 'vitest';
import type { Plan } from '../model.js';
import { planSpecs } from '../plan/plan-specs.js';
import { parsePlanJson, renderPlanJson } from '../render/render-json.js';
import { formatSpecError } from './errors.js';
import { loadSpecs } from './load-specs.js';
import { validateStoredPlan } from './validate-stored-plan.js';

const CLUSTERS = `kind: Cluster
name: lab
vmids: { lower: 100000, upper: 199999 }
nodes: [pve-01, pve-02]
storages: [local-lvm]
bridges: [vmbr0]
`;

const GUESTS = `kind: VM
name: web-01
cluster: lab
node: pve-01
vmid: 100101
config:
  memory: 4096
  net0: { model: virtio, bridge: vmbr0 }
  scsi0: local-lvm:32
  tags: [web, env-lab]
---
kind: VM
name: web-02
cluster: lab
node: pve-02
config:
  memory: 2048
---
kind: Container
name: db-01
cluster: lab
node: pve-01
create:
  ostemplate: local:vztmpl/debian-12.tar.zst
  ssh-public-keys: [ssh-ed25519 AAAA one, ssh-ed25519 BBBB two]
config:
  memory: 1024
  rootfs: local-lvm:8
`;

/** A plan of the specs above (every guest a create), stored and read back as apply reads it. */
function storedPlan(guests = GUESTS): Plan {
  const loaded = loadSpecs([
    { path: 'clusters.yaml', text: CLUSTERS },
    { path: 'lab/guests.yaml', text: guests },
  ]);
  expect(loaded.errors.map(formatSpecError)).toEqual([]);
  const plan = planSpecs({
    head: loaded.specs,
    observed: { clusters: { lab: { name: 'lab', nodes: ['pve-01', 'pve-02'], listing: [], guests: {} } } },
  });
  return parsePlanJson(renderPlanJson(plan));
}

/** What `validate` says of the specs with one line replaced (file and message: a plan keeps key positions only). */
function validateSays(from: string, to: string): string[] {
  const loaded = loadSpecs([
    { path: 'clusters.yaml', text: CLUSTERS },
    { path: 'lab/guests.yaml', text: GUESTS.replace(from, to) },
  ]);
  return loaded.errors.map((e) => `${e.file}: ${e.message}`);
}

const guest = (plan: Plan, name: string) => {
  const found = plan.guests.find((g) => g.name === name);
  if (!found?.target.spec) throw new Error(`no spec for ${name}`);
  return { plan: found, spec: found.target.spec };
};

const check = (plan: Plan): string[] => validateStoredPlan(plan).map(formatSpecError);

describe('validateStoredPlan', () => {
  it('accepts a plan exactly as planned, with its Cluster documents stored', () => {
    const plan = storedPlan();
    expect(plan.clusterSpecs?.map((c) => c.name)).toEqual(['lab']);
    expect(check(plan)).toEqual([]);
  });

  it.each([
    ['a value Proxmox refuses', 'memory: 4096', 'memory: lots', 'memory', 'lots'],
    ['an unknown config key', 'memory: 4096', 'bogus0: 1', 'bogus0', '1'],
    ['a storage outside the naming contract', 'scsi0: local-lvm:32', 'scsi0: nfs-big:32', 'scsi0', 'nfs-big:32'],
    [
      'a bridge outside the naming contract',
      'net0: { model: virtio, bridge: vmbr0 }',
      'net0: virtio,bridge=vmbr9',
      'net0',
      'virtio,bridge=vmbr9',
    ],
  ])('refuses %s in a tampered plan with the error validate gives', (_name, from, to, key, value) => {
    const expected = validateSays(from, to);
    expect(expected.length).toBeGreaterThan(0);
    const plan = storedPlan();
    const web = guest(plan, 'web-01');
    const fromKey = from.split(':')[0] ?? '';
    delete web.spec.config[fromKey];
    web.spec.config[key] = value;
    expect(validateStoredPlan(plan).map((e) => `${e.file}: ${e.message}`)).toEqual(expected);
  });

  it('refuses a node that is not a node of the cluster, and a pinned VMID outside its range', () => {
    const plan = storedPlan();
    const web = guest(plan, 'web-01');
    web.spec.node = 'pve-99';
    web.spec.vmid = 300000;
    web.plan.vmid = 300000;
    expect(check(plan)).toEqual([
      'lab/guests.yaml:1:1: node "pve-99" is not a node of cluster "lab" (pve-01, pve-02)',
      'lab/guests.yaml:1:1: vmid 300000 is outside cluster "lab" range [100000, 199999)',
    ]);
  });

  it('refuses a derived VMID outside the range and a value validate would have written differently', () => {
    const plan = storedPlan();
    const web2 = guest(plan, 'web-02');
    web2.spec.vmid = 5;
    web2.plan.vmid = 5;
    const web1 = guest(plan, 'web-01');
    web1.spec.config.tags = 'web;ENV-LAB';
    expect(check(plan)).toEqual([
      `lab/guests.yaml:1:1: the plan's spec of lab/web-01 is not what validate makes of it: config.tags "web;ENV-LAB" would be "env-lab;web"`,
      'lab/guests.yaml:12:1: vmid 5 is outside cluster "lab" range [100000, 199999)',
    ]);
    web1.spec.config.tags = 'env-lab;web';
    web1.spec.config.ciuser = 'root\nevil: 1';
    expect(check(plan)).toContain('lab/guests.yaml:1:1: config.ciuser: must be a single line');
  });

  it('refuses a guest whose identity differs from its spec, and an owner tag or prune the cluster does not have', () => {
    const plan = storedPlan();
    const db = guest(plan, 'db-01');
    db.plan.vmid += 1;
    db.plan.target.prune = true;
    const web = guest(plan, 'web-01');
    web.plan.target.ownerTag = 'someone-else';
    expect(check(plan)).toEqual([
      'lab/db-01: plan: owner tag "pve-gitops" and prune true differ from cluster "lab" (owner tag "pve-gitops", prune false)',
      expect.stringMatching(/^lab\/db-01: plan: the guest's cluster, name, VMID or type differ from its spec/),
      'lab/web-01: plan: owner tag "someone-else" and prune false differ from cluster "lab" (owner tag "pve-gitops", prune false)',
    ]);
  });

  it('refuses a plan without its Cluster documents, and a Cluster document validate refuses', () => {
    const plan = storedPlan();
    const clusters = plan.clusterSpecs ?? [];
    delete plan.clusterSpecs;
    expect(check(plan).join('\n')).toMatch(/lab\/web-01: plan: the plan holds no Cluster document "lab" for its spec/);
    plan.clusterSpecs = clusters.map((c) => ({ ...c, ownerTag: 'Not A Tag' }));
    for (const g of plan.guests) g.target.ownerTag = 'Not A Tag';
    expect(check(plan)).toEqual(['clusters.yaml:1:1: ownerTag "Not A Tag" is not a valid Proxmox tag']);
  });

  it('refuses create options validate does not know', () => {
    const plan = storedPlan();
    const db = guest(plan, 'db-01');
    db.spec.createOptions = { ...db.spec.createOptions, password: 'hunter2' };
    expect(check(plan)).toEqual([
      'lab/guests.yaml:19:1: unknown key "password" in create (a password does not belong in a repository; use ssh-public-keys)',
    ]);
  });
});
