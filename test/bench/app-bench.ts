/**
 * App benchmark: the GitHub App as it runs in production — `pve-gitops serve` in its own process,
 * a real Redis, the simulator in its own process as the cluster, GitHub's API served by the test
 * double — and prints:
 *   - the webhook answer latency (p50/p99) under a burst of deliveries sent at once to a web
 *     process (target p99 < 50 ms), and beside a bare Probot 14 app in the same run (target ≤ 1.5×);
 *   - for a pull request touching 10 guests of a 10,000-guest estate with 20 ms Proxmox latency:
 *     the time from sending the webhook to the comment arriving at GitHub, the first time (nothing
 *     seen yet) and once the base commit was seen (targets 8 s and 2 s), with the GitHub and
 *     Proxmox requests each plan made.
 *
 * Usage: node --import tsx test/bench/app-bench.ts [--guests 10000] [--latency-ms 20] [--burst 200]
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { deliver, pullRequestEvent, signBody, type TestRepo } from '../app/deliveries.js';
import { GitHubDouble } from '../app/github-double.js';
import { appEnvironment, inspectQueue } from '../app/harness.js';
import { expectArchive, expectCheckRun, expectCommentEdit, expectNewComment } from '../app/plan-flow.js';
import { type AppProcess, spawnApp } from '../app/processes.js';
import { newSha, type RepoFiles } from '../app/spec-repo.js';
import { startRedisServer } from '../helpers/redis-server.js';
import {
  BENCH_LOWER,
  benchClusterYaml,
  benchGuestYaml,
  benchMac,
  percentile,
  resetSimStats,
  type SimProcess,
  simStats,
  startSimProcess,
} from './bench-kit.js';
import { compareWebhookBursts } from './webhook-burst.js';

const { values } = parseArgs({
  options: {
    guests: { type: 'string', default: '10000' },
    'latency-ms': { type: 'string', default: '20' },
    burst: { type: 'string', default: '200' },
  },
});
const guests = Number(values.guests);
const latencyMs = Number(values['latency-ms']);
const burst = Number(values.burst);
const NODES = ['pve-01', 'pve-02', 'pve-03'];
const LOWER = BENCH_LOWER;
const repo: TestRepo = { id: 777_001, owner: 'acme', name: 'estate' };

const guestYaml = (i: number, memory = 2048): string => benchGuestYaml(i, NODES, memory);
const CLUSTER = benchClusterYaml(NODES);

/** The spec repository: one file per guest; `touched` guests get `memory`. */
function estate(touched: ReadonlySet<number>, memory: number): RepoFiles {
  const files: RepoFiles = { 'cluster.yaml': CLUSTER };
  for (let i = 0; i < guests; i++) files[`guests/vm-${i}.yaml`] = guestYaml(i, touched.has(i) ? memory : 2048);
  return files;
}

const mac = benchMac;

/** The estate as Proxmox holds it after an apply of the base specs. */
function fixture(): unknown {
  return {
    nodes: NODES,
    guests: Array.from({ length: guests }, (_, i) => ({
      vmid: LOWER + i,
      type: 'qemu',
      node: NODES[i % NODES.length],
      running: false,
      config: {
        name: `vm-${i}`,
        memory: '2048',
        cores: '2',
        net0: `virtio=${mac(i)},bridge=vmbr0`,
        scsi0: `local-lvm:vm-${LOWER + i}-disk-0,size=32G`,
        tags: 'bench;pve-gitops',
        meta: 'creation-qemu=9.2.0,ctime=1700000000',
      },
    })),
  };
}

const ms = (n: number): string => `${n.toFixed(n < 10 ? 1 : 0)} ms`;

/** A delivery ready to send: body and headers computed before any timing starts. */
interface Prepared {
  body: string;
  headers: Record<string, string>;
}

function prepare(payload: unknown, secret: string): Prepared {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': signBody(secret, body),
    },
  };
}

