/**
 * The apply rehearsal through the App (issue 22): signed pull request deliveries, the GitHub
 * double, real Redis and a simulated cluster whose storages, nodes, bridges and CPUs differ the
 * way real clusters do. Each pull request carries one change that `validate` and `plan` accept but
 * Proxmox refuses at apply time; each must be caught by the rehearsal — the guest, the step and
 * Proxmox's own error text in the comment and the check run, an annotation on the spec, a failed
 * check — while the cluster itself is never written. A clean pull request passes, and a
 * repository that chose `rehearsal: warn` sees the refusal without a failed check.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { clusterFirewall, saveFirewallFile, SimFirewallFile } from '../../src/pve/sim/kinds/firewall/state.js';
import { haConfig } from '../../src/pve/sim/kinds/ha/state.js';
import type { Simulator } from '../../src/pve/sim/simulator.js';
import { pullRequestEvent } from './deliveries.js';
import { expectArchive, expectCheckRun, expectCommentEdit, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles } from './spec-repo.js';
import { at, openPullRequest, startWorld, type World } from './world.js';

let world: World | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

/**
 * The cluster: pve-01 has 8 CPUs and only `vmbr0`; `local` holds no disks (no `images`, no
 * `rootdir`), `fast` is enabled on pve-02 only; the LVM volume groups `tight` and `thick` have 4 MiB
 * and 2 GiB free; pool `web` exists. Guest 100201 (a VM) and
 * 100301 (a container) are owned and stopped on pve-01, beside the template 9000 outside git.
 */
const LAB = {
  fixture: {
    nodes: ['pve-01', 'pve-02'],
    nodeCpus: { 'pve-01': 8, 'pve-02': 32 },
    bridges: { 'pve-01': ['vmbr0'], 'pve-02': ['vmbr0', 'vmbr1'] },
    storages: [
      'local-lvm',
      { storage: 'local', type: 'dir', content: ['iso', 'vztmpl', 'backup', 'snippets'] },
      { storage: 'fast', type: 'lvmthin', content: ['images', 'rootdir'], nodes: ['pve-02'] },
      { storage: 'tight', type: 'lvm', content: ['images', 'rootdir'], total: 16 * GIB, used: 16 * GIB - 4 * MIB },
      { storage: 'thick', type: 'lvm', content: ['images', 'rootdir'], total: 16 * GIB, used: 14 * GIB },
    ],
    pools: ['web'],
    guests: [
      {
        vmid: 9000,
        type: 'qemu',
        node: 'pve-01',
        config:
          'cores: 1\nmemory: 1024\nname: debian-12-cloud\nnet0: virtio=BC:24:11:00:90:00,bridge=vmbr0\nscsi0: local-lvm:base-9000-disk-0,size=2G\ntemplate: 1\n',
      },
      {
        vmid: 100201,
        type: 'qemu',
        node: 'pve-01',
        config:
          'cores: 2\nmemory: 2048\nname: app-01\nnet0: virtio=BC:24:11:00:00:01,bridge=vmbr0\nscsi0: local-lvm:vm-100201-disk-0,size=8G\ntags: pve-gitops\n',
      },
      {
        vmid: 100301,
        type: 'lxc',
        node: 'pve-01',
        config:
          'arch: amd64\nhostname: ct-01\nmemory: 512\nostype: debian\nrootfs: local-lvm:vm-100301-disk-0,size=8G\nswap: 512\ntags: pve-gitops\nunprivileged: 1\n',
      },
    ],
  },
};

const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

function vm(name: string, vmid: number, config: Record<string, string | number>, extra: string[] = []): string {
  const lines = [`kind: VM`, `name: ${name}`, 'cluster: lab', 'node: pve-01', `vmid: ${vmid}`, ...extra, 'config:'];
  for (const [key, value] of Object.entries({ memory: 2048, cores: 2, net0: 'virtio,bridge=vmbr0', ...config }))
    lines.push(`  ${key}: ${value}`);
  return `${lines.join('\n')}\n`;
}

