/**
 * The CLI with apply windows over HTTP against the simulator, on an injected clock: `plan` says
 * when a guest may apply; `apply` outside the window holds the guest (skipped, nothing written,
 * saying when the window opens); `apply --now` applies it but leaves a `restart: in-window`
 * restart undone; `apply` inside the window applies and restarts.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { type CliClusters, startOneNodeLab } from './clusters.js';
import { rawValue } from '../engine/helpers.js';
import { type Run, cli as runCli } from './run-cli.js';

/** `pve-gitops <args>` at `clock`. */
const cli = (args: string[], env: NodeJS.ProcessEnv, clock: number): Promise<Run> => runCli(args, env, process.cwd(), '', clock);

const CLUSTER = `kind: Cluster
name: lab
vmids: { lower: 100, upper: 1000 }
nodes: [pve-01]
restart: in-window
windows: ['Sat 02:00-05:00 Europe/Berlin']
`;

const WEB = `kind: VM
name: web-01
cluster: lab
node: pve-01
vmid: 100
config:
  memory: 4096
`;

/** Saturday 2026-12-05 00:30 UTC: half an hour before the window (01:00–04:00 UTC in winter). */
const BEFORE = Date.parse('2026-12-05T00:30:00Z');
const INSIDE = Date.parse('2026-12-05T01:30:00Z');

let dir: string;
let lab: RunningSimulator;
let env: NodeJS.ProcessEnv;
let clusters: CliClusters<'lab'>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-windows-'));
  clusters = await startOneNodeLab({
    storages: ['local-lvm'],
    guests: [{ vmid: 100, type: 'qemu', node: 'pve-01', running: true, config: 'name: web-01\ntags: pve-gitops\nmemory: 2048\n' }],
  });
  ({ lab, env } = clusters);
  await writeFile(join(dir, 'clusters.yaml'), CLUSTER);
  await writeFile(join(dir, 'web.yaml'), WEB);
});
afterEach(async () => {
  await clusters.close();
  await rm(dir, { recursive: true, force: true });
});

type Result = { guests: { vmid: number; status: string; error?: string; steps: { op: string; detail?: string }[]; pending?: string[] }[] };

async function applyJson(args: string[], clock: number): Promise<{ code: number; web: Result['guests'][number] | undefined }> {
  const out = join(dir, 'result.json');
  const run = await cli(['apply', '--specs', dir, '--yes', '--format', 'json', '--out', out, ...args], env, clock);
  const result = JSON.parse(await readFile(out, 'utf8')) as Result;
  return { code: run.code, web: result.guests.find((g) => g.vmid === 100) };
}

describe('apply windows from the command line', () => {
  it('plan says when the guest may apply; apply outside the window holds it and writes nothing', async () => {
    const plan = await cli(['plan', '--specs', dir], env, BEFORE);
    expect(plan.stdout).toContain('note: applies only inside its apply window: Sat 02:00-05:00 Europe/Berlin');
    expect(plan.stdout).toContain(
      'restarts after the apply, inside an apply window only: memory takes effect only after a restart (restart: in-window)',
    );

    const { web } = await applyJson([], BEFORE);
    expect(web).toMatchObject({ status: 'skipped', steps: [] });
    expect(web?.error).toBe(
      'held: outside its apply window: runs when Sat 02:00-05:00 Europe/Berlin opens, Sat 2026-12-05 02:00 Europe/Berlin (01:00 UTC); nothing was written — apply again then, or with --now',
    );
    expect(rawValue(lab, 100, 'memory')).toBe('2048');
  });

  it('--now applies outside the window, leaving the in-window restart undone; inside the window the restart runs', async () => {
    const now = await applyJson(['--now'], BEFORE);
    expect(now.web?.status).toBe('applied');
    expect(now.web?.steps.map((s) => s.op)).toEqual(['config', 'restart-held']);
    expect(now.web?.pending).toEqual(['memory']);
    expect(lab.sim.getGuest(100)?.rawConfig).toMatch(/\[PENDING\][^[]*memory: 4096/);

    // Inside the window the values are written already; the plan shows them pending, and a change restarts.
    await writeFile(join(dir, 'web.yaml'), WEB.replace('memory: 4096', 'memory: 8192'));
    const inside = await applyJson([], INSIDE);
    expect(inside.web?.status).toBe('applied');
    expect(inside.web?.steps.map((s) => s.op)).toEqual(['config', 'shutdown', 'start', 'restarted']);
    expect(rawValue(lab, 100, 'memory')).toBe('8192');
  });
});

describe("a cluster's apply windows gate its objects of every kind", () => {
  const POOL = 'kind: Pool\nname: web\ncluster: lab\ncomment: Web servers\n';

  it('plan says the pool waits for the window; apply outside it holds the pool (nothing written); --now creates it', async () => {
    await writeFile(join(dir, 'pool.yaml'), POOL);
    const plan = await cli(['plan', '--specs', dir], env, BEFORE);
    expect(plan.stdout).toContain("note: applies only inside its cluster's apply window: Sat 02:00-05:00 Europe/Berlin");

    const out = join(dir, 'result.json');
    await cli(['apply', '--specs', dir, '--yes', '--format', 'json', '--out', out], env, BEFORE);
    const held = JSON.parse(await readFile(out, 'utf8')) as {
      objects?: { key: string; status: string; error?: string; retryable?: boolean }[];
    };
    expect(held.objects).toEqual([
      {
        kind: 'pool',
        key: 'lab/pool/web',
        cluster: 'lab',
        name: 'web',
        status: 'skipped',
        steps: [],
        error:
          'held: outside its apply window: runs when Sat 02:00-05:00 Europe/Berlin opens, Sat 2026-12-05 02:00 Europe/Berlin (01:00 UTC); nothing was written — apply again then, or with --now',
        retryable: true,
      },
    ]);
    expect(lab.sim.pools.has('web')).toBe(false);

    await cli(['apply', '--specs', dir, '--yes', '--now', '--format', 'json', '--out', out], env, BEFORE);
    const now = JSON.parse(await readFile(out, 'utf8')) as { objects?: { key: string; status: string }[] };
    expect(now.objects?.map((o) => `${o.key}: ${o.status}`)).toEqual(['lab/pool/web: applied']);
    expect(lab.sim.pools.get('web')?.comment).toBe('Web servers');
  });

  it('validate refuses windows on a kind document, saying to put them on the Cluster', async () => {
    await writeFile(join(dir, 'pool.yaml'), `${POOL}windows: ['daily 01:00-02:00 UTC']\n`);
    const run = await cli(['validate', '--specs', dir], env, BEFORE);
    expect(run.code).not.toBe(0);
    expect(`${run.stdout}${run.stderr}`).toContain(
      "windows: a Pool document has no apply windows of its own; it applies inside its cluster's: put windows: on the Cluster document 'lab'",
    );
  });
});
