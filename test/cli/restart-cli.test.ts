/**
 * The CLI with `restart:` and `dependsOn` over HTTP against the simulator: `validate` names a
 * dependency cycle, `plan` says which guests restart and why, `apply` restarts the guest so its
 * pending value is in effect, and the next plan is empty.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { type CliClusters, startOneNodeLab } from './clusters.js';
import { rawValue } from '../engine/helpers.js';

const CLUSTER = `kind: Cluster
name: lab
vmids: { lower: 100, upper: 1000 }
nodes: [pve-01]
restart: { policy: allowed, timeout: 90 }
`;

const vm = (name: string, vmid: number, extra = ''): string => `kind: VM
name: ${name}
cluster: lab
node: pve-01
vmid: ${vmid}
${extra}config:
  memory: 4096
`;

let dir: string;
let lab: RunningSimulator;
let env: NodeJS.ProcessEnv;
let clusters: CliClusters<'lab'>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-restart-'));
  clusters = await startOneNodeLab({
    storages: ['local-lvm'],
    guests: [
      { vmid: 100, type: 'qemu', node: 'pve-01', running: true, config: 'name: web-01\ntags: pve-gitops\nmemory: 2048\n' },
      { vmid: 101, type: 'qemu', node: 'pve-01', running: true, config: 'name: db-01\ntags: pve-gitops\nmemory: 4096\n' },
    ],
  });
  ({ lab, env } = clusters);
  await writeFile(join(dir, 'clusters.yaml'), CLUSTER);
});
afterEach(async () => {
  await clusters.close();
  await rm(dir, { recursive: true, force: true });
});

describe('restart and dependsOn from the command line', () => {
  it('validate names a dependsOn cycle', async () => {
    await writeFile(join(dir, 'web.yaml'), vm('web-01', 100, 'dependsOn: [db-01]\n'));
    await writeFile(join(dir, 'db.yaml'), vm('db-01', 101, 'dependsOn: [web-01]\n'));
    const run = await cli(['validate', '--specs', dir]);
    expect(run.code).toBe(1);
    expect(`${run.stdout}${run.stderr}`).toMatch(/dependsOn cycle: db-01 → web-01 → db-01; no guest of it could ever apply/);
  });

  it('plan says which guest restarts and why; apply restarts it and the pending value takes effect', async () => {
    await writeFile(join(dir, 'web.yaml'), vm('web-01', 100, 'dependsOn: [db-01]\n'));
    await writeFile(join(dir, 'db.yaml'), vm('db-01', 101));
    const plan = await cli(['plan', '--specs', dir], env);
    expect(plan.code).toBe(2);
    expect(plan.stdout).toContain(
      'note: restarts after the apply: memory takes effect only after a restart (restart: allowed); clean shutdown within 90 s, no hard stop (force: false); at most 1 restart(s) at once on lab',
    );
    expect(plan.stdout).toContain('note: applies after lab/101 (dependsOn)');
    const markdown = await cli(['plan', '--specs', dir, '--format', 'markdown'], env);
    expect(markdown.stdout).toContain('### 🔁 Restarts: 1 guest will restart on apply');

    const out = join(dir, 'result.json');
    const apply = await cli(['apply', '--specs', dir, '--yes', '--format', 'json', '--out', out], env);
    expect(apply.code).toBe(0);
    const result = JSON.parse(await readFile(out, 'utf8')) as {
      guests: { vmid: number; status: string; steps: { op: string }[]; pending?: string[] }[];
    };
    const web = result.guests.find((g) => g.vmid === 100);
    expect(web?.steps.map((s) => s.op)).toEqual(['config', 'shutdown', 'start', 'restarted']);
    expect(web?.pending).toBeUndefined();
    expect(rawValue(lab, 100, 'memory')).toBe('4096');

    const again = await cli(['plan', '--specs', dir], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/No changes\./);
  });
});
