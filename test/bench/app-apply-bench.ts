/**
 * Merge-to-apply benchmark: a merged pull request that updates N guests spread over several nodes,
 * applied through the App's queues by 1 and by 3 worker processes (`pve-gitops serve --role
 * worker`, spawned as the image runs them), each Proxmox task taking the same time. The web role
 * runs here, GitHub is the HTTP test double, Redis a fresh `redis-server`, and the simulator a
 * process of its own, so the figures are the App's.
 *
 * Printed per worker count: the wall time from the merge webhook until the last guest job
 * completed, against the time the per-node limit allows (guests per node ÷ node limit × task
 * time: the apply can never be faster; the cluster limit is set high enough not to bind), and the
 * time from the merge webhook to the first Proxmox write.
 *
 * Usage: node --import tsx test/bench/app-apply-bench.ts [--guests 500] [--nodes 5] [--task-ms 200] [--node-limit 2] [--workers 1,3]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { envPrefix } from '../../src/core/cluster-name.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { QUEUE_NAMES } from '../../src/queue/schema.js';
import { expectApplyCheckRun, expectApplyComment, mergeEvent, storePlan } from '../app/apply-flow.js';
import { GitHubDouble } from '../app/github-double.js';
import { startTestApp } from '../app/harness.js';
import { newSha, type RepoFiles } from '../app/spec-repo.js';
import { startWorkerProcess, type WorkerProcess } from '../app/worker-process.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { simStats, startSimProcess } from './bench-kit.js';

const { values } = parseArgs({
  options: {
    guests: { type: 'string', default: '500' },
    nodes: { type: 'string', default: '5' },
    'task-ms': { type: 'string', default: '200' },
    'node-limit': { type: 'string', default: '2' },
    workers: { type: 'string', default: '1,3' },
  },
});
const GUESTS = Number(values.guests);
const NODES = Array.from({ length: Number(values.nodes) }, (_, i) => `pve-${String(i + 1).padStart(2, '0')}`);
const TASK_MS = Number(values['task-ms']);
const NODE_LIMIT = Number(values['node-limit']);
const WORKERS = values.workers.split(',').map(Number);
const LOWER = 100000;
const repo = { id: 5151, owner: 'acme', name: 'estate' };

function specFiles(memory: number): RepoFiles {
  const files: RepoFiles = {
    'cluster.yaml': `kind: Cluster\nname: bench\nvmids: { lower: ${LOWER}, upper: 200000 }\nownerTag: pve-gitops\nnodes: [${NODES.join(', ')}]\n`,
  };
  for (let i = 0; i < GUESTS; i++) {
    files[`guests/vm-${i}.yaml`] =
      `kind: VM\nname: vm-${i}\ncluster: bench\nnode: ${NODES[i % NODES.length]}\nvmid: ${LOWER + i}\n` +
      `config:\n  memory: ${memory}\n  cores: 2\n  tags: [bench]\n`;
  }
  return files;
}

/** Resolves once `check` holds, looking every `everyMs` (a benchmark may poll; tests wait for events). */
async function until(check: () => Promise<boolean>, everyMs: number): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, everyMs));
}

