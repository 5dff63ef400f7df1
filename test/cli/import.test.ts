/**
 * `pve-gitops import` end to end: the real command line against simulated clusters over HTTP —
 * the demo's two clusters and a generated estate of 1,000 unmanaged guests — and the round trip
 * it promises: the plan after an import shows only each guest's adoption, and after the apply the
 * plan has nothing to do.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Run, cli as runCli } from './run-cli.js';
import type { Plan } from '../../src/core/model.js';
import { parsePlanJson } from '../../src/core/render/render-json.js';
import labFixture from '../../src/demo/lab-fixture.json' with { type: 'json' };
import prodFixture from '../../src/demo/prod-fixture.json' with { type: 'json' };
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';
import { api } from '../sim/helpers.js';
import { failingReads } from './clusters.js';
import {
  estateFirewallCalls,
  estateReadToken,
  hasFirewall,
  hasPending,
  inWebPool,
  isContainer,
  SPECIAL,
  unmanagedEstateFixture,
  vmidOf,
} from '../bench/unmanaged-estate.js';

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return runCli(args, env, dir);
}

/** Every file under `root`, relative path → text. */
async function tree(root: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files[relative(root, path)] = await readFile(path, 'utf8');
  }
  return files;
}

async function planJson(specs: string, env: NodeJS.ProcessEnv): Promise<{ code: number; plan: Plan }> {
  const run = await cli(['plan', '--specs', specs, '--format', 'json'], env);
  if (run.code === 1) throw new Error(`plan failed: ${run.stdout}${run.stderr}`);
  return { code: run.code, plan: parsePlanJson(run.stdout) };
}

/** The plan shows each guest's adoption and nothing else: the owner tag is the only change. */
function expectOnlyAdoptions(plan: Plan, adopted: number, owned = 0): void {
  expect(plan.errors).toEqual([]);
  expect(plan.guests.filter((g) => g.errors.length > 0).map((g) => `${g.key}: ${g.errors.join('; ')}`)).toEqual([]);
  const changed = plan.guests.filter((g) => g.changes.some((c) => c.key !== 'tags'));
  expect(changed.map((g) => `${g.key}: ${g.changes.map((c) => `${c.key} ${c.from} → ${c.to}`).join(', ')}`)).toEqual([]);
  // A pool and its members as they are: their items change nothing either.
  expect(plan.objects.filter((o) => o.action !== 'noop').map((o) => `${o.key}: ${o.action} ${o.errors.join('; ')}`)).toEqual([]);
  expect(plan.summary).toMatchObject({ create: 0, destroy: 0, error: 0, orphan: 0, update: adopted, noop: owned + plan.objects.length });
  expect(plan.guests.filter((g) => g.adopt === true)).toHaveLength(adopted);
  for (const guest of plan.guests.filter((g) => g.adopt)) {
    expect(guest.operations).toHaveLength(1);
    expect(guest.changes.map((c) => c.key)).toEqual(['tags']);
    expect(guest.changes[0]?.to?.split(';')).toContain('pve-gitops');
  }
}

/** The lab demo guests that already carry the owner tag (web-01 and the template): owned, nothing to adopt. */
const LAB_OWNED = labFixture.guests.filter((g) => String(g.config.tags ?? '').includes('pve-gitops')).length;

let dir: string;
const started: RunningSimulator[] = [];

async function simulate(options: Parameters<typeof startSimulator>[0]): Promise<RunningSimulator> {
  const sim = await startSimulator({ port: 0, taskMs: 1, ...options });
  started.push(sim);
  return sim;
}

function connection(name: string, sim: RunningSimulator, readToken = sim.auditToken): NodeJS.ProcessEnv {
  const prefix = `PVE_CLUSTER_${name.toUpperCase()}_`;
  return { [`${prefix}URL`]: sim.url, [`${prefix}TOKEN`]: sim.token, [`${prefix}READ_TOKEN`]: readToken, [`${prefix}ALLOW_HTTP`]: '1' };
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-import-'));
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((sim) => sim.close()));
  await rm(dir, { recursive: true, force: true });
});

