import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';
import { parsePlanJson } from '../../src/core/render/render-json.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { SPECS_EXAMPLE } from '../engine/helpers.js';
import { type CliClusters, startExampleClusters } from './clusters.js';
import { api } from '../sim/helpers.js';

let dir: string;
let specs: string;
let lab: RunningSimulator;
let env: NodeJS.ProcessEnv;
let clusters: CliClusters<'lab' | 'prod'>;

// Each test: its own simulated clusters, the example estate applied to them, its own copy of the specs.
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-adopt-'));
  specs = join(dir, 'specs');
  await cp(SPECS_EXAMPLE, specs, { recursive: true });
  clusters = await startExampleClusters();
  ({ lab, env } = clusters);
  const applied = await cli(['apply', '--specs', specs, '--yes'], env);
  expect(applied.code).toBe(0);
});

afterEach(async () => {
  await clusters.close();
  await rm(dir, { recursive: true, force: true });
});

/** The keys the plan would change, per guest name. */
async function planned(): Promise<Record<string, string[]>> {
  const run = await cli(['plan', '--specs', specs, '--format', 'json'], env);
  const plan = parsePlanJson(run.stdout);
  return Object.fromEntries(plan.guests.filter((g) => g.changes.length > 0).map((g) => [g.name, g.changes.map((c) => c.key).sort()]));
}