function ct(name: string, vmid: number, config: Record<string, string | number>): string {
  const lines = [
    `kind: Container`,
    `name: ${name}`,
    'cluster: lab',
    'node: pve-01',
    `vmid: ${vmid}`,
    'create:',
    `  ostemplate: ${TEMPLATE}`,
    'config:',
  ];
  const all = { arch: 'amd64', ostype: 'debian', memory: 512, swap: 512, unprivileged: 1, rootfs: 'local-lvm:8', ...config };
  for (const [key, value] of Object.entries(all)) lines.push(`  ${key}: ${value}`);
  return `${lines.join('\n')}\n`;
}

/** The base branch: the two guests as they are. */
const BASE: RepoFiles = {
  'cluster.yaml': clusterDoc(),
  'app.yaml': vm('app-01', 100201, { scsi0: 'local-lvm:8' }),
  'ct.yaml': ct('ct-01', 100301, {}),
};

interface Case {
  what: string;
  /** Files the head adds or changes. */
  head: RepoFiles;
  /** The refused guest or object, as the comment's first column names it. */
  guest: string;
  step: RegExp;
  error: string;
  /** The spec file the annotation is on, and the config key whose line it marks (none: the document's first line). */
  at: [string, string | undefined];
  /** What the live cluster holds besides the fixture (HA resources, firewall files), set before the plan. */
  seed?: (sim: Simulator) => void;
  /** The verdict's counts (default: one guest). */
  counted?: string;
}

/** A VM cloned from the template 9000 (`debian-12-cloud`). */
function clone(name: string, vmid: number, how: string): string {
  return vm(name, vmid, { scsi0: 'local-lvm:2' }, ['create:', `  clone: { template: debian-12-cloud${how} }`]);
}