/** Sends one prepared delivery; resolves with the time to the end of the answer. */
async function send(url: string, delivery: Prepared): Promise<number> {
  const started = performance.now();
  const response = await request(`${url}/api/github/webhooks`, { method: 'POST', headers: delivery.headers, body: delivery.body });
  await response.body.dump();
  if (response.statusCode !== 200) throw new Error(`webhook answered ${response.statusCode}`);
  return performance.now() - started;
}

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  return `p50 ${ms(percentile(sorted, 50))}, p99 ${ms(percentile(sorted, 99))}, max ${ms(sorted.at(-1) ?? 0)}`;
}

/**
 * The webhook answer latency of one web process: `burst` deliveries sent all at once, the same
 * number arriving evenly over one second, and one at a time. Each delivery is a pull request
 * push (the handler records the newest head and enqueues: two Redis round trips).
 */
async function webhookBurst(github: GitHubDouble, redisUrl: string): Promise<void> {
  const { env, webhookSecret } = appEnvironment(github, redisUrl, { LOG_LEVEL: 'info' });
  const web = await spawnApp('web', env);
  try {
    const batch = (): Prepared[] =>
      Array.from({ length: burst }, (_, i) =>
        prepare(
          pullRequestEvent({ action: 'synchronize', installationId: 1, repo, number: 1000 + i, headSha: newSha(), baseSha: newSha() }),
          webhookSecret,
        ),
      );
    // Warm-up: connections, JIT, BullMQ's script loading are not what is measured.
    for (const delivery of batch().slice(0, 20)) await send(web.url, delivery);
    const atOnce = batch();
    const onceTimes = await Promise.all(atOnce.map((delivery) => send(web.url, delivery)));
    const p99 = percentile(
      [...onceTimes].sort((a, b) => a - b),
      99,
    );
    process.stdout.write(
      `webhook answer, ${burst} deliveries sent at once to one web process: ${summary(onceTimes)}  [target p99 < 50 ms ${p99 < 50 ? '✓' : '✗'}]\n`,
    );
    const spread = batch();
    const spreadTimes = await Promise.all(
      spread.map(
        (delivery, i) =>
          new Promise<number>((resolve, reject) => setTimeout(() => send(web.url, delivery).then(resolve, reject), (i * 1000) / burst)),
      ),
    );
    process.stdout.write(`webhook answer, ${burst} deliveries over one second:                 ${summary(spreadTimes)}\n`);
    const sequential: number[] = [];
    for (const delivery of batch().slice(0, 50)) sequential.push(await send(web.url, delivery));
    process.stdout.write(`webhook answer, one at a time (50):                              ${summary(sequential)}\n`);
  } finally {
    await web.stop();
  }
}

interface PlanFigures {
  toComment: number;
  toCheck: number;
  github: string[];
  proxmox: number;
}

