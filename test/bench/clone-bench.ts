/**
 * Clone benchmark: N clones of one template (on shared storage) spread over several nodes, every
 * task taking the same time, carried out by the engine with its documented limits (4 guests per
 * cluster, 2 per node) against the simulator in its own process. Prints the wall time next to the
 * time the limits allow (guests × tasks per guest × task time ÷ cluster limit: the apply can never
 * be faster), their ratio, and the requests per guest. Each clone keeps every guarantee: the
 * search for an earlier run's clone, the clone task awaited, a fresh read before the config
 * write, the digest on it, a read afterwards that confirms nothing is left.
 *
 * Usage: node --import tsx test/bench/clone-bench.ts [--guests 50] [--nodes 5] [--task-ms 200] [--latency-ms 0]
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
    guests: { type: 'string', default: '50' },
    nodes: { type: 'string', default: '5' },
    'task-ms': { type: 'string', default: '200' },
    'latency-ms': { type: 'string', default: '0' },
  },
});
const GUESTS = Number(values.guests);
const NODES = Array.from({ length: Number(values.nodes) }, (_, i) => `pve-${String(i + 1).padStart(2, '0')}`);
const TASK_MS = Number(values['task-ms']);
const LATENCY_MS = Number(values['latency-ms']);
const CLUSTER_LIMIT = 4;
const LOWER = 100000;
const TEMPLATE = 9000;

const cluster = makeClusterSpec({ name: 'bench', vmids: { lower: LOWER, upper: 200000 }, nodes: NODES });

function spec(i: number): GuestSpec {
  return {
    ...makeGuestSpec({
      name: `web-${i}`,
      cluster: 'bench',
      node: NODES[i % NODES.length]!,
      vmid: LOWER + i,
      config: { cores: '2', memory: '2048', ipconfig0: `ip=10.10.${Math.floor(i / 250)}.${(i % 250) + 1}/16`, ciuser: 'debian' },
      source: { file: `guests/web-${i}.yaml`, line: 1, col: 1 },
    }),
    clone: { template: 'debian-12-cloud' },
  };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-clone-bench-'));
  try {
    const fixture = {
      nodes: NODES,
      storages: ['local-lvm', { storage: 'ceph', type: 'rbd', content: ['images', 'rootdir'], shared: true }],
      guests: [
        {
          vmid: TEMPLATE,
          type: 'qemu',
          node: NODES[0],
          config: {
            name: 'debian-12-cloud',
            cores: '1',
            memory: '1024',
            net0: 'virtio=BC:24:11:00:90:00,bridge=vmbr0',
            scsi0: `ceph:base-${TEMPLATE}-disk-0,size=2G`,
            ide2: `ceph:vm-${TEMPLATE}-cloudinit,media=cdrom`,
            template: '1',
          },
        },
      ],
    };
    const fixturePath = join(dir, 'estate.json');
    await writeFile(fixturePath, JSON.stringify(fixture));
    const sim = await startSimProcess({ fixture: fixturePath, nodes: NODES, latencyMs: LATENCY_MS, taskMs: TASK_MS, stderr: 'ignore' });
    const client = new PveClient({ cluster: 'bench', url: sim.url, token: sim.token, concurrency: 16 });
    const adapter = new PveClusterAdapter(client);
    try {
      const head: SpecSet = { clusters: [cluster], guests: Array.from({ length: GUESTS }, (_, i) => spec(i)) };
      const plan = await runPlan({ head, readers: { bench: adapter } });
      if (plan.summary.create !== GUESTS) throw new Error(`expected ${GUESTS} clones, planned ${JSON.stringify(plan.summary)}`);
      const before = await simStats(sim);
      const { result, ms } = await timed(() => executePlan(plan, { bench: adapter }));
      const after = await simStats(sim);
      const counts = countApplyResult(result.guests);
      if (counts.applied !== GUESTS) throw new Error(`expected ${GUESTS} applied, got ${JSON.stringify(counts)}`);
      // The tasks each clone waits for: the clone, every step that answered a UPID, and the config
      // write (`POST …/config` forks a `qmconfig` worker and waits for it before it answers).
      const tasks = result.guests.reduce((n, g) => n + g.steps.filter((s) => s.upid !== undefined || s.op === 'config').length, 0) / GUESTS;
      const limitMs = (GUESTS * tasks * TASK_MS) / CLUSTER_LIMIT;
      process.stdout.write(
        `clone benchmark: ${GUESTS} clones of one template on ${NODES.length} nodes, ${TASK_MS} ms tasks, ${LATENCY_MS} ms latency, ` +
          `limits ${CLUSTER_LIMIT} per cluster / 2 per node\n` +
          `${(ms / 1000).toFixed(2)} s; the limits allow ${(limitMs / 1000).toFixed(2)} s (${tasks.toFixed(1)} tasks per guest) = ` +
          `${(ms / limitMs).toFixed(2)}× the limit, ${((after.requests.total - before.requests.total - 1) / GUESTS).toFixed(1)} requests per guest\n`,
      );
    } finally {
      await client.close();
      await sim.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
