/**
 * The webhook answer under a burst: `burst` signed pull_request deliveries sent at once to one
 * web process, timed from send to the end of each answer. Measured for `pve-gitops serve --role
 * web` and, in the same run, for a bare Probot 14 app with an empty handler (`bare-probot.ts`),
 * alternating rounds so both see the same machine load; the target is the ratio of their p99s.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { pullRequestEvent, signBody, type TestRepo } from '../app/deliveries.js';
import type { GitHubDouble } from '../app/github-double.js';
import { appEnvironment } from '../app/harness.js';
import { imageNodeFlags } from '../app/image-command.js';
import { spawnApp } from '../app/processes.js';
import { median, percentile } from './bench-kit.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const repo: TestRepo = { id: 777_002, owner: 'acme', name: 'estate' };

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

/** One web process under test. */
interface Target {
  url: string;
  secret: string;
  pid: number | undefined;
  stop(): Promise<unknown>;
}

/**
 * CPU time (user + system) a process has used, in ms, from /proc (Linux; undefined elsewhere): the
 * work a burst costs, which a machine shared with other jobs does not distort the way it does
 * wall-clock latency.
 */
function cpuMs(pid: number | undefined): number | undefined {
  const file = `/proc/${pid}/stat`;
  if (pid === undefined || !existsSync(file)) return undefined;
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const stat = readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / 100;
}

async function bareProbot(github: GitHubDouble): Promise<Target> {
  const secret = `whsec-${randomBytes(16).toString('hex')}`;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'test/bench/bare-probot.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', APP_ID: String(github.app.id), PRIVATE_KEY: github.app.privateKeyPem, WEBHOOK_SECRET: secret },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n').find((l) => l.includes('"bare probot serving"'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`bare Probot exited with ${code}`)));
  });
  // Its log is read, as a real deployment's would be, so the pipe never fills.
  child.stdout?.resume();
  return {
    url,
    secret,
    pid: child.pid,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(0);
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

async function pveGitopsWeb(github: GitHubDouble, redisUrl: string): Promise<Target> {
  // Run as the image runs it: with the node flags of its ENTRYPOINT.
  const { env, webhookSecret } = appEnvironment(github, redisUrl, { LOG_LEVEL: 'info', NODE_OPTIONS: imageNodeFlags().join(' ') });
  const web = await spawnApp('web', env);
  return { url: web.url, secret: webhookSecret, pid: web.child.pid, stop: () => web.stop() };
}

/** p50, p99 and max of one burst, in ms. */
export interface BurstFigures {
  p50: number;
  p99: number;
  max: number;
  /** CPU ms the web process used for the burst (NaN where /proc is missing). */
  cpu: number;
}

function figures(times: readonly number[], cpu: number): BurstFigures {
  const sorted = [...times].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0, cpu };
}

/** Both apps' bursts: the medians over `rounds` of each figure, and the median of the per-round p99 ratios. */
export interface BurstComparison {
  app: BurstFigures;
  bare: BurstFigures;
  /** Median over the rounds of app p99 / bare p99, each pair measured back to back. */
  ratio: number;
  /** Median over the rounds of app CPU / bare CPU per burst. */
  cpuRatio: number;
  rounds: number;
}

async function burstOf(target: Target, burst: number, pr: number): Promise<BurstFigures> {
  const batch = Array.from({ length: burst }, (_, i) =>
    prepare(
      pullRequestEvent({
        action: 'synchronize',
        installationId: 1,
        repo,
        number: pr + i,
        headSha: randomBytes(20).toString('hex'),
        baseSha: randomBytes(20).toString('hex'),
      }),
      target.secret,
    ),
  );
  const before = cpuMs(target.pid) ?? Number.NaN;
  const times = await Promise.all(batch.map((delivery) => send(target.url, delivery)));
  return figures(times, (cpuMs(target.pid) ?? Number.NaN) - before);
}

/** Measures `rounds` bursts of `burst` deliveries at once on each app, alternating. */
export async function compareWebhookBursts(
  github: GitHubDouble,
  redisUrl: string,
  options: { burst: number; rounds: number; log?: (line: string) => void },
): Promise<BurstComparison> {
  const app = await pveGitopsWeb(github, redisUrl);
  const bare = await bareProbot(github);
  try {
    // Warm-up: connections, JIT, BullMQ's script loading are not what is measured. Three bursts
    // of the measured size each, alternating: after three of 20 the JIT was still compiling the
    // App's larger path (BullMQ, ioredis) through the first measured rounds, which then fell
    // from about 2× to 1.5× bare Probot's CPU as a long-running web process's do.
    for (let i = 0; i < 3; i++) for (const target of [app, bare]) await burstOf(target, options.burst, 1 + i * options.burst);
    const appRounds: BurstFigures[] = [];
    const bareRounds: BurstFigures[] = [];
    const ratios: number[] = [];
    const cpuRatios: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      const a = await burstOf(app, options.burst, 1000 + round * options.burst);
      const b = await burstOf(bare, options.burst, 1000 + round * options.burst);
      appRounds.push(a);
      bareRounds.push(b);
      ratios.push(a.p99 / b.p99);
      cpuRatios.push(a.cpu / b.cpu);
      options.log?.(
        `  round ${round + 1}: p99 ${a.p99.toFixed(0)} ms against ${b.p99.toFixed(0)} ms (${(a.p99 / b.p99).toFixed(2)}×); ` +
          `CPU ${a.cpu.toFixed(0)} ms against ${b.cpu.toFixed(0)} ms (${(a.cpu / b.cpu).toFixed(2)}×)\n`,
      );
    }
    const med = (rounds: BurstFigures[], key: keyof BurstFigures) => median(rounds.map((r) => r[key]));
    return {
      app: { p50: med(appRounds, 'p50'), p99: med(appRounds, 'p99'), max: med(appRounds, 'max'), cpu: med(appRounds, 'cpu') },
      bare: { p50: med(bareRounds, 'p50'), p99: med(bareRounds, 'p99'), max: med(bareRounds, 'max'), cpu: med(bareRounds, 'cpu') },
      ratio: median(ratios),
      cpuRatio: median(cpuRatios),
      rounds: options.rounds,
    };
  } finally {
    await app.stop();
    await bare.stop();
  }
}