const CASES: Case[] = [
  {
    what: 'a full clone of a template onto a storage without the images content type',
    head: { 'clone.yaml': clone('clone-01', 100403, ', full: true, storage: local') },
    guest: 'lab/clone-01 (100403)',
    step: /clone/,
    error: "storage 'local' does not support vm images",
    at: ['clone.yaml', undefined],
  },
  {
    what: 'a full clone of a template onto a storage not enabled on the template’s node',
    head: { 'clone.yaml': clone('clone-01', 100403, ', full: true, storage: fast') },
    guest: 'lab/clone-01 (100403)',
    step: /clone/,
    error: "storage 'fast' is not available on node 'pve-01'",
    at: ['clone.yaml', undefined],
  },
  {
    what: 'a new VM disk on a storage without the images content type',
    head: { 'new.yaml': vm('new-01', 100401, { scsi0: 'local:8' }) },
    guest: 'lab/new-01 (100401)',
    step: /create/,
    error: "storage 'local' does not support vm images",
    at: ['new.yaml', 'scsi0'],
  },
  {
    what: 'a disk added to a VM on a storage without the images content type',
    head: { 'app.yaml': vm('app-01', 100201, { scsi0: 'local-lvm:8', scsi1: 'local:4' }) },
    guest: 'lab/app-01 (100201)',
    step: /set scsi1/,
    error: "storage 'local' does not support vm images",
    at: ['app.yaml', 'scsi1'],
  },
  {
    what: 'a new VM disk on a storage not enabled on its node',
    head: { 'new.yaml': vm('new-01', 100401, { scsi0: 'fast:8' }) },
    guest: 'lab/new-01 (100401)',
    step: /create/,
    error: "storage 'fast' is not available on node 'pve-01'",
    at: ['new.yaml', 'scsi0'],
  },
  {
    what: 'a disk added to a VM on a storage not enabled on its node',
    head: { 'app.yaml': vm('app-01', 100201, { scsi0: 'local-lvm:8', scsi1: 'fast:4' }) },
    guest: 'lab/app-01 (100201)',
    step: /set scsi1/,
    error: "storage 'fast' is not available on node 'pve-01'",
    at: ['app.yaml', 'scsi1'],
  },
  {
    what: 'a VM disk moved to a storage without the images content type',
    head: { 'app.yaml': vm('app-01', 100201, { scsi0: 'local:8' }) },
    guest: 'lab/app-01 (100201)',
    step: /move/,
    error: "storage 'local' does not support vm images",
    at: ['app.yaml', 'scsi0'],
  },
  {
    what: 'a VM disk moved to a storage not enabled on its node',
    head: { 'app.yaml': vm('app-01', 100201, { scsi0: 'fast:8' }) },
    guest: 'lab/app-01 (100201)',
    step: /move/,
    error: "storage 'fast' is not available on node 'pve-01'",
    at: ['app.yaml', 'scsi0'],
  },
  {
    // RHM-1: pve-storage's own check compares the volume group's free bytes with the disk's KiB.
    what: 'a new VM disk on an LVM storage with less free space than it needs',
    head: { 'new.yaml': vm('new-01', 100401, { scsi0: 'tight:8' }) },
    guest: 'lab/new-01 (100401)',
    step: /create/,
    // The `<` that follows is escaped in the markdown.
    error: 'not enough free space (4194304 ',
    at: ['new.yaml', undefined],
  },
  {
    // RHM-2: past pve-storage's check, `lvcreate` finds too few extents.
    what: 'a disk added to a VM that does not fit on its LVM storage',
    head: { 'app.yaml': vm('app-01', 100201, { scsi0: 'local-lvm:8', scsi1: 'thick:4' }) },
    guest: 'lab/app-01 (100201)',
    step: /set scsi1/,
    // The comment cuts Proxmox's answer at 120 characters.
    error: `lvcreate 'thick/vm-100201-disk-0' error:   Volume group "thick" has insufficient free space (512 extents)`,
    at: ['app.yaml', 'scsi1'],
  },
  {
    what: 'a VM disk moved to an LVM storage without room for it',
    head: { 'app.yaml': vm('app-01', 100201, { scsi0: 'tight:8' }) },
    guest: 'lab/app-01 (100201)',
    step: /move/,
    error: 'not enough free space (4194304 ',
    at: ['app.yaml', 'scsi0'],
  },
  {
    what: 'a new running VM with more vCPUs than its node has',
    head: { 'new.yaml': vm('new-01', 100401, { cores: 16, scsi0: 'local-lvm:8' }, ['power: running']) },
    guest: 'lab/new-01 (100401)',
    step: /start/,
    error: 'MAX 8 vcpus allowed per VM on this node',
    at: ['new.yaml', 'cores'],
  },
  {
    what: 'a VM given more vCPUs than its node has, then started',
    head: { 'app.yaml': vm('app-01', 100201, { cores: 4, sockets: 4, scsi0: 'local-lvm:8' }, ['power: running']) },
    guest: 'lab/app-01 (100201)',
    step: /start/,
    error: 'MAX 8 vcpus allowed per VM on this node',
    at: ['app.yaml', 'cores'],
  },
  {
    what: 'a running VM on a bridge its node does not have',
    head: { 'new.yaml': vm('new-01', 100401, { net0: 'virtio,bridge=vmbr1', scsi0: 'local-lvm:8' }, ['power: running']) },
    guest: 'lab/new-01 (100401)',
    step: /start/,
    error: "bridge 'vmbr1' does not exist",
    at: ['new.yaml', 'net0'],
  },
  {
    what: 'a container mount point on a storage without the rootdir content type',
    head: { 'ct.yaml': ct('ct-01', 100301, { mp0: 'local:4,mp=/data' }) },
    guest: 'lab/ct-01 (100301)',
    step: /set mp0/,
    error: "content type 'rootdir' is not available or configured on storage 'local'",
    at: ['ct.yaml', 'mp0'],
  },
  {
    what: 'a container mount point on a storage not enabled on its node',
    head: { 'ct.yaml': ct('ct-01', 100301, { mp0: 'fast:4,mp=/data' }) },
    guest: 'lab/ct-01 (100301)',
    step: /set mp0/,
    error: "storage 'fast' is not available on node 'pve-01'",
    at: ['ct.yaml', 'mp0'],
  },
  {
    what: 'a new container whose root disk is on a storage without container directories',
    head: { 'new-ct.yaml': ct('ct-02', 100402, { rootfs: 'local:8' }) },
    guest: 'lab/ct-02 (100402)',
    step: /create/,
    error: "storage 'local' does not support container directories",
    at: ['new-ct.yaml', 'rootfs'],
  },
  {
    what: 'a new container whose root disk is on a storage not enabled on its node',
    head: { 'new-ct.yaml': ct('ct-02', 100402, { rootfs: 'fast:8' }) },
    guest: 'lab/ct-02 (100402)',
    step: /create/,
    error: "storage 'fast' is not available on node 'pve-01'",
    at: ['new-ct.yaml', 'rootfs'],
  },
];

