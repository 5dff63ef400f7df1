/**
 * Drift report benchmark: the App's drift job end to end — the default branch's head asked of
 * GitHub (the HTTP test double), the archive read and parsed, every owned guest read with a
 * read-only client, the report built and rendered, the "Drift report" issue written — for estates
 * of 1,000 and 10,000 guests on a simulator with 20 ms latency per request, 1% of them drifted.
 * Run twice per size: the first run downloads and parses the specs and creates the issue (label and
 * issue: two writes, which Octokit's throttling spaces a second apart as GitHub asks of Apps); the
 * second is a scheduled run as it usually is (same commit: specs cached; same findings: no write).
 * Columns: the whole run; before the first Proxmox request (GitHub head, archive, parse); the
 * Proxmox reads; after the last (report, issue, Redis).
 * The simulator runs in its own process, so the figures are the App's alone.
 *
 * Usage: node --import tsx test/bench/drift-bench.ts [--sizes 1000,10000] [--latency-ms 20]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { Probot } from 'probot';
import { envPrefix } from '../../src/core/cluster-name.js';
import type { PveResponseEvent } from '../../src/pve/transport.js';
import { CommitSpecsCache } from '../../src/queue/commit-specs.js';
import { DriftScheduler } from '../../src/queue/drift/drift-schedule.js';
import { DriftStore } from '../../src/queue/drift/drift-store.js';
import { createDriftProcessor } from '../../src/queue/drift/drift-worker.js';
import { expectHead, expectIssueCreated, expectIssueSearch } from '../app/drift-flow.js';
import { GitHubDouble } from '../app/github-double.js';
import { expectArchive } from '../app/plan-flow.js';
import { newSha, type RepoFiles } from '../app/spec-repo.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { benchAppliedGuest, benchClusterYaml, benchGuestYaml, startSimProcess, tableRow } from './bench-kit.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000' },
    'latency-ms': { type: 'string', default: '20' },
  },
});
const sizes = values.sizes.split(',').map(Number);
const latencyMs = Number(values['latency-ms']);
const NODES = ['pve-01', 'pve-02', 'pve-03'];
const repo = { id: 4242, owner: 'acme', name: 'estate' };
const installationId = 77;

/** The spec repository: a Cluster document and one file per VM. */
function specFiles(n: number): RepoFiles {
  const files: RepoFiles = { 'cluster.yaml': benchClusterYaml(NODES) };
  for (let i = 0; i < n; i++) files[`guests/vm-${i}.yaml`] = benchGuestYaml(i, NODES);
  return files;
}

/** The estate as Proxmox holds it: the specs applied, then every hundredth guest's memory changed by hand. */
function fixture(n: number): unknown {
  const guests = Array.from({ length: n }, (_v, i) => benchAppliedGuest(i, NODES, i % 100 === 0 ? { memory: '4096' } : {}));
  return { nodes: NODES, guests };
}

const WIDTHS = [8, 38, 10, 13, 14, 14, 14, 12, 10];
const row = (cells: (string | number)[]): string => tableRow(WIDTHS, cells);

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-drift-bench-'));
  const redisServer = await startRedisServer();
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 3 });
  process.stdout.write(
    `drift report benchmark: ${latencyMs} ms latency per Proxmox request, 16 in flight (the default), 1% of guests drifted, simulator in its own process, Node ${process.version}\n\n`,
  );
  process.stdout.write(
    `${row(['guests', 'run', 'time', 'proxmox req.', 'before reads', 'proxmox reads', 'after reads', 'github req.', 'target'])}\n`,
  );
  try {
    for (const n of sizes) {
      const fixturePath = join(dir, `estate-${n}.json`);
      await writeFile(fixturePath, JSON.stringify(fixture(n)));
      const sim = await startSimProcess({ fixture: fixturePath, nodes: NODES, latencyMs });
      const github = await GitHubDouble.start();
      const prefix = `bench-${n}`;
      const queue = new Queue('drift', { connection: redis, prefix });
      const probot = new Probot({
        appId: github.app.id,
        privateKey: github.app.privateKeyPem,
        secret: 'bench',
        baseUrl: `${github.url}/api/v3`,
        log: pino({ level: 'silent' }),
      });
      let pveRequests = 0;
      let first = 0;
      let last = 0;
      const onResponse = (_event: PveResponseEvent): void => {
        pveRequests += 1;
        last = performance.now();
        if (first === 0) first = last;
      };
      const bench = envPrefix('bench');
      const processor = createDriftProcessor({
        logger: pino({ level: 'silent' }),
        redis,
        store: new DriftStore(redis, `${prefix}:state`),
        specs: new CommitSpecsCache(),
        scheduler: new DriftScheduler(queue, 0),
        github: (id) => probot.auth(id),
        appGithub: () => probot.auth(),
        connections: {
          env: {
            [`${bench}URL`]: sim.url,
            [`${bench}TOKEN`]: sim.token,
            [`${bench}READ_TOKEN`]: sim.auditToken,
            [`${bench}ALLOW_HTTP`]: '1',
          },
          cwd: process.cwd(),
          file: undefined,
          onResponse,
        },
      });
      const sha = newSha();
      try {
        expectHead(github, repo, sha, 2);
        await expectArchive(github, repo, sha, specFiles(n));
        expectIssueSearch(github, repo, []);
        expectIssueCreated(github, repo, 1);
        for (const run of ['first (archive, parse, issue created)', 'scheduled (specs cached, no write)']) {
          pveRequests = 0;
          first = 0;
          const githubBefore = github.requests.length;
          const started = performance.now();
          const outcome = await processor({
            id: `bench-${run}`,
            name: 'drift',
            data: { kind: 'drift', installationId, repo, trigger: 'schedule' },
          } as Job);
          const ms = performance.now() - started;
          const expected = run.startsWith('first') ? 'created' : 'unchanged';
          if (outcome !== expected) throw new Error(`the ${run} run ended ${outcome}, not ${expected}`);
          const target = n === 1000 ? `<2000 ms ${ms < 2000 ? '✓' : '✗'}` : '';
          process.stdout.write(
            `${row([
              n,
              run,
              `${ms.toFixed(0)} ms`,
              pveRequests,
              `${(first - started).toFixed(0)} ms`,
              `${(last - first).toFixed(0)} ms`,
              `${(started + ms - last).toFixed(0)} ms`,
              github.requests.length - githubBefore,
              target,
            ])}\n`,
          );
        }
        github.verify();
      } finally {
        await queue.close();
        await github.close();
        await sim.stop();
      }
    }
  } finally {
    redis.disconnect();
    await redisServer.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