/** Sends one delivery and measures until the comment and the completed check run reach GitHub. */
async function timedPlan(
  app: AppProcess,
  github: GitHubDouble,
  sim: SimProcess,
  secret: string,
  step: {
    pr: number;
    action: 'opened' | 'synchronize';
    head: string;
    base: string;
    files: RepoFiles;
    baseFiles?: RepoFiles;
    commentId: number;
    checkId: number;
    at: string;
  },
): Promise<PlanFigures> {
  if (step.baseFiles) await expectArchive(github, repo, step.base, step.baseFiles);
  await expectArchive(github, repo, step.head, step.files);
  const check = expectCheckRun(github, repo, { headSha: step.head, pr: step.pr, id: step.checkId });
  const comment =
    step.action === 'opened'
      ? expectNewComment(github, repo, step.pr, step.commentId).created
      : expectCommentEdit(github, repo, step.commentId).edited;
  await resetSimStats(sim);
  const before = github.requests.length;
  const started = performance.now();
  const result = await deliver(app.url, {
    event: 'pull_request',
    secret,
    payload: pullRequestEvent({
      action: step.action,
      installationId: 1,
      repo,
      number: step.pr,
      headSha: step.head,
      baseSha: step.base,
      updatedAt: step.at,
    }),
  });
  if (result.status !== 200) throw new Error(`webhook answered ${result.status}: ${result.body}`);
  await comment.requested;
  const toComment = performance.now() - started;
  await check.completed.done;
  const toCheck = performance.now() - started;
  github.verify();
  return {
    toComment,
    toCheck,
    github: github.requests.slice(before).map((r) => `${r.method} ${r.path.replace(/[0-9a-f]{40}/, '<sha>')}`),
    proxmox: (await simStats(sim)).requests.total,
  };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-app-bench-'));
  const redis = await startRedisServer();
  const github = await GitHubDouble.start();
  let sim: SimProcess | undefined;
  let app: AppProcess | undefined;
  try {
    process.stdout.write(`App benchmark: Node ${process.version}, ${guests} guests, ${latencyMs} ms Proxmox latency\n\n`);
    await webhookBurst(github, redis.url);
    // The same burst beside a bare Probot 14 app with an empty handler: what the App adds to Probot's own work.
    const compared = await compareWebhookBursts(github, redis.url, { burst, rounds: 3 });
    process.stdout.write(
      `webhook answer, ${burst} at once, against a bare Probot app (medians of ${compared.rounds} rounds): ` +
        `p99 ${ms(compared.app.p99)} against ${ms(compared.bare.p99)}, ${compared.ratio.toFixed(2)}× ` +
        `[target ≤ 1.5× ${compared.ratio <= 1.5 ? '✓' : '✗'}]; CPU per burst ${ms(compared.app.cpu)} against ${ms(compared.bare.cpu)}, ${compared.cpuRatio.toFixed(2)}×\n`,
    );

    const fixturePath = join(dir, 'estate.json');
    await writeFile(fixturePath, JSON.stringify(fixture()));
    sim = await startSimProcess({ fixture: fixturePath, nodes: NODES, latencyMs, taskMs: 0 });
    const { env, prefix, webhookSecret } = appEnvironment(github, redis.url, {
      LOG_LEVEL: 'info',
      PVE_CLUSTER_BENCH_URL: sim.url,
      PVE_CLUSTER_BENCH_TOKEN: sim.token,
      PVE_CLUSTER_BENCH_READ_TOKEN: sim.auditToken,
      PVE_CLUSTER_BENCH_ALLOW_HTTP: '1',
    });
    app = await spawnApp('all', env);
    const queue = inspectQueue(redis.url, prefix);
    const base = newSha();
    const baseFiles = estate(new Set(), 2048);
    const touched = new Set(Array.from({ length: 10 }, (_, k) => Math.floor((k * guests) / 10)));
    const at = (n: number): string => new Date(Date.UTC(2030, 0, 1, 0, 0, n)).toISOString().replace('.000Z', 'Z');

    const steps = [
      {
        label: 'first plan (nothing seen: both archives, token)',
        pr: 1,
        action: 'opened' as const,
        head: newSha(),
        files: estate(touched, 4096),
        baseFiles,
        commentId: 11,
        checkId: 21,
        at: at(1),
      },
      {
        label: 'next push to the PR (base seen)',
        pr: 1,
        action: 'synchronize' as const,
        head: newSha(),
        files: estate(touched, 8192),
        commentId: 11,
        checkId: 22,
        at: at(2),
      },
      {
        label: 'another PR on the same base (base seen)',
        pr: 2,
        action: 'opened' as const,
        head: newSha(),
        files: estate(touched, 3072),
        commentId: 12,
        checkId: 23,
        at: at(3),
      },
    ];
    process.stdout.write(`\nPR touching 10 of ${guests} guests, App process 'serve --role all' (webhook → GitHub):\n`);
    for (const step of steps) {
      // Probot's throttling spaces one installation's writes a second apart (GitHub's advice against
      // secondary rate limits): a push sent the moment the previous plan's last write went out would
      // measure that queue, not the plan. People push seconds apart at the least.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const figures = await timedPlan(app, github, sim, webhookSecret, { ...step, base });
      const target = step.baseFiles ? 8000 : 2000;
      process.stdout.write(
        `  ${step.label.padEnd(50)} comment ${ms(figures.toComment).padStart(8)}  check completed ${ms(figures.toCheck).padStart(8)}  ` +
          `[target comment < ${target / 1000} s ${figures.toComment < target ? '✓' : '✗'}]\n` +
          `    GitHub requests: ${figures.github.length} (${figures.github.join(', ')})\n` +
          `    Proxmox requests: ${figures.proxmox}\n`,
      );
    }
    await queue.close();
  } finally {
    await app?.stop();
    await sim?.stop();
    await github.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
