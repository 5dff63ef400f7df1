import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countApplyResult } from '../../src/core/apply-result.js';
import type { SpecSet } from '../../src/core/model.js';
import { planHasChanges } from '../../src/core/plan/plan-specs.js';
import { renderPlanJson } from '../../src/core/render/render-json.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { loadExample, startEstate, type Estate } from './helpers.js';

const BIN = fileURLToPath(new URL('../../src/bin.ts', import.meta.url));

let estate: Estate;
let specs: SpecSet;
let dir: string;

beforeEach(async () => {
  // Slow tasks, so the kill lands while Proxmox is still creating guests: a slot frees for the
  // guests not yet sent only after a create and a start (about 600 ms), a wide margin for the kill.
  estate = await startEstate({ taskMs: 300, template: true });
  specs = await loadExample();
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-kill-'));
});

afterEach(async () => {
  await estate.close();
  await rm(dir, { recursive: true, force: true });
});

/** Starts `pve-gitops apply --plan FILE` and SIGKILLs it once it has carried out `steps` steps. */
async function applyAndKill(planFile: string, steps: number): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, sim] of Object.entries(estate.sims)) {
    env[`PVE_CLUSTER_${name.toUpperCase()}_URL`] = sim.url;
    env[`PVE_CLUSTER_${name.toUpperCase()}_TOKEN`] = sim.token;
    env[`PVE_CLUSTER_${name.toUpperCase()}_ALLOW_HTTP`] = '1';
  }
  const child = spawn(process.execPath, ['--import', 'tsx', BIN, 'apply', '--plan', planFile], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const done = stderr.split('\n').filter((l) => / — /.test(l) && /\[UPID:/.test(l)).length;
      if (done >= steps && child.exitCode === null) child.kill('SIGKILL');
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(stderr);
      else reject(new Error(`apply finished (${code}) before it could be killed:\n${stderr}`));
    });
  });
}

describe('an apply killed midway', () => {
  it('converges when run again, without duplicating a guest or repeating a write', async () => {
    const plan = await runPlan({ head: specs, readers: estate.readers });
    const planFile = join(dir, 'plan.json');
    await writeFile(planFile, renderPlanJson(plan));

    const output = await applyAndKill(planFile, 3);
    expect(output).toMatch(/create on/);
    const createsBefore = createRequests(estate);
    expect(createsBefore).toBeGreaterThan(0);
    expect(createsBefore).toBeLessThan(11);

    // The same stored plan, run again.
    const result = await executePlan(plan, estate.writers, { lockPollMs: 20 });
    const unhappy = result.guests.filter((g) => g.status !== 'applied' && g.status !== 'unchanged');
    expect(unhappy, JSON.stringify(unhappy, null, 2)).toEqual([]);
    expect(countApplyResult(result.guests)).toMatchObject({ conflict: 0, failed: 0, skipped: 0 });
    // Every guest created exactly once over both runs: no create was sent twice.
    expect(createRequests(estate)).toBe(11);
    const running = specs.guests.filter((g) => g.state === 'present' && g.power === 'running').length;
    expect(routeCount(estate, 'status/start')).toBe(running);
    for (const g of specs.guests.filter((x) => x.state === 'present')) {
      const sim = estate.sims[g.cluster as 'lab' | 'prod'];
      expect(sim.sim.getGuest(g.vmid), `${g.cluster}/${g.name}`).toBeDefined();
    }

    const after = await runPlan({ head: specs, readers: estate.readers });
    expect(planHasChanges(after)).toBe(false);
    for (const sim of Object.values(estate.sims)) {
      for (const g of Object.values(sim.sim.stats().guests)) expect(g.maxConcurrentWrites).toBe(1);
    }
  });
});

function routeCount(e: Estate, suffix: string): number {
  let n = 0;
  for (const sim of Object.values(e.sims)) {
    for (const [route, count] of Object.entries(sim.sim.stats().requests.byRoute)) if (route.endsWith(suffix)) n += count;
  }
  return n;
}

function createRequests(e: Estate): number {
  let n = 0;
  for (const sim of Object.values(e.sims)) {
    const routes = sim.sim.stats().requests.byRoute;
    n += (routes['POST /nodes/{node}/qemu'] ?? 0) + (routes['POST /nodes/{node}/lxc'] ?? 0);
  }
  return n;
}
