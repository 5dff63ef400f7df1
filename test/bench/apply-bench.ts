/**
 * Apply benchmark: N guest updates spread over several nodes, every task taking the same time,
 * carried out by the engine with its documented limits (4 guests per cluster, 2 per node) against
 * the simulator in its own process. Prints the wall time, the time the limits allow
 * (guests × task time ÷ cluster limit: the apply can never be faster), their ratio, and the
 * requests per guest. Each guest keeps every guarantee: a fresh read before its write, the
 * digest on the write, the task awaited, a read afterwards that confirms nothing is left.
 *
 * Usage: node --import tsx test/bench/apply-bench.ts [--guests 500] [--nodes 5] [--task-ms 200] [--latency-ms 0] [--runs 1]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { countApplyResult } from '../../src/core/apply-result.js';
import type { GuestSpec, SpecSet } from '../../src/core/model.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { makeClusterSpec, makeGuestSpec } from '../helpers/factories.js';
import { simStats, startSimProcess, timed } from './bench-kit.js';

const { values } = parseArgs({
  options: {
    guests: { type: 'string', default: '500' },
    nodes: { type: 'string', default: '5' },
    'task-ms': { type: 'string', default: '200' },
    'latency-ms': { type: 'string', default: '0' },
    runs: { type: 'string', default: '1' },
  },
});
const GUESTS = Number(values.guests);
const NODES = Array.from({ length: Number(values.nodes) }, (_, i) => `pve-${String(i + 1).padStart(2, '0')}`);
const TASK_MS = Number(values['task-ms']);
const LATENCY_MS = Number(values['latency-ms']);
const RUNS = Number(values.runs);
const CLUSTER_LIMIT = 4;
const LOWER = 100000;

const cluster = makeClusterSpec({ name: 'bench', vmids: { lower: LOWER, upper: 200000 }, nodes: NODES });

function spec(i: number, memory: string): GuestSpec {
  return makeGuestSpec({
    name: `vm-${i}`,
    cluster: 'bench',
    node: NODES[i % NODES.length]!,
    vmid: LOWER + i,
    config: { memory, cores: '2', tags: 'bench' },
    source: { file: `guests/vm-${i}.yaml`, line: 1, col: 1 },
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-apply-bench-'));
  const limitMs = (GUESTS * TASK_MS) / CLUSTER_LIMIT;
  process.stdout.write(
    `apply benchmark: ${GUESTS} updates on ${NODES.length} nodes, ${TASK_MS} ms tasks, ${LATENCY_MS} ms latency, ` +
      `limits ${CLUSTER_LIMIT} per cluster / 2 per node; the limits allow ${(limitMs / 1000).toFixed(1)} s\n`,
  );
  try {
    for (let run = 1; run <= RUNS; run++) {
      const guests = [];
      for (let i = 0; i < GUESTS; i++) {
        const node = NODES[i % NODES.length];
        guests.push({
          vmid: LOWER + i,
          type: 'qemu',
          node,
          config: { name: `vm-${i}`, memory: '2048', cores: '2', tags: 'bench;pve-gitops' },
        });
      }
      const fixturePath = join(dir, 'estate.json');
      await writeFile(fixturePath, JSON.stringify({ nodes: NODES, guests }));
      const sim = await startSimProcess({ fixture: fixturePath, nodes: NODES, latencyMs: LATENCY_MS, taskMs: TASK_MS, stderr: 'ignore' });
      const client = new PveClient({ cluster: 'bench', url: sim.url, token: sim.token, concurrency: 16 });
      const adapter = new PveClusterAdapter(client);
      try {
        const base: SpecSet = { clusters: [cluster], guests: Array.from({ length: GUESTS }, (_, i) => spec(i, '2048')) };
        const head: SpecSet = { clusters: [cluster], guests: Array.from({ length: GUESTS }, (_, i) => spec(i, '4096')) };
        const plan = await runPlan({ head, base, readers: { bench: adapter } });
        if (plan.summary.update !== GUESTS) throw new Error(`expected ${GUESTS} updates, planned ${plan.summary.update}`);
        const before = (await simStats(sim)).requests.total;
        const { result, ms } = await timed(() => executePlan(plan, { bench: adapter }));
        const requests = (await simStats(sim)).requests.total - before - 1;
        const counts = countApplyResult(result.guests);
        if (counts.applied !== GUESTS) throw new Error(`expected ${GUESTS} applied, got ${JSON.stringify(counts)}`);
        process.stdout.write(
          `run ${run}: ${(ms / 1000).toFixed(2)} s = ${(ms / limitMs).toFixed(2)}× the limit (target ≤ 1.20×), ` +
            `${(ms / GUESTS).toFixed(0)} ms per guest per slot ÷ ${CLUSTER_LIMIT}, ${(requests / GUESTS).toFixed(1)} requests per guest\n`,
        );
      } finally {
        await client.close();
        await sim.stop();
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