/** The live cluster's HA resource of app-01, its service in `error` state (the CRM could not start it). */
function haInError(sim: Simulator): void {
  haConfig(sim).ids.set('vm:100201', { type: 'vm', options: { state: 'started' } });
  haConfig(sim).errorState.add('vm:100201');
}

/** app-01 as in {@link BASE}, with top-level `parts` (its `ha:`, `firewall:`, `pool:`) and `config` changes. */
function app(parts: string[], config: Record<string, string | number> = {}): string {
  return vm('app-01', 100201, { scsi0: 'local-lvm:8', ...config }, parts);
}

/** A `firewall:` with one rule (a flow mapping). */
function oneRule(rule: string): string[] {
  return ['firewall:', '  rules:', `    - ${rule}`];
}

const ONE_OBJECT = '0 of 1 other object';

/**
 * Objects of other kinds and HA state that `validate` and `plan` accept but Proxmox refuses when
 * the apply writes them (docs/proxmox-behaviour.md, the rows named in each case).
 */
const KIND_CASES: Case[] = [
  {
    // RHK-1: pve-manager `API2/Pool.pm` `create_pool` (the plan only warns that the parent has no document).
    what: 'a nested pool whose parent pool does not exist',
    head: { 'pools.yaml': 'kind: Pool\nname: team/web\ncluster: lab\n' },
    guest: 'lab/pool team/web',
    step: /create-pool/,
    error: "create pool failed: parent 'team' of pool 'team/web' does not exist",
    at: ['pools.yaml', undefined],
    counted: ONE_OBJECT,
  },
  {
    // RHK-2: pve-manager `API2/Backup.pm` `create_job`, `check_pool_exist`.
    what: 'a backup job of a pool that does not exist',
    head: { 'backup.yaml': 'kind: BackupJob\nname: nightly\ncluster: lab\nschedule: "sun 01:00"\nstorage: local\npool: nope\n' },
    guest: 'lab/backup job nightly',
    step: /create-backup-job/,
    error: "Permission check failed (pool 'nope' does not exist)",
    at: ['backup.yaml', undefined],
    counted: ONE_OBJECT,
  },
  {
    // FW-11: pve-firewall `verify_rule`; the spec manages the rules only, so the plan cannot tell.
    what: 'a firewall rule naming an IPset the guest does not have',
    head: { 'app.yaml': app(oneRule('{ type: in, action: ACCEPT, source: +admins, proto: tcp, dport: 22 }')) },
    guest: 'lab/firewall of app-01 (100201)',
    step: /add-fw-rule/,
    error: "no such ipset 'admins'",
    at: ['app.yaml', undefined],
    counted: ONE_OBJECT,
  },
  {
    // RHK-3: pve-firewall `verify_rule`, `$pve_fw_preferred_macro_names`.
    what: 'a firewall rule with a macro Proxmox does not know',
    head: { 'app.yaml': app(oneRule('{ type: in, action: ACCEPT, macro: HTTPX }')) },
    guest: 'lab/firewall of app-01 (100201)',
    step: /add-fw-rule/,
    error: "unknown macro 'HTTPX'",
    at: ['app.yaml', undefined],
    counted: ONE_OBJECT,
  },
  {
    // HA-12: pve-ha-manager `API2/HA/Resources.pm` `update`, `check_service_state`.
    what: 'an HA resource changed while its service is in error state',
    seed: haInError,
    head: { 'app.yaml': app(['ha: { state: started, max_restart: 2 }']) },
    guest: 'lab/HA resource of app-01 (vm:100201)',
    step: /update-ha/,
    error: "service 'vm:100201' in error state, must be disabled and fixed first",
    at: ['app.yaml', undefined],
    counted: ONE_OBJECT,
  },
  {
    // HAP-6: the copy carries the guest's HA state, so its start goes through the HA manager.
    what: 'an HA-managed VM started while its service is in error state',
    seed: haInError,
    head: { 'app.yaml': app(['power: running']) },
    guest: 'lab/app-01 (100201)',
    step: /start/,
    error: "service 'vm:100201' in error state, must be disabled and fixed first",
    at: ['app.yaml', undefined],
  },
];

