import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countApplyResult } from '../../src/core/apply-result.js';
import type { GuestPlan, SpecSet } from '../../src/core/model.js';
import { planErrorLines, planHasChanges } from '../../src/core/plan/plan-specs.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runDrift, runPlan } from '../../src/engine/run-plan.js';
import { api } from '../sim/helpers.js';
import { rawValue, startEstate, type Estate } from './helpers.js';

let estate: Estate;
beforeEach(async () => {
  estate = await startEstate();
});
afterEach(async () => {
  await estate.close();
});

const fast = { lockPollMs: 20 };
const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100000, upper: 199999 }\nnodes: [pve-01, pve-02]\n';
/** The template on pve-01, not owned by the repository (no owner tag): it lives outside git here. */
const TEMPLATE = [
  'boot: order=scsi0',
  'cores: 1',
  'ide2: local-lvm:vm-9000-cloudinit,media=cdrom',
  'memory: 1024',
  'name: debian-12-cloud',
  'net0: virtio=BC:24:11:00:90:00,bridge=vmbr0',
  'scsi0: shared-lvm:base-9000-disk-0,size=2G',
  'scsihw: virtio-scsi-pci',
  'template: 1',
  '',
].join('\n');

function specs(guests: string): SpecSet {
  const loaded = loadSpecs([{ path: 'specs.yaml', text: `${CLUSTER}---\n${guests}` }]);
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  return loaded.specs;
}

const clone = (name: string, vmid: number, node: string, extra = ''): string =>
  `kind: VM\nname: ${name}\ncluster: lab\nnode: ${node}\nvmid: ${vmid}\ncreate:\n  clone: { template: debian-12-cloud }\nconfig:\n  cores: 2\n  scsi0: shared-lvm:32\n  ipconfig0: ip=10.10.0.13/24,gw=10.10.0.1\n  ciuser: debian\n${extra}`;

const guestOf = (plan: { guests: GuestPlan[] }, name: string): GuestPlan | undefined => plan.guests.find((g) => g.name === name);