describe('pve-gitops adopt', () => {
  it('writes every drifted value into the spec files with comments kept, and the plan then shows no change', async () => {
    // Someone edits web-01 in the Proxmox UI: more cores, the NIC's firewall off, a tag, a new key, a key deleted.
    lab.sim.operatorEdit(100101, {
      set: { cores: '4', net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=0', tags: 'blue;env-lab;pve-gitops;web', balloon: '1024' },
      delete: ['searchdomain'],
    });
    lab.sim.operatorEdit(100102, { set: { cpulimit: '2' } });
    const before = await readFile(join(specs, 'lab/web.yaml'), 'utf8');
    expect(await planned()).toEqual({ 'web-01': ['balloon', 'cores', 'net0', 'searchdomain', 'tags'], 'web-02': ['cpulimit'] });

    const dry = await cli(['adopt', '--specs', specs, '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('lab/web-01 (lab/web.yaml)');
    expect(dry.stdout).toContain('  cores: 2 → 4');
    expect(dry.stdout).toContain('  searchdomain: lab.example.net → (removed)');
    expect(dry.stdout).toMatch(/Adopt would take 6 values into 1 spec file\./);
    expect(dry.stderr).toContain('dry run: no file was written');
    expect(await readFile(join(specs, 'lab/web.yaml'), 'utf8')).toBe(before);

    const run = await cli(['adopt', '--specs', specs], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Adopt took 6 values into 1 spec file\./);
    const after = await readFile(join(specs, 'lab/web.yaml'), 'utf8');
    // In place: the comments and the layout stay, the values are in the spec's own forms.
    expect(after).toContain('name: web-01             # a DNS name, unique per cluster; the guest');
    expect(after).toContain('  # Proxmox option names and values exactly as `qm set` and the API take them.');
    expect(after).toContain('  cores: 4\n');
    expect(after).toContain('  net0: { virtio: BC:24:11:00:00:01, bridge: vmbr0, firewall: 0 }');
    expect(after).toContain('  tags: [blue, env-lab, web]   # lower-cased');
    expect(after).toContain('  balloon: 1024\n');
    expect(after).not.toContain('searchdomain: lab.example.net\n  # One key');
    expect(after).toContain('  cpulimit: 2\n');
    expect(after.split('\n').length).toBe(before.split('\n').length + 1);
    expect(await planned()).toEqual({});
    const drift = await cli(['drift', '--specs', specs], env);
    expect(drift.code).toBe(0);
  });

  it('takes only the guests and keys named, and says what matched nothing', async () => {
    lab.sim.operatorEdit(100101, { set: { cores: '4', memory: '8192' } });
    lab.sim.operatorEdit(100102, { set: { cores: '3' } });
    const run = await cli(['adopt', '--specs', specs, '--guest', 'lab/web-01', '--key', 'cores'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Adopt took 1 value into 1 spec file\./);
    expect(await planned()).toEqual({ 'web-01': ['memory'], 'web-02': ['cores'] });

    const none = await cli(['adopt', '--specs', specs, '--guest', 'lab/nosuch'], env);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain('No finding matched: lab/nosuch');
    expect(none.stdout).toContain('Nothing to adopt.');
  });

  it('writes nothing when the adopted values would make the specs invalid, and says why', async () => {
    // vmbr9 is not among the lab Cluster document's bridges: taken into git, the specs would not load.
    lab.sim.operatorEdit(100101, { set: { cores: '4', net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr9,firewall=1' } });
    const before = await readFile(join(specs, 'lab/web.yaml'), 'utf8');
    const run = await cli(['adopt', '--specs', specs], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('nothing was adopted: the edited specs would not load');
    expect(run.stderr).toMatch(/lab\/web\.yaml:\d+:\d+: .*vmbr9/);
    expect(await readFile(join(specs, 'lab/web.yaml'), 'utf8')).toBe(before);
  });

  it('adopts a power change as the document field, and never writes a secret', async () => {
    lab.sim.setRunning(100102, false);
    // SSH keys are among the sensitive keys (src/core/key-rules.ts): shown nowhere, adopted never.
    lab.sim.operatorEdit(100101, {
      set: { sshkeys: encodeURIComponent('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHunter2 intruder@example.net') },
    });
    const run = await cli(['adopt', '--specs', specs], env);
    expect(run.stdout).toContain('lab/web-02 (lab/web.yaml)\n  power: running → stopped');
    expect(run.stdout).toContain('lab/web-01 sshkeys: sensitive: pve-gitops never writes a sensitive value into the spec files');
    expect(run.stdout).not.toMatch(/Hunter2|intruder/);
    const after = await readFile(join(specs, 'lab/web.yaml'), 'utf8');
    expect(after).not.toMatch(/Hunter2|intruder/);
    expect(after).toMatch(/name: web-02\ncluster: lab\nnode: pve-02\nvmid: 100102\npower: stopped\n/);
    expect(Object.keys(await planned())).not.toContain('web-02');
  });

  it('takes firewall drift into firewall: in place — options, aliases, IPsets, rules — and the plan then shows no firewall change', async () => {
    const firewall = [
      'firewall:',
      "  # the web tier's own rules",
      '  options: { enable: true, policy_in: DROP }   # closed by default',
      '  aliases:',
      '    Bastion: 10.1.0.5   # the jump host',
      '    old: 10.9.0.1',
      '  ipsets:',
      '    admins: [10.0.0.0/24]   # the admins',
      '  rules:',
      '    - { type: in, action: ACCEPT, proto: tcp, dport: 22, source: +admins }',
      '    - { type: in, macro: HTTPS, action: ACCEPT }',
    ].join('\n');
    const path = join(specs, 'lab/web.yaml');
    const original = await readFile(path, 'utf8');
    await writeFile(path, original.replace('power: running           #', `${firewall}\npower: running           #`));
    expect((await cli(['apply', '--specs', specs, '--yes'], env)).code).toBe(0);
    // Someone edits web-01's firewall in the Proxmox UI.
    const fw = '/nodes/pve-01/qemu/100101/firewall';
    const edits: [string, string, Record<string, string>][] = [
      ['PUT', `${fw}/options`, { policy_in: 'REJECT', log_level_in: 'info' }],
      ['PUT', `${fw}/aliases/bastion`, { cidr: '10.1.0.6', comment: 'new jump host' }],
      ['DELETE', `${fw}/aliases/old`, {}],
      ['POST', `${fw}/ipset/admins`, { cidr: '10.0.1.0/24' }],
      ['POST', `${fw}/rules`, { type: 'in', action: 'ACCEPT', enable: '1', proto: 'icmp' }],
    ];
    for (const [method, at, form] of edits) expect((await api(lab, method as 'PUT', at, { form })).status, `${method} ${at}`).toBe(200);
    const before = await readFile(path, 'utf8');
    // `drift` counts the firewall apart from the guests: only an object drifted here.
    const drift = await cli(['drift', '--specs', specs], env);
    expect(drift.code).toBe(2);
    expect(drift.stderr).toMatch(/0 drifted guests, 1 drifted object, /);
    // `firewall.rules` names the rule findings (`firewall.rules (was #1)`: the rule the plan would remove), `firewall.options` each option's.
    const rules = await cli(['adopt', '--specs', specs, '--key', 'firewall.rules', '--dry-run'], env);
    expect(rules.stdout).toContain('  firewall.rules (was #1): (not set) → IN ACCEPT -p icmp');
    expect(rules.stdout).toMatch(/Adopt would take 1 value into 1 spec file\./);
    const options = await cli(['adopt', '--specs', specs, '--key', 'firewall.options', '--dry-run'], env);
    expect(options.stdout).toMatch(/Adopt would take 2 values into 1 spec file\./);

    const run = await cli(['adopt', '--specs', specs], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Adopt took 6 values into 1 spec file\./);
    const after = await readFile(path, 'utf8');
    expect(after).toContain(
      [
        'firewall:',
        "  # the web tier's own rules",
        '  options: { enable: true, policy_in: REJECT, log_level_in: info }   # closed by default',
        '  aliases:',
        '    Bastion: { cidr: 10.1.0.6, comment: new jump host }   # the jump host',
        '  ipsets:',
        '    admins: [10.0.0.0/24, 10.0.1.0/24]   # the admins',
        '  rules:',
        '    - { type: in, action: ACCEPT, proto: icmp }',
        '    - { type: in, action: ACCEPT, source: +admins, proto: tcp, dport: 22 }',
        '    - { type: in, action: ACCEPT, macro: HTTPS }',
        'power: running',
      ].join('\n'),
    );
    expect(after.replace(/^firewall:\n(?: .*\n)*/m, '')).toBe(before.replace(/^firewall:\n(?: .*\n)*/m, ''));
    const plan = parsePlanJson((await cli(['plan', '--specs', specs, '--format', 'json'], env)).stdout);
    expect(plan.objects.filter((o) => o.kind === 'firewall').map((o) => [o.key, o.action])).toEqual([['lab/firewall/100101', 'noop']]);
    expect(await planned()).toEqual({});
  });
});