/** The 1-based line of `  key:` in a spec file's text; 1 (the document) without a key. */
function lineOf(text: string, key: string | undefined): number {
  if (key === undefined) return 1;
  const index = text.split('\n').findIndex((line) => line.startsWith(`  ${key}:`));
  if (index < 0) throw new Error(`no line for ${key} in ${text}`);
  return index + 1;
}

/** Plans one pull request of `head` over {@link BASE}; returns the check run's result and the comment. */
async function planPr(w: World, pr: number, head: RepoFiles, base: RepoFiles = BASE) {
  const baseSha = newSha();
  const headSha = newSha();
  await expectArchive(w.github, w.repo, baseSha, base);
  await expectArchive(w.github, w.repo, headSha, { ...base, ...head });
  const check = expectCheckRun(w.github, w.repo, { headSha, pr, id: 900 + pr });
  const comment = expectNewComment(w.github, w.repo, pr, 1900 + pr);
  await w.app.jobDone('plan', await openPullRequest(w, pr, headSha, baseSha));
  w.github.verify();
  return { result: await check.result(), body: await comment.body() };
}

describe('the apply rehearsal of a pull request', () => {
  it.each([...CASES, ...KIND_CASES].map((c, i) => [c.what, c, i] as const))(
    'catches %s, with Proxmox’s error text',
    async (_what, c, i) => {
      const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: LAB } }));
      const sim = w.clusters.sims.lab!.sim;
      c.seed?.(sim);
      const { result, body } = await planPr(w, 40 + i, c.head);

      // The plan itself is fine: validate and plan accept the change.
      expect(body).not.toContain('nothing was planned');
      expect(body).not.toMatch(/\d+ errors?\b/);
      const headline = `Rehearsal: ${c.counted ?? '0 of 1 guest'} applied on a simulated copy`;
      expect(body).toContain(`### ❌ ${headline}`);
      const section = body.slice(body.indexOf(headline));
      const row = section.split('\n').find((line) => line.startsWith(`| ${c.guest} |`));
      expect(row, body).toBeDefined();
      expect(row).toMatch(c.step);
      expect(row).toContain(c.error);
      expect(body).toContain('a model, not a guarantee');

      expect(result.conclusion).toBe('failure');
      expect(result.output?.title).toBe(headline);
      expect(result.output?.summary).toContain(c.guest);
      expect(result.output?.summary).toContain(c.error);
      const annotation = result.output?.annotations?.find((a) => a.message.includes(c.error));
      const [file, key] = c.at;
      expect(annotation && [annotation.path, annotation.start_line, annotation.annotation_level]).toEqual([
        file,
        lineOf(String(c.head[file]), key),
        'failure',
      ]);
      expect(annotation?.message).toContain(c.error);

      // Nothing was written to the cluster: the rehearsal ran on its copy.
      expect(sim.stats().writes.total).toBe(0);
      expect([100401, 100402, 100403].filter((vmid) => sim.guests.has(vmid))).toEqual([]);
    },
  );

  it('passes a clean pull request: every guest applied on the copy, the check a success', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: LAB } }));
    const sim = w.clusters.sims.lab!.sim;
    const { result, body } = await planPr(w, 60, {
      'app.yaml': vm('app-01', 100201, { memory: 4096, scsi0: 'local-lvm:8', scsi1: 'local-lvm:4' }, ['power: running']),
      'ct.yaml': ct('ct-01', 100301, { mp0: 'local-lvm:4,mp=/data' }),
      'new.yaml': vm('new-01', 100401, { scsi0: 'fast:8', net0: 'virtio,bridge=vmbr1' }).replace('node: pve-01', 'node: pve-02'),
      'clone.yaml': clone('clone-01', 100403, ''),
    });
    expect(body).toContain('### ✅ Rehearsal: 4 of 4 guests applied on a simulated copy');
    expect(result.conclusion).toBe('success');
    expect(result.output?.summary).toContain('**Rehearsal: 4 of 4 guests applied on a simulated copy**');
    expect(sim.stats().writes.total).toBe(0);
  });

  it('passes a clean pull request that changes objects of every kind, on a copy that carries their live state', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: LAB } }));
    const sim = w.clusters.sims.lab!.sim;
    // The guest's live firewall has the IPset its first new rule names, the datacenter the one its
    // second names (RHK-5): only a copy of both files accepts the rules.
    // Its rule that stays, its options and its alias are copied with the values Proxmox keeps.
    const file = new SimFirewallFile();
    file.ipsets.set('admins', { entries: [{ cidr: '10.0.0.0/24' }] });
    file.aliases.set('bastion', { name: 'bastion', cidr: '10.1.0.5', ipversion: 4 });
    file.options = { enable: 1 };
    file.rules = [{ type: 'in', action: 'ACCEPT', proto: 'tcp', dport: '22', source: '10.0.0.0/8', enable: 1, ipversion: 4 }];
    saveFirewallFile(sim, 100201, file);
    clusterFirewall(sim).ipsets.set('mgmt', { entries: [{ cidr: '10.9.0.0/24' }] });
    const rules = [
      ...oneRule('{ type: in, action: ACCEPT, source: +admins, macro: SSH }'),
      '    - { type: in, action: ACCEPT, source: +mgmt }',
      '    - { type: in, action: ACCEPT, proto: tcp, dport: 22, source: 10.0.0.0/8 }',
      '  options: { enable: true, policy_in: DROP }',
    ];
    const { result, body } = await planPr(w, 62, {
      'app.yaml': app(['ha: { state: started }', ...rules], { memory: 4096 }),
      'ct.yaml': ct('ct-01', 100301, {}).replace('create:', 'pool: web\ncreate:'),
      'pools.yaml': 'kind: Pool\nname: team\ncluster: lab\n---\nkind: Pool\nname: team/web\ncluster: lab\n',
      'backup.yaml': 'kind: BackupJob\nname: nightly\ncluster: lab\nschedule: "sun 01:00"\nstorage: local\npool: web\n',
    });
    // The firewall's item changes an option and adds two rules above the one that stays.
    expect(body).toMatch(/policy_in/);
    expect(body.match(/add firewall rule/g)?.length, body).toBe(2);
    const headline = 'Rehearsal: 1 of 1 guest and 6 of 6 other objects applied on a simulated copy';
    expect(body).toContain(`### ✅ ${headline}`);
    expect(result.conclusion).toBe('success');
    expect(result.output?.summary).toContain(`**${headline}**`);
    expect(sim.stats().writes.total).toBe(0);
  });

  it('starts an HA-managed guest on the copy through its HA manager, as the cluster would', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: LAB } }));
    const sim = w.clusters.sims.lab!.sim;
    haConfig(sim).ids.set('vm:100201', { type: 'vm', options: { state: 'stopped' } });
    const { result, body } = await planPr(w, 63, { 'app.yaml': app(['power: running']) });
    expect(body).toContain('### ✅ Rehearsal: 1 of 1 guest applied on a simulated copy');
    expect(result.conclusion).toBe('success');
    expect(sim.guests.get(100201)?.running).toBe(false);
    expect(sim.stats().writes.total).toBe(0);
  });

  it('rehearses a guest locked when planned as applied: the run waits the lock out on a skipping clock, as the apply would', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: LAB } }));
    const sim = w.clusters.sims.lab!.sim;
    // A backup holds app-01 when the pull request is planned; the real apply waits it out (never clears it).
    const guest = sim.guests.get(100201)!;
    guest.main.set('lock', 'backup');
    guest.commit();
    const { result, body } = await planPr(w, 64, { 'app.yaml': app([], { memory: 4096 }) });
    expect(body).toContain('### ✅ Rehearsal: 1 of 1 guest applied on a simulated copy');
    expect(body).toContain('lab/app-01 (100201): locked (backup) when planned: the apply will wait for it');
    expect(result.conclusion).toBe('success');
    expect(result.output?.summary).toContain('locked (backup) when planned: the apply will wait for it');
    // The live guest keeps its lock: the copy's ended, the cluster's is the backup's own.
    expect(sim.guests.get(100201)?.lock).toBe('backup');
    expect(sim.stats().writes.total).toBe(0);
  });

  it('shows a stored plan’s rehearsal again as it was posted: its refusals and its notes', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: LAB } }));
    const guest = w.clusters.sims.lab!.sim.guests.get(100201)!;
    guest.main.set('lock', 'backup');
    guest.commit();
    const baseSha = newSha();
    const headSha = newSha();
    await expectArchive(w.github, w.repo, baseSha, BASE);
    await expectArchive(w.github, w.repo, headSha, {
      ...BASE,
      'app.yaml': app([], { memory: 4096 }),
      'new.yaml': vm('new-01', 100401, { scsi0: 'local:8' }),
    });
    expectCheckRun(w.github, w.repo, { headSha, pr: 65, id: 965 });
    const posted = expectNewComment(w.github, w.repo, 65, 1965);
    await w.app.jobDone('plan', await openPullRequest(w, 65, headSha, baseSha, { draft: true }));
    const first = await posted.body();
    w.github.verify();

    // Marked ready: the comment is rendered again from the stored plan and its rehearsal, nothing is planned.
    const edited = expectCommentEdit(w.github, w.repo, 1965);
    const ready = await w.app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({
        action: 'ready_for_review',
        installationId: w.installationId,
        repo: w.repo,
        number: 65,
        headSha,
        baseSha,
        updatedAt: at(66),
      }),
    });
    await w.app.jobDone('plan', ready.deliveryId);
    const again = await edited.body();
    w.github.verify();
    const section = (body: string): string => body.slice(body.indexOf('### ❌ Rehearsal'));
    expect(first).not.toBe(again);
    expect(section(first)).toContain("storage 'local' does not support vm images");
    expect(section(first)).toContain('locked (backup) when planned: the apply will wait for it');
    expect(section(again)).toBe(section(first));
  });

  it('with rehearsal: warn, reports the refusal as a warning and does not fail the check', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: LAB } }));
    const base = { ...BASE, '.github/pve-gitops.yml': 'rehearsal: warn\n' };
    const { result, body } = await planPr(w, 61, { 'new.yaml': vm('new-01', 100401, { scsi0: 'local:8' }) }, base);
    expect(body).toContain("storage 'local' does not support vm images");
    expect(result.conclusion).toBe('success');
    expect(result.output?.annotations?.find((a) => a.message.includes('does not support vm images'))?.annotation_level).toBe('warning');
  });
});