describe('creating guests by cloning a template', () => {
  beforeEach(() => {
    estate.sims.lab.sim.addGuest({ vmid: 9000, type: 'qemu', node: 'pve-01', config: TEMPLATE });
  });

  it('plans what it clones and the changes on top, applies them, and plans nothing after', async () => {
    const set = specs(`${clone('web-03', 100103, 'pve-01')}power: running\n`);
    const plan = await runPlan({ head: set, readers: estate.readers });
    expect(planErrorLines(plan)).toEqual([]);
    const web = guestOf(plan, 'web-03');
    expect(web?.action).toBe('create');
    expect(web?.operations.map((o) => o.op)).toEqual(['clone', 'config', 'resize', 'start']);
    expect(web?.operations[0]).toMatchObject({ op: 'clone', source: { vmid: 9000, node: 'pve-01', name: 'debian-12-cloud' }, full: false });
    // The config after the clone as Proxmox copies it: the template's cores, changed by the spec.
    expect(web?.changes.find((c) => c.key === 'cores')).toMatchObject({ from: '1', to: '2' });
    expect(web?.operations[2]).toMatchObject({ op: 'resize', disk: 'scsi0', from: '2G', size: '32G' });

    const result = await executePlan(plan, estate.writers, fast);
    expect(countApplyResult(result.guests)).toMatchObject({ applied: 1, conflict: 0, failed: 0 });
    const steps = result.guests[0]?.steps ?? [];
    expect(steps.map((s) => s.op)).toEqual(['clone', 'config', 'resize', 'start']);
    // The clone's task carries the template's VMID, not the new one.
    expect(steps[0]?.upid).toMatch(/:qmclone:9000:/);
    const sim = estate.sims.lab;
    expect(rawValue(sim, 100103, 'cores')).toBe('2');
    expect(rawValue(sim, 100103, 'scsi0')).toBe('shared-lvm:vm-100103-disk-0,size=32G');
    expect(rawValue(sim, 100103, 'tags')).toBe('pve-gitops');
    expect(rawValue(sim, 100103, 'net0')).not.toContain('BC:24:11:00:90:00');
    expect(rawValue(sim, 9000, 'template')).toBe('1');

    const again = await runPlan({ head: set, readers: estate.readers });
    expect(planErrorLines(again)).toEqual([]);
    expect(planHasChanges(again)).toBe(false);
  });

  it('a changed template changes no clone; a key the spec stops setting is deleted', async () => {
    const first = specs(`${clone('web-03', 100103, 'pve-01')}  description: web\n`);
    await executePlan(await runPlan({ head: first, readers: estate.readers }), estate.writers, fast);
    estate.sims.lab.sim.operatorEdit(9000, { set: { memory: '4096', cores: '8' } });
    const unchanged = await runPlan({ head: first, readers: estate.readers });
    expect(guestOf(unchanged, 'web-03')?.action).toBe('noop');
    expect(planHasChanges(unchanged)).toBe(false);
    // What the clone has from its template is no drift either.
    const drift = await runDrift({ head: first, readers: estate.readers });
    expect(guestOf(drift, 'web-03')?.drift).toEqual([]);
    expect(rawValue(estate.sims.lab, 100103, 'memory')).toBe('1024');

    const second = specs(clone('web-03', 100103, 'pve-01'));
    const dropped = await runPlan({ head: second, base: first, readers: estate.readers });
    const web = guestOf(dropped, 'web-03');
    expect(web?.operations).toEqual([expect.objectContaining({ op: 'config', delete: ['description'] })]);
    // Inherited keys the spec never set stay the clone's own.
    expect(web?.changes.map((c) => c.key)).toEqual(['description']);
  });

  it('a clone still being made is planned as that clone, not as a collision', async () => {
    const sim = estate.sims.lab;
    sim.sim.setTaskMs(60_000);
    // An earlier apply's clone, its task still copying (the writer waits for it: never awaited here).
    void estate.writers.lab!.clone!({ vmid: 9000, type: 'qemu', node: 'pve-01' }, 100103, { name: 'web-03' }).catch(() => undefined);
    while (sim.sim.getGuest(100103) === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    const plan = await runPlan({ head: specs(clone('web-03', 100103, 'pve-01')), readers: estate.readers });
    const web = guestOf(plan, 'web-03');
    expect(web?.errors).toEqual([]);
    expect(web?.action).toBe('create');
    expect(web?.warnings).toContain('VMID 100103 is being cloned right now (lock: clone); apply waits for the clone to finish');
  });

  it('refuses what Proxmox would refuse, before merge', async () => {
    estate.sims.lab.sim.addGuest({
      vmid: 9001,
      type: 'qemu',
      node: 'pve-01',
      config: 'name: plain\nscsi0: local-lvm:vm-9001-disk-0,size=2G\n',
    });
    estate.sims.lab.sim.addGuest({
      vmid: 9002,
      type: 'qemu',
      node: 'pve-01',
      config: 'name: local-tpl\nscsi0: local-lvm:base-9002-disk-0,size=2G\ntemplate: 1\n',
    });
    const set = specs(
      [
        'kind: VM\nname: a\ncluster: lab\nnode: pve-01\nvmid: 100201\ncreate:\n  clone: { template: missing }\n',
        'kind: VM\nname: b\ncluster: lab\nnode: pve-01\nvmid: 100202\ncreate:\n  clone: { template: plain }\n',
        'kind: VM\nname: c\ncluster: lab\nnode: pve-02\nvmid: 100203\ncreate:\n  clone: { template: 9002 }\n',
      ].join('---\n'),
    );
    const plan = await runPlan({ head: set, readers: estate.readers });
    expect(guestOf(plan, 'a')?.errors).toEqual(["create.clone: there is no template 'missing' on cluster 'lab'"]);
    expect(guestOf(plan, 'b')?.errors[0]).toMatch(/^create\.clone: 'plain' \(VMID 9001\) is not a template/);
    expect(guestOf(plan, 'c')?.errors[0]).toContain(`("can't clone VM to node 'pve-02' (VM uses local storage)")`);
  });

  it('a container is cloned from a container template: locks during the copy, the changes on top, nothing after', async () => {
    estate.sims.lab.sim.addGuest({
      vmid: 9100,
      type: 'lxc',
      node: 'pve-01',
      config:
        'arch: amd64\nhostname: ct-tpl\nmemory: 512\nnet0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:91:00,ip=dhcp,type=veth\nostype: debian\nrootfs: local-lvm:base-9100-disk-0,size=4G\ntemplate: 1\n',
    });
    const set = specs(
      'kind: Container\nname: cache-01\ncluster: lab\nnode: pve-01\nvmid: 100400\ncreate:\n  clone: { template: ct-tpl }\nconfig:\n  memory: 1024\n  rootfs: local-lvm:8\n',
    );
    const plan = await runPlan({ head: set, readers: estate.readers });
    expect(planErrorLines(plan)).toEqual([]);
    expect(guestOf(plan, 'cache-01')?.operations.map((o) => o.op)).toEqual(['clone', 'config', 'resize']);
    const result = await executePlan(plan, estate.writers, fast);
    expect(result.guests[0]?.steps.map((s) => s.op)).toEqual(['clone', 'config', 'resize']);
    expect(result.guests[0]?.steps[0]?.upid).toMatch(/:vzclone:9100:/);
    const sim = estate.sims.lab;
    expect(rawValue(sim, 100400, 'hostname')).toBe('cache-01');
    expect(rawValue(sim, 100400, 'rootfs')).toBe('local-lvm:vm-100400-disk-0,size=8G');
    expect(rawValue(sim, 9100, 'lock')).toBeUndefined();
    expect(planHasChanges(await runPlan({ head: set, readers: estate.readers }))).toBe(false);
  });

  it('cloud-init on a running VM waits for a regeneration, unless the spec asks for it with cloudinit: regenerate', async () => {
    const first = specs(`${clone('web-03', 100103, 'pve-01')}power: running\n`);
    await executePlan(await runPlan({ head: first, readers: estate.readers }), estate.writers, fast);
    const sim = estate.sims.lab;
    const cloudinit = async (): Promise<unknown> => (await api(sim, 'GET', '/nodes/pve-01/qemu/100103/cloudinit')).body?.data;
    const waiting = specs(`${clone('web-03', 100103, 'pve-01', '  ciuser: admin\n').replace('  ciuser: debian\n', '')}power: running\n`);
    const plan = await runPlan({ head: waiting, base: first, readers: estate.readers });
    const web = guestOf(plan, 'web-03');
    expect(web?.changes.find((c) => c.key === 'ciuser')).toMatchObject({ from: 'debian', to: 'admin', impact: 'pending-restart' });
    expect(web?.warnings.some((w) => w.startsWith('cloud-init (ciuser): written to the config at once'))).toBe(true);
    await executePlan(plan, estate.writers, fast);
    expect(await cloudinit()).toEqual([
      { key: 'ciuser', value: 'debian', pending: 'admin' },
      expect.objectContaining({ key: 'ipconfig0' }),
    ]);

    const regenerate = specs(
      `${clone('web-03', 100103, 'pve-01').replace('  ciuser: debian\n', '  ciuser: root\n')}power: running\ncloudinit: regenerate\n`,
    );
    const second = await runPlan({ head: regenerate, base: waiting, readers: estate.readers });
    expect(guestOf(second, 'web-03')?.operations.map((o) => o.op)).toEqual(['config', 'cloudinit']);
    const result = await executePlan(second, estate.writers, fast);
    expect(result.guests[0]?.steps.map((s) => s.op)).toEqual(['config', 'cloudinit']);
    expect(await cloudinit()).toEqual([{ key: 'ciuser', value: 'root' }, expect.objectContaining({ key: 'ipconfig0' })]);
    expect(planHasChanges(await runPlan({ head: regenerate, readers: estate.readers }))).toBe(false);
  });

  it('a template built in git is created from a cloud image, converted, and never started', async () => {
    const set = specs(
      'kind: VM\nname: debian-13-cloud\ncluster: lab\nnode: pve-01\nvmid: 100900\ntemplate: true\npower: ignore\nconfig:\n  scsi0: local-lvm:0,import-from=shared-lvm:base-9000-disk-0\n  ide2: local-lvm:cloudinit\n',
    );
    const plan = await runPlan({ head: set, readers: estate.readers });
    expect(guestOf(plan, 'debian-13-cloud')?.operations.map((o) => o.op)).toEqual(['create', 'template']);
    const result = await executePlan(plan, estate.writers, fast);
    expect(result.guests[0]?.steps.map((s) => s.op)).toEqual(['create', 'template']);
    expect(rawValue(estate.sims.lab, 100900, 'template')).toBe('1');
    expect(rawValue(estate.sims.lab, 100900, 'scsi0')).toBe('local-lvm:base-100900-disk-0,size=2G');
    expect(planHasChanges(await runPlan({ head: set, readers: estate.readers }))).toBe(false);
  });
});