async function measure(redisUrl: string, fixturePath: string, workerCount: number): Promise<string> {
  const sim = await startSimProcess({ fixture: fixturePath, nodes: NODES, taskMs: TASK_MS, stderr: 'ignore' });
  const github = await GitHubDouble.start();
  const prefix = envPrefix('bench');
  const clusterEnv = {
    [`${prefix}URL`]: sim.url,
    [`${prefix}TOKEN`]: sim.token,
    [`${prefix}READ_TOKEN`]: sim.auditToken,
    [`${prefix}ALLOW_HTTP`]: '1',
    // Ten guests at once, each reading its config, status and tasks together: more than the
    // connection's default of 16 requests in flight in one worker process.
    [`${prefix}CONCURRENCY`]: '32',
  };
  const app = await startTestApp({
    github,
    redisUrl,
    role: 'web',
    logLevel: 'info',
    env: {
      ...clusterEnv,
      APPLY_NODE_LIMIT: String(NODE_LIMIT),
      // High enough that only the per-node limit binds.
      APPLY_CLUSTER_LIMIT: String(NODE_LIMIT * NODES.length),
      APPLY_CONCURRENCY: '16',
      APPLY_REPORT_INTERVAL_MS: '1000',
    },
  });
  const workers: WorkerProcess[] = [];
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const guestQueue = new Queue(QUEUE_NAMES.applyGuest, { connection: redis, prefix: app.prefix });
  try {
    for (let i = 0; i < workerCount; i++) workers.push(await startWorkerProcess(app.env));
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const asSim = { url: sim.url, auditToken: sim.auditToken } as RunningSimulator;
    await storePlan({
      redisUrl,
      prefix: app.prefix,
      sims: { bench: asSim },
      repo,
      pr: 1,
      headSha,
      baseSha,
      head: specFiles(4096),
      base: specFiles(2048),
    });
    expectApplyCheckRun(github, repo, { mergeSha, id: 1, deployments: ['bench'] });
    expectApplyComment(github, repo, { pr: 1, id: 2 });
    const before = await simStats(sim);
    const started = performance.now();
    await app.deliver({ event: 'pull_request', payload: mergeEvent({ installationId: 9, repo, number: 1, headSha, baseSha, mergeSha }) });
    await until(async () => (await simStats(sim)).writes.total > before.writes.total, 2);
    const firstWrite = performance.now() - started;
    await until(async () => (await guestQueue.getJobCounts('completed')).completed === GUESTS, 20);
    const ms = performance.now() - started;
    const after = await simStats(sim);
    const failed = await guestQueue.getJobCounts('failed');
    if ((failed.failed ?? 0) > 0 || after.writes.total - before.writes.total !== GUESTS) {
      throw new Error(`expected ${GUESTS} writes and no failed job, got ${after.writes.total - before.writes.total} and ${failed.failed}`);
    }
    const limitMs = Math.ceil(GUESTS / NODES.length / NODE_LIMIT) * TASK_MS;
    const requests = (after.requests.total - before.requests.total) / GUESTS;
    return (
      `${workerCount} worker process${workerCount === 1 ? ' ' : 'es'}: ${(ms / 1000).toFixed(2)} s = ${(ms / limitMs).toFixed(2)}× the limit ` +
      `(target ≤ 1.20×); first Proxmox write ${firstWrite.toFixed(0)} ms after the merge webhook; ${requests.toFixed(1)} Proxmox requests per guest`
    );
  } finally {
    await Promise.all(workers.map((w) => w.signal('SIGTERM')));
    await guestQueue.close();
    redis.disconnect();
    await app.close();
    await github.close();
    await sim.stop();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-app-apply-bench-'));
  const redis = await startRedisServer();
  try {
    const guests = Array.from({ length: GUESTS }, (_, i) => ({
      vmid: LOWER + i,
      type: 'qemu',
      node: NODES[i % NODES.length],
      config: { name: `vm-${i}`, memory: '2048', cores: '2', tags: 'bench;pve-gitops' },
    }));
    const fixturePath = join(dir, 'estate.json');
    await writeFile(fixturePath, JSON.stringify({ nodes: NODES, guests }));
    const limitMs = Math.ceil(GUESTS / NODES.length / NODE_LIMIT) * TASK_MS;
    process.stdout.write(
      `merge-to-apply benchmark: ${GUESTS} updates on ${NODES.length} nodes, ${TASK_MS} ms tasks, ${NODE_LIMIT} guests per node at once ` +
        `(${NODE_LIMIT * NODES.length} per cluster); the per-node limit allows ${(limitMs / 1000).toFixed(1)} s\n`,
    );
    for (const count of WORKERS) process.stdout.write(`${await measure(redis.url, fixturePath, count)}\n`);
  } finally {
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