describe('pve-gitops import on the demo clusters', () => {
  async function demo(): Promise<{ env: NodeJS.ProcessEnv; lab: RunningSimulator; prod: RunningSimulator }> {
    const lab = await simulate({ nodes: ['pve-01', 'pve-02'], fixture: labFixture as SimFixture, clusterName: 'lab' });
    const prod = await simulate({ nodes: ['pve-11', 'pve-12'], fixture: prodFixture as SimFixture, clusterName: 'prod' });
    return { env: { ...connection('lab', lab), ...connection('prod', prod) }, lab, prod };
  }

  it('writes one adopting spec per guest and a Cluster document per cluster; plan shows only adoptions, and nothing after the apply', async () => {
    const { env } = await demo();
    const run = await cli(['import', '--out', 'specs'], env);
    expect(run.code).toBe(0);
    const guests = labFixture.guests.length + prodFixture.guests.length;
    expect(run.stdout).toContain(`${guests} guests imported into ${guests + 2} files, 0 skipped (already in the specs), 0 refused`);
    expect(run.stdout).toMatch(/^wrote specs\/cluster-lab\.yaml: the Cluster document$/m);
    expect(run.stdout).toMatch(/^wrote specs\/lab\/ops-jumphost\.yaml: ops-jumphost \(VMID 100\) — 3 keys left out$/m);
    const files = await tree(join(dir, 'specs'));
    expect(Object.keys(files)).toHaveLength(guests + 2);
    const jumphost = files['lab/ops-jumphost.yaml'] ?? '';
    expect(jumphost).toMatch(/^kind: VM\nname: ops-jumphost\ncluster: lab\nnode: pve-01\nvmid: 100\nadopt: true\nconfig:\n/m);
    expect(jumphost).toContain('  smbios1: Proxmox generates it');
    expect(jumphost).toContain('  tags: [ops]');
    expect(jumphost).not.toMatch(/^ {2}(meta|smbios1|vmgenid|digest):/m);
    expect(files['cluster-lab.yaml']).toMatch(
      /^kind: Cluster\nname: lab\nvmids: \{lower: 100, upper: 109100\}\nownerTag: pve-gitops\nnodes: \[pve-01, pve-02\]\n/m,
    );

    expect((await cli(['validate', '--specs', 'specs'], env)).code).toBe(0);
    // Guests that already carry the owner tag (prod's legacy-app-01) are owned: nothing to adopt.
    const owned = [...labFixture.guests, ...prodFixture.guests].filter((g) => String(g.config.tags ?? '').includes('pve-gitops')).length;
    expect(owned).toBeGreaterThan(0);
    const before = await planJson(join(dir, 'specs'), env);
    expect(before.code).toBe(2);
    expectOnlyAdoptions(before.plan, guests - owned, owned);

    const apply = await cli(['apply', '--specs', 'specs', '--yes'], env);
    expect(apply.code).toBe(0);
    const after = await planJson(join(dir, 'specs'), env);
    expect(after.code).toBe(0);
    expect(after.plan.summary).toMatchObject({ create: 0, update: 0, destroy: 0, error: 0, noop: guests });
  });

  it('gives the same bytes for the same clusters, skips what the specs describe, and overwrites only with --force', async () => {
    const { env } = await demo();
    expect((await cli(['import', '--out', 'a'], env)).code).toBe(0);
    expect((await cli(['import', '--out', 'b'], env)).code).toBe(0);
    const a = await tree(join(dir, 'a'));
    expect(await tree(join(dir, 'b'))).toEqual(a);

    const again = await cli(['import', '--out', 'a'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^skipped lab 100 ops-jumphost: already described by lab\/ops-jumphost\.yaml$/m);
    expect(again.stdout).toContain('0 guests imported into 0 files');

    // Specs from elsewhere say nothing of these guests: every file exists, and nothing is written.
    await writeFile(join(dir, 'a', 'lab', 'ops-jumphost.yaml'), '# edited by hand\n');
    const empty = join(dir, 'empty');
    await rm(empty, { recursive: true, force: true });
    await cli(['import', '--out', 'empty', '--cluster', 'prod'], env);
    const refused = await cli(['import', '--out', 'a', '--specs', 'empty', '--cluster', 'lab'], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^refused a\/lab\/ops-jumphost\.yaml: the file exists \(--force overwrites it\)$/m);
    expect(refused.stderr).toMatch(/nothing was written: \d+ files would be overwritten/);
    expect(await readFile(join(dir, 'a', 'lab', 'ops-jumphost.yaml'), 'utf8')).toBe('# edited by hand\n');
    const forced = await cli(['import', '--out', 'a', '--specs', 'empty', '--cluster', 'lab', '--force'], env);
    expect(forced.code).toBe(0);
    expect(await readFile(join(dir, 'a', 'lab', 'ops-jumphost.yaml'), 'utf8')).toBe(a['lab/ops-jumphost.yaml']);
  });

  it('filters by cluster, VMID range, node, tag and pool, and groups per cluster or pool', async () => {
    const { env, prod } = await demo();
    prod.sim.addToPool('web', 200301);
    prod.sim.addToPool('web', 200901);
    const byRange = await cli(['import', '--out', 'range', '--cluster', 'lab', '--vmid', '100-101'], env);
    expect(byRange.code).toBe(0);
    expect(Object.keys(await tree(join(dir, 'range'))).sort()).toEqual(['cluster-lab.yaml', 'lab/ops-jumphost.yaml', 'lab/pihole.yaml']);
    const byNode = await cli(['import', '--out', 'node', '--cluster', 'lab', '--node', 'pve-02', '--tag', 'dns'], env);
    expect(Object.keys(await tree(join(dir, 'node'))).sort()).toEqual(['cluster-lab.yaml', 'lab/pihole.yaml']);
    expect(byNode.code).toBe(0);

    const byPool = await cli(['import', '--out', 'pool', '--pool', 'web'], env);
    expect(byPool.code).toBe(0);
    expect(Object.keys(await tree(join(dir, 'pool'))).sort()).toEqual([
      'cluster-prod.yaml',
      'pools-prod.yaml',
      'prod/legacy-app-01.yaml',
      'prod/proxy-01.yaml',
    ]);
    const member = await readFile(join(dir, 'pool', 'prod', 'proxy-01.yaml'), 'utf8');
    expect(member).toMatch(/^# Member of pool web: /m);
    expect(member).toMatch(/^adopt: true\npool: web\nconfig:$/m);
    expect(await readFile(join(dir, 'pool', 'pools-prod.yaml'), 'utf8')).toMatch(/^kind: Pool\nname: web\ncluster: prod\n/m);
    // The pool and its members as they are: the plan adds the owner tag to the unowned one, nothing else.
    expectOnlyAdoptions((await planJson(join(dir, 'pool'), env)).plan, 1, 1);

    expect((await cli(['import', '--out', 'grouped', '--group', 'cluster'], env)).code).toBe(0);
    const grouped = await tree(join(dir, 'grouped'));
    expect(Object.keys(grouped).sort()).toEqual([
      'cluster-lab.yaml',
      'cluster-prod.yaml',
      'lab/guests.yaml',
      'pools-prod.yaml',
      'prod/guests.yaml',
    ]);
    expect(grouped['lab/guests.yaml']?.split(/^---$/m)).toHaveLength(labFixture.guests.length);
    expect((await cli(['import', '--out', 'by-pool', '--group', 'pool', '--cluster', 'prod'], env)).code).toBe(0);
    expect(Object.keys(await tree(join(dir, 'by-pool'))).sort()).toEqual([
      'cluster-prod.yaml',
      'pools-prod.yaml',
      'prod/no-pool.yaml',
      'prod/pool-web.yaml',
    ]);
    expect((await cli(['validate', '--specs', 'by-pool'], env)).code).toBe(0);
  });

  it("writes a guest's HA resource as ha:, which the plan leaves as it is", async () => {
    const { env, lab } = await demo();
    const created = await api(lab, 'POST', '/cluster/ha/resources', { form: { sid: 'vm:100', max_restart: '2', comment: 'jump host' } });
    expect(created.status).toBe(200);
    expect((await cli(['import', '--out', 'specs', '--cluster', 'lab'], env)).code).toBe(0);
    const text = await readFile(join(dir, 'specs', 'lab', 'ops-jumphost.yaml'), 'utf8');
    expect(text).toMatch(/^adopt: true\nha: \{.*max_restart: 2.*\}\nconfig:$/m);
    expect(text).toMatch(/^# HA-managed: /m);
    expect(await readFile(join(dir, 'specs', 'lab', 'pihole.yaml'), 'utf8')).not.toMatch(/^ha:/m);
    const { plan } = await planJson(join(dir, 'specs'), env);
    expect(plan.objects.map((o) => [o.key, o.action])).toEqual([['lab/ha/100', 'noop']]);
    expectOnlyAdoptions(plan, labFixture.guests.length - LAB_OWNED, LAB_OWNED);
  });

  it("writes a guest's firewall file as firewall: in the form the firewall kind compares; the plan leaves it as it is", async () => {
    const { env, lab } = await demo();
    const fw = '/nodes/pve-01/qemu/100/firewall';
    const ct = '/nodes/pve-02/lxc/101/firewall';
    const calls: [string, Record<string, string>][] = [
      [`PUT ${fw}/options`, { enable: '1', policy_in: 'DROP', log_level_in: 'info' }],
      [`POST ${fw}/aliases`, { name: 'Bastion', cidr: '10.1.0.5/32', comment: 'jump host' }],
      [`POST ${fw}/ipset`, { name: 'admins', comment: 'the admins' }],
      [`POST ${fw}/ipset/admins`, { cidr: '10.0.0.0/24' }],
      [`POST ${fw}/ipset/admins`, { cidr: '10.0.9.9', nomatch: '1', comment: 'not this one' }],
      // POST rules inserts at position 0: the last posted is the first rule.
      [`POST ${fw}/rules`, { type: 'out', action: 'DROP', enable: '0', proto: 'udp', dport: '5000:5100' }],
      [`POST ${fw}/rules`, { type: 'in', action: 'ACCEPT', enable: '1', macro: 'HTTPS', iface: 'net0' }],
      [`POST ${fw}/rules`, { type: 'in', action: 'ACCEPT', enable: '1', proto: 'tcp', dport: '22', source: '+admins', comment: 'ssh' }],
      [`POST ${ct}/rules`, { type: 'in', action: 'ACCEPT', enable: '1', proto: 'udp', dport: '53' }],
    ];
    for (const [call, form] of calls) {
      const [method, path] = call.split(' ') as ['PUT' | 'POST', string];
      expect((await api(lab, method, path, { form })).status, call).toBe(200);
    }
    expect((await cli(['import', '--out', 'specs', '--cluster', 'lab'], env)).code).toBe(0);
    const text = await readFile(join(dir, 'specs', 'lab', 'ops-jumphost.yaml'), 'utf8');
    expect(text).toMatch(/^# Firewall: firewall: keeps its options, aliases, ipsets, rules as they are/m);
    expect(text).toContain(
      [
        'adopt: true',
        'firewall:',
        '  options: {enable: true, policy_in: DROP, log_level_in: info}',
        '  aliases:',
        '    Bastion: {cidr: 10.1.0.5, comment: jump host}',
        '  ipsets:',
        '    admins: {comment: the admins, entries: [10.0.0.0/24, {cidr: 10.0.9.9, nomatch: true, comment: not this one}]}',
        '  rules:',
        '    - {type: in, action: ACCEPT, source: +admins, proto: tcp, dport: 22, comment: ssh}',
        '    - {type: in, action: ACCEPT, macro: HTTPS, iface: net0}',
        '    - {type: out, action: DROP, enable: false, proto: udp, dport: 5000:5100}',
        'config:',
      ].join('\n'),
    );
    expect(await readFile(join(dir, 'specs', 'lab', 'pihole.yaml'), 'utf8')).toMatch(
      /^firewall:\n {2}rules:\n {4}- \{type: in, action: ACCEPT, proto: udp, dport: 53\}\nconfig:$/m,
    );
    // A guest without a firewall file gets no firewall: at all.
    expect(await readFile(join(dir, 'specs', 'lab', 'web-01.yaml'), 'utf8')).not.toMatch(/^firewall:/m);
    expect((await cli(['validate', '--specs', 'specs'], env)).code).toBe(0);
    const { plan } = await planJson(join(dir, 'specs'), env);
    expect(plan.objects.map((o) => [o.key, o.action])).toEqual([
      ['lab/firewall/100', 'noop'],
      ['lab/firewall/101', 'noop'],
    ]);
    expectOnlyAdoptions(plan, labFixture.guests.length - LAB_OWNED, LAB_OWNED);
    // --no-firewall spares the reads: no guest says firewall:, so the firewall is left alone.
    expect((await cli(['import', '--out', 'plain', '--cluster', 'lab', '--no-firewall'], env)).code).toBe(0);
    expect(await readFile(join(dir, 'plain', 'lab', 'ops-jumphost.yaml'), 'utf8')).not.toMatch(/^firewall:/m);
  });

  it('writes the backup jobs it can describe as kind: BackupJob documents, and says why not the others', async () => {
    const { env, lab } = await demo();
    const job = (form: Record<string, string>) => api(lab, 'POST', '/cluster/backup', { form });
    expect(
      (
        await job({
          id: 'nightly',
          schedule: '01:00',
          storage: 'local',
          vmid: '101,100',
          'prune-backups': 'keep-last=3,keep-weekly=2',
          comment: 'every night',
        })
      ).status,
    ).toBe(200);
    expect((await job({ id: 'weekly', schedule: 'sun 02:00', all: '1', exclude: '101', enabled: '0' })).status).toBe(200);
    const run = await cli(['import', '--out', 'specs', '--cluster', 'lab'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^note lab: backup job weekly not imported: it excludes guests \(exclude\)/m);
    expect(await readFile(join(dir, 'specs', 'backup-jobs-lab.yaml'), 'utf8')).toBe(
      [
        '# Written by `pve-gitops import`: the backup jobs of cluster lab, as they are.',
        'kind: BackupJob',
        'name: nightly',
        'cluster: lab',
        'schedule: 01:00',
        'storage: local',
        'retention: {keep-last: 3, keep-weekly: 2}',
        'comment: every night',
        'guests: [ops-jumphost, pihole]',
        '',
      ].join('\n'),
    );
    const { plan } = await planJson(join(dir, 'specs'), env);
    expect(plan.objects.map((o) => [o.key, o.action])).toEqual([['lab/backup-job/nightly', 'noop']]);
    expectOnlyAdoptions(plan, labFixture.guests.length - LAB_OWNED, LAB_OWNED);
    // A filtered import is about guests: it leaves the cluster's jobs alone.
    expect((await cli(['import', '--out', 'some', '--cluster', 'lab', '--vmid', '100'], env)).code).toBe(0);
    expect(Object.keys(await tree(join(dir, 'some')))).not.toContain('backup-jobs-lab.yaml');
  });

  it('reports a guest whose read fails instead of guessing it, and writes the others (exit 2)', async () => {
    const { env, lab } = await demo();
    const faulty = await failingReads(lab, /^\/api2\/json\/nodes\/[^/]+\/lxc\/101(\/|$)/);
    try {
      const run = await cli(['import', '--out', 'specs', '--cluster', 'lab'], { ...env, PVE_CLUSTER_LAB_URL: faulty.url });
      expect(run.code).toBe(2);
      expect(run.stdout).toMatch(/^refused lab 101 pihole: could not be read, so nothing is guessed: .*got timeout/m);
      const files = Object.keys(await tree(join(dir, 'specs')));
      expect(files).toContain('lab/ops-jumphost.yaml');
      expect(files).not.toContain('lab/pihole.yaml');
    } finally {
      await faulty.close();
    }
  });

  it('says what is wrong with its flags', async () => {
    const { env } = await demo();
    expect((await cli(['import'], env)).stderr).toMatch(/--out DIR is required/);
    expect((await cli(['import', '--out', 'x', '--vmid', '9-1'], env)).stderr).toMatch(
      /--vmid must be a VMID or a range LOW-HIGH, got '9-1'/,
    );
    expect((await cli(['import', '--out', 'x', '--group', 'team'], env)).stderr).toMatch(/--group must be one of guest, cluster, pool/);
    const unknown = await cli(['import', '--out', 'x', '--cluster', 'staging'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no connection configured for staging \(configured: lab, prod\)/);
    expect((await cli(['import', '--out', 'x'], {})).stderr).toMatch(/no cluster connection is configured/);
  });
});

describe('pve-gitops import of a generated estate of 1,000 guests', () => {
  const GUESTS = 1000;

  it('imports every guest the token sees, with notes; plan shows 999 adoptions and nothing after the apply', async () => {
    const sim = await simulate({ nodes: undefined, fixture: unmanagedEstateFixture(GUESTS), clusterName: 'estate' });
    const env = connection('estate', sim, estateReadToken(GUESTS).token);
    const indexes = Array.from({ length: GUESTS }, (_, i) => i);
    const withFirewall = indexes.filter(hasFirewall);
    for (const call of withFirewall.flatMap(estateFirewallCalls))
      expect((await api(sim, call.method, call.path, { form: call.form })).status, `${call.method} ${call.path}`).toBe(200);
    // Some VMs are HA-managed, and one backup job selects three guests.
    const withHa = indexes.filter((i) => i % 100 === 8);
    for (const i of withHa)
      expect((await api(sim, 'POST', '/cluster/ha/resources', { form: { sid: `vm:${vmidOf(i)}`, max_restart: '2' } })).status).toBe(200);
    const job = { id: 'estate-nightly', schedule: '02:00', storage: 'local', vmid: [21, 22, 23].map(vmidOf).join(',') };
    expect((await api(sim, 'POST', '/cluster/backup', { form: job })).status).toBe(200);
    const run = await cli(['import', '--out', 'specs'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`${GUESTS - 1} guests imported into ${GUESTS + 2} files, 0 skipped (already in the specs), 0 refused`);
    expect(run.stdout).toMatch(/^wrote specs\/backup-jobs-estate\.yaml: the backup jobs \(kind: BackupJob\)$/m);
    expect(run.stdout).toMatch(/^wrote specs\/pools-estate\.yaml: the pools \(kind: Pool\)$/m);
    const files = await tree(join(dir, 'specs'));
    expect(files[`estate/vm-${SPECIAL.hidden}.yaml`]).toBeUndefined();
    expect(files['pools-estate.yaml']).toBe(
      '# Written by `pve-gitops import`: the pools of cluster estate that imported guests are members of.\nkind: Pool\nname: web\ncluster: estate\ncomment: Web servers\n',
    );
    expect(files['estate/vm-2.yaml']).toMatch(/^adopt: true\npool: web\nconfig:$/m);
    expect(files[`estate/vm-${SPECIAL.locked}.yaml`]).toMatch(/^# Locked \(backup\) when it was read/m);
    expect(files[`estate/vm-${SPECIAL.args}.yaml`]).toMatch(/^# {3}args: passes raw arguments to the QEMU process on the host/m);
    expect(files[`estate/ct-${SPECIAL.privileged}.yaml`]).toMatch(/^# {3}unprivileged is not set: runs the container privileged/m);
    const withPassword = files['estate/vm-1.yaml'] ?? '';
    expect(withPassword).toMatch(/^# {3}cipassword: a secret/m);
    expect(withPassword).not.toMatch(/cipassword:.*\*|\$5\$/);
    expect(withPassword).toContain(`  sshkeys:\n    - ssh-ed25519 AAAAC3`);
    expect(withFirewall.length).toBeGreaterThan(10);
    for (const i of indexes) {
      const text = files[`estate/${isContainer(i) ? 'ct' : 'vm'}-${i}.yaml`];
      if (text === undefined) continue;
      if (!hasFirewall(i)) {
        expect(text, `guest ${i}`).not.toMatch(/^firewall:/m);
        continue;
      }
      expect(text, `guest ${i}`).toContain(
        `firewall:\n  options: {enable: true, policy_in: ${i % 100 === 6 ? 'DROP' : 'REJECT'}}\n` +
          (i % 100 === 56
            ? '  aliases:\n    monitor: 10.20.0.9\n  ipsets:\n    office: {comment: the office, entries: [192.0.2.0/24]}\n'
            : '') +
          '  rules:\n    - {type: in, action: ACCEPT, proto: tcp, dport: 22, comment: ssh}\n    - {type: in, action: ACCEPT, macro: HTTPS}\n',
      );
    }
    const pending = Array.from({ length: GUESTS }, (_, i) => i).filter((i) => hasPending(i) && i !== SPECIAL.hidden);
    for (const i of pending) {
      const text = files[`estate/${isContainer(i) ? 'ct' : 'vm'}-${i}.yaml`] ?? '';
      expect(text).toMatch(/^# Pending: .*memory/m);
      expect(text).toMatch(isContainer(i) ? /^ {2}memory: 4096$/m : new RegExp(`^  memory: ${4096 * (1 + (i % 4))}$`, 'm'));
    }
    expect(files['cluster-estate.yaml']).toMatch(
      /vmids: \{lower: 1000, upper: 2000\}\nownerTag: pve-gitops\nnodes: \[pve-01, pve-02, pve-03, pve-04, pve-05\]\nstorages: \[ceph-vm, local-lvm\]\nbridges: \[vmbr0, vmbr1\]\n/,
    );

    const before = await planJson(join(dir, 'specs'), env);
    expect(before.code).toBe(2);
    expectOnlyAdoptions(before.plan, GUESTS - 1);
    const itemsOf = (kind: string) => before.plan.objects.filter((o) => o.kind === kind).map((o) => [o.key, o.action]);
    expect(itemsOf('ha').sort()).toEqual(withHa.map((i) => [`estate/ha/${vmidOf(i)}`, 'noop']).sort());
    expect(itemsOf('backup-job')).toEqual([['estate/backup-job/estate-nightly', 'noop']]);
    expect(files['backup-jobs-estate.yaml']).toMatch(/^guests: \[vm-21, vm-22, vm-23\]$/m);
    const firewallItems = before.plan.objects.filter((o) => o.kind === 'firewall');
    expect(firewallItems.map((o) => [o.key, o.action]).sort()).toEqual(
      withFirewall.map((i) => [`estate/firewall/${vmidOf(i)}`, 'noop']).sort(),
    );
    expect(before.plan.guests.find((g) => g.vmid === vmidOf(SPECIAL.locked))?.warnings.join('\n')).toMatch(/locked \(backup\)/);

    // The backup ends; the apply adopts every guest.
    await sim.sim.holdLock(vmidOf(SPECIAL.locked), 'backup', 1);
    const apply = await cli(['apply', '--specs', 'specs', '--yes'], env);
    expect(apply.code).toBe(0);
    const after = await planJson(join(dir, 'specs'), env);
    expect(after.code).toBe(0);
    expect(after.plan.objects.length).toBe(indexes.filter(inWebPool).length + 1 + withFirewall.length + withHa.length + 1);
    expect(after.plan.summary).toMatchObject({ create: 0, update: 0, destroy: 0, error: 0, noop: GUESTS - 1 + after.plan.objects.length });
    expect(sim.sim.getGuest(vmidOf(SPECIAL.hidden))?.rawConfig).not.toMatch(/pve-gitops/);
  }, 240_000);
});
