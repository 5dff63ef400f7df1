/**
 * Restart benchmark (issue 21): N running guests over several nodes get a value Proxmox holds as
 * pending (memory, no hotplug), their cluster's policy `restart: allowed`, applied by the engine
 * against the simulator in its own process. For each `restartsInFlight` limit it prints the wall
 * time, the time the restart limit allows (⌈guests ÷ limit⌉ × one restart, a restart being a
 * shutdown task and a start task: the restarts can never be faster), their ratio, and the most
 * restarts seen in flight at once, which must never exceed the limit.
 *
 * Usage: node --import tsx test/bench/restart-bench.ts [--guests 100] [--nodes 5] [--task-ms 50] [--limits 1,5,10]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { countApplyResult } from '../../src/core/apply-result.js';
import type { GuestSpec, SpecSet } from '../../src/core/model.js';
import type { ApplyEvent } from '../../src/engine/apply-guest.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { makeClusterSpec, makeGuestSpec } from '../helpers/factories.js';
import { startSimProcess, timed } from './bench-kit.js';

const { values } = parseArgs({
  options: {
    guests: { type: 'string', default: '100' },
    nodes: { type: 'string', default: '5' },
    'task-ms': { type: 'string', default: '50' },
    limits: { type: 'string', default: '1,5,10' },
  },
});
const GUESTS = Number(values.guests);
const NODES = Array.from({ length: Number(values.nodes) }, (_, i) => `pve-${String(i + 1).padStart(2, '0')}`);
const TASK_MS = Number(values['task-ms']);
const LIMITS = values.limits.split(',').map(Number);
const LOWER = 100000;

function spec(i: number, memory: string): GuestSpec {
  return makeGuestSpec({
    name: `vm-${i}`,
    cluster: 'bench',
    node: NODES[i % NODES.length]!,
    vmid: LOWER + i,
    config: { memory, tags: 'bench' },
    source: { file: `guests/vm-${i}.yaml`, line: 1, col: 1 },
  });
}

async function runOnce(dir: string, limit: number): Promise<void> {
  const cluster = makeClusterSpec({
    name: 'bench',
    vmids: { lower: LOWER, upper: 200000 },
    nodes: NODES,
    restart: { policy: 'allowed', force: false, timeout: 60 },
    restartsInFlight: limit,
  });
  const guests = Array.from({ length: GUESTS }, (_, i) => ({
    vmid: LOWER + i,
    type: 'qemu',
    node: NODES[i % NODES.length],
    running: true,
    config: { name: `vm-${i}`, memory: '2048', tags: 'bench;pve-gitops' },
  }));
  const fixturePath = join(dir, `estate-${limit}.json`);
  await writeFile(fixturePath, JSON.stringify({ nodes: NODES, guests }));
  const sim = await startSimProcess({ fixture: fixturePath, nodes: NODES, taskMs: TASK_MS, stderr: 'ignore' });
  const client = new PveClient({ cluster: 'bench', url: sim.url, token: sim.token, concurrency: 16 });
  const adapter = new PveClusterAdapter(client, { wait: { intervalMs: 10 } });
  try {
    const base: SpecSet = { clusters: [cluster], guests: Array.from({ length: GUESTS }, (_, i) => spec(i, '2048')) };
    const head: SpecSet = { clusters: [cluster], guests: Array.from({ length: GUESTS }, (_, i) => spec(i, '4096')) };
    const plan = await runPlan({ head, base, readers: { bench: adapter } });
    const restarting = plan.guests.filter((g) => g.restart !== undefined).length;
    if (restarting !== GUESTS) throw new Error(`expected ${GUESTS} planned restarts, planned ${restarting}`);
    // In flight: from the shutdown's end to the restart's confirmation (a lower estimate).
    let inFlight = 0;
    let most = 0;
    let firstShutdown: number | undefined;
    let lastRestarted = 0;
    const onEvent = (event: ApplyEvent): void => {
      if (event.type !== 'step') return;
      if (event.step.op === 'shutdown') {
        firstShutdown ??= performance.now();
        most = Math.max(most, ++inFlight);
      } else if (event.step.op === 'restarted') {
        inFlight--;
        lastRestarted = performance.now();
      }
    };
    const { result, ms } = await timed(() => executePlan(plan, { bench: adapter }, { onEvent, lockPollMs: 50 }));
    const counts = countApplyResult(result.guests);
    if (counts.applied !== GUESTS) throw new Error(`expected ${GUESTS} applied, got ${JSON.stringify(counts)}`);
    const pendingLeft = result.guests.filter((g) => (g.pending?.length ?? 0) > 0).length;
    const boundMs = Math.ceil(GUESTS / limit) * 2 * TASK_MS;
    const restartMs = lastRestarted - (firstShutdown ?? lastRestarted);
    process.stdout.write(
      `restartsInFlight ${String(limit).padStart(2)}: apply ${(ms / 1000).toFixed(2)} s, restarts ${(restartMs / 1000).toFixed(2)} s; ` +
        `the limit allows ${(boundMs / 1000).toFixed(2)} s (${(restartMs / boundMs).toFixed(2)}×); most in flight ${most} (limit ${limit}); ` +
        `${pendingLeft} guest(s) left pending\n`,
    );
    if (most > limit) throw new Error(`${most} restarts in flight, more than the limit ${limit}`);
  } finally {
    await client.close();
    await sim.stop();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-restart-bench-'));
  process.stdout.write(
    `restart benchmark: ${GUESTS} running guests with a pending change, restart: allowed, ${NODES.length} nodes, ${TASK_MS} ms tasks; ` +
      `a restart is a shutdown and a start task (≥ ${2 * TASK_MS} ms)\n`,
  );
  try {
    for (const limit of LIMITS) await runOnce(dir, limit);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
