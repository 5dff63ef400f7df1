/**
 * `pve-gitops plan --rehearse`: the plan's apply run on a simulated copy of the cluster. A change
 * real Proxmox refuses at apply time (a disk on a storage without `images`, more vCPUs than the
 * node has) is reported with Proxmox's error text and exit 1; a clean change passes with the
 * plan's own exit code; the cluster itself is never written.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import labFixture from '../../src/demo/lab-fixture.json' with { type: 'json' };
import prodFixture from '../../src/demo/prod-fixture.json' with { type: 'json' };
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';
import { startClusters } from '../app/clusters.js';
import { SPECS_EXAMPLE } from '../engine/helpers.js';
import { type Run, cli as runCli } from './run-cli.js';

let dir: string;
let lab: RunningSimulator;
let env: NodeJS.ProcessEnv;

function cli(args: string[]): Promise<Run> {
  return runCli(args, env, dir);
}

const CLUSTER = `kind: Cluster
name: lab
vmids: { lower: 1000, upper: 2000 }
nodes: [pve-01]
`;

function vm(config: string): string {
  return `kind: VM
name: app-01
cluster: lab
node: pve-01
vmid: 1001
power: running
config:
  memory: 2048
${config}`;
}

async function specs(body: string): Promise<string> {
  const specsDir = join(dir, 'specs');
  await mkdir(specsDir, { recursive: true });
  await writeFile(join(specsDir, 'clusters.yaml'), CLUSTER);
  await writeFile(join(specsDir, 'app.yaml'), body);
  return specsDir;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-rehearse-'));
  lab = await startSimulator({
    port: 0,
    taskMs: 5,
    fixture: {
      nodes: ['pve-01'],
      nodeCpus: { 'pve-01': 8 },
      storages: ['local-lvm', { storage: 'local', type: 'dir', content: ['iso', 'vztmpl', 'backup', 'snippets'] }],
    },
  });
  env = {
    PVE_CLUSTER_LAB_URL: lab.url,
    PVE_CLUSTER_LAB_TOKEN: lab.token,
    PVE_CLUSTER_LAB_READ_TOKEN: lab.auditToken,
    PVE_CLUSTER_LAB_ALLOW_HTTP: '1',
  };
});

afterEach(async () => {
  await lab.close();
  await rm(dir, { recursive: true, force: true });
});

describe('pve-gitops plan --rehearse', () => {
  it('passes a change Proxmox accepts, with the plan’s exit code, and writes nothing to the cluster', async () => {
    const dirOf = await specs(vm('  cores: 4\n  scsi0: local-lvm:8\n'));
    lab.sim.resetStats();
    const run = await cli(['plan', '--specs', dirOf, '--rehearse']);
    expect(run.stderr).not.toMatch(/refused/);
    expect(run.stdout).toContain('Rehearsal: 1 of 1 guest applied on a simulated copy');
    expect(run.stdout).toContain('a model, not a guarantee');
    expect(run.code).toBe(2);
    expect(lab.sim.stats().writes.total).toBe(0);
    expect(lab.sim.guests.has(1001)).toBe(false);
  });

  it.each([
    ['a disk on a storage without the images content type', '  scsi0: local:8\n', "storage 'local' does not support vm images"],
    ['more vCPUs than the node has', '  cores: 16\n  scsi0: local-lvm:8\n', 'MAX 8 vcpus allowed per VM on this node'],
  ])('refuses %s with Proxmox’s error text and exit 1', async (_what, config, error) => {
    const dirOf = await specs(vm(config));
    const run = await cli(['plan', '--specs', dirOf, '--rehearse']);
    expect(run.stdout).toContain('Rehearsal: 0 of 1 guest applied on a simulated copy');
    expect(run.stdout).toContain(`lab/app-01 (1001)`);
    expect(run.stdout).toContain(error);
    expect(run.code).toBe(1);
    expect(lab.sim.guests.has(1001)).toBe(false);
  });

  it('refuses an object of another kind too: a firewall rule naming an IPset neither the guest nor the datacenter has', async () => {
    const dirOf = await specs(
      `${vm('  scsi0: local-lvm:8\n')}firewall:\n  rules:\n    - { type: in, action: ACCEPT, source: +admins, proto: tcp, dport: 22 }\n`,
    );
    const run = await cli(['plan', '--specs', dirOf, '--rehearse']);
    expect(run.stdout).toContain('Rehearsal: 1 of 1 guest and 0 of 1 other object applied on a simulated copy');
    expect(run.stdout).toContain(
      "✗ lab/firewall of app-01 (1001): add-fw-rule refused — Parameter verification failed. (source: no such ipset 'admins')",
    );
    expect(run.code).toBe(1);
    expect(lab.sim.guests.has(1001)).toBe(false);
  });

  it('keeps the rehearsal with a plan written to a file: the markdown has the App comment’s section', async () => {
    const dirOf = await specs(vm('  scsi0: local:8\n'));
    const run = await cli(['plan', '--specs', dirOf, '--format', 'markdown', '--out', 'plan.md', '--rehearse']);
    expect(run.code).toBe(1);
    const written = await readFile(join(dir, 'plan.md'), 'utf8');
    const section = written.slice(written.indexOf('### ❌ Rehearsal: 0 of 1 guest applied on a simulated copy'));
    expect(section).toContain('| lab/app-01 (1001) |');
    expect(section).toContain("storage 'local' does not support vm images");
    expect(section).toContain('a model, not a guarantee');
  });

  it('without --rehearse plans as before: the refused change is exit 2 and no rehearsal line', async () => {
    const dirOf = await specs(vm('  scsi0: local:8\n'));
    const run = await cli(['plan', '--specs', dirOf]);
    expect(run.code).toBe(2);
    expect(run.stdout).not.toContain('Rehearsal:');
  });
});

describe('on the demo clusters', () => {
  it('rehearses the example specs clean: every guest the demo applies would apply', async () => {
    const demo = await startClusters({
      lab: { nodes: ['pve-01', 'pve-02'], taskMs: 2, fixture: labFixture as SimFixture },
      prod: { nodes: ['pve-11', 'pve-12'], taskMs: 2, fixture: prodFixture as SimFixture },
    });
    const writes = (): number => Object.values(demo.sims).reduce((sum, sim) => sum + sim.sim.stats().writes.total, 0);
    try {
      const before = writes();
      const run = await runCli(['plan', '--specs', SPECS_EXAMPLE, '--rehearse'], demo.env, dir);
      expect(run.code, run.stdout + run.stderr).toBe(2);
      const line = /Rehearsal: (\d+) of (\d+) guests applied on a simulated copy/.exec(run.stdout);
      expect(line, run.stdout).not.toBeNull();
      expect(Number(line?.[1])).toBeGreaterThan(0);
      expect(line?.[1]).toBe(line?.[2]);
      expect(writes()).toBe(before);
    } finally {
      await demo.close();
    }
  });
});
