/**
 * Whole commands of two builds, interleaved run by run so both see the same machine: what the
 * build itself (one bundle or many modules) changes in the wait a user sees. Each round runs every
 * command once with each build, in turn:
 *
 *   - `drift --help` (start-up and loading a command, no work);
 *   - `validate` of 1,000 guests in 25 files and of 10,000 guests in 250 files;
 *   - `plan --base` of a 10-guest change in 10,000 guests, against the simulator (TLS, 20 ms);
 *   - `drift` of 1,000 guests at 20 ms per request;
 *   - `serve --role web` from spawn until it serves (its log line), against a real Redis; its
 *     CPU up to then is read from /proc.
 *
 * Prints the median wall time and CPU time (user + system, `/usr/bin/time`) of each, and the ratio.
 *
 *   npm run build && node --import tsx test/bench/start-up-bench.ts --baseline OTHER/dist/bin.js [--bin dist/bin.js] [--runs 7]
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { GitHubDouble } from '../app/github-double.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { DIST_BIN, median, startSimProcess, tableRow } from './bench-kit.js';
import { estateFiles, estateFixture, NODES, writeEstate } from './estate.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    bin: { type: 'string', default: DIST_BIN },
    baseline: { type: 'string' },
    only: { type: 'string', default: 'help,validate-1k,validate-10k,plan,drift,serve' },
  },
});
if (values.baseline === undefined) throw new Error('--baseline BIN: the build to compare with (such as main built elsewhere)');
const BUILDS = { baseline: values.baseline, bin: values.bin } as const;
type Build = keyof typeof BUILDS;
const RUNS = Number(values.runs);
const ONLY = new Set(values.only.split(','));
const TIME = '/usr/bin/time';
const CLOCK_TICK_S = 0.01;

interface Sample {
  ms: number;
  cpuS: number;
}

/** Runs the command line as a process to its exit; rejects on an exit code `ok` refuses. */
async function command(bin: string, args: string[], env: NodeJS.ProcessEnv, ok: (code: number) => boolean, dir: string): Promise<Sample> {
  const timeFile = join(dir, 'time');
  const started = performance.now();
  const child = spawn(TIME, ['-f', '%U %S', '-o', timeFile, process.execPath, bin, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (status) => resolve(status ?? 1));
  });
  const ms = performance.now() - started;
  if (!ok(code)) throw new Error(`${bin} ${args.join(' ')} exited ${code}:\n${stderr}`);
  const [user = 0, sys = 0] = (await readFile(timeFile, 'utf8')).trim().split('\n').pop()!.split(' ').map(Number);
  return { ms, cpuS: user + sys };
}

/** `serve --role web` from spawn until it serves; its CPU so far from /proc; then stopped. */
async function serveStart(bin: string, env: Record<string, string>): Promise<Sample> {
  const started = performance.now();
  const child = spawn(process.execPath, [bin, 'serve', '--role', 'web'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stderr }).on('line', (l) => {
      if (l.includes('"msg":"pve-gitops App serving"')) resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code} before serving`)));
  });
  const ms = performance.now() - started;
  // Fields 14 and 15 of /proc/PID/stat: user and system time in clock ticks.
  const stat = (await readFile(`/proc/${child.pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const cpuS = (Number(stat[11]) + Number(stat[12])) * CLOCK_TICK_S;
  void line;
  child.kill('SIGTERM');
  await exited;
  return { ms, cpuS };
}

interface Case {
  label: string;
  run(bin: string): Promise<Sample>;
}

async function main(): Promise<void> {
  for (const bin of Object.values(BUILDS)) if (!existsSync(bin)) throw new Error(`${bin} is missing: build it first`);
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-start-up-'));
  const stops: (() => Promise<void>)[] = [];
  const loadBefore = loadavg()[0] ?? 0;
  try {
    const small = estateFiles(1000, { kind: 'grouped', files: 25 });
    const base = estateFiles(10_000, { kind: 'grouped', files: 250 });
    const head = estateFiles(10_000, { kind: 'grouped', files: 250 }, { guests: [40, 41, 42, 43, 44, 45, 46, 47, 48, 49], memory: '6144' });
    await writeEstate(join(dir, 'small'), small);
    await writeEstate(join(dir, 'base'), base);
    await writeEstate(join(dir, 'head'), head);
    const cases: Case[] = [];
    const succeeds = (code: number): boolean => code === 0;
    if (ONLY.has('help')) cases.push({ label: '`drift --help`', run: (bin) => command(bin, ['drift', '--help'], {}, succeeds, dir) });
    if (ONLY.has('validate-1k'))
      cases.push({
        label: '`validate`, 1,000 guests',
        run: (bin) => command(bin, ['validate', '--specs', join(dir, 'small')], {}, succeeds, dir),
      });
    if (ONLY.has('validate-10k'))
      cases.push({
        label: '`validate`, 10,000 guests',
        run: (bin) => command(bin, ['validate', '--specs', join(dir, 'head')], {}, succeeds, dir),
      });
    const changes = (code: number): boolean => code === 2;
    const simEnv = async (fixture: unknown, name: string): Promise<NodeJS.ProcessEnv> => {
      const file = join(dir, `${name}.json`);
      await writeFile(file, JSON.stringify(fixture));
      const sim = await startSimProcess({ bin: BUILDS.baseline, fixture: file, nodes: NODES, latencyMs: 20, taskMs: 50, tls: true });
      stops.push(() => sim.stop());
      return {
        PVE_CLUSTER_LAB_URL: sim.url,
        PVE_CLUSTER_LAB_TOKEN: sim.token,
        PVE_CLUSTER_LAB_READ_TOKEN: sim.auditToken,
        PVE_CLUSTER_LAB_CA_FILE: sim.caFile,
      };
    };
    if (ONLY.has('plan')) {
      const env = await simEnv(estateFixture(base), 'estate-10000');
      cases.push({
        label: '`plan --base`, 10 of 10,000 guests',
        run: (bin) =>
          command(bin, ['plan', '--specs', join(dir, 'head'), '--base', join(dir, 'base'), '--format', 'json'], env, changes, dir),
      });
    }
    if (ONLY.has('drift')) {
      // 1,000 guests whose live state differs from the specs in memory: drift finds them all.
      await writeEstate(join(dir, 'drift'), estateFiles(1000, { kind: 'grouped', files: 25 }));
      const live = estateFiles(1000, { kind: 'grouped', files: 25 }, { guests: [1, 2, 3], memory: '6144' });
      const env = await simEnv(estateFixture(live), 'estate-1000');
      cases.push({
        label: '`drift`, 1,000 guests at 20 ms',
        run: (bin) => command(bin, ['drift', '--specs', join(dir, 'drift')], env, changes, dir),
      });
    }
    if (ONLY.has('serve')) {
      const redis = await startRedisServer();
      stops.push(() => redis.stop());
      const github = await GitHubDouble.start();
      stops.push(() => github.close());
      const env: Record<string, string> = {
        APP_ID: String(github.app.id),
        PRIVATE_KEY: github.app.privateKeyPem,
        WEBHOOK_SECRET: 'start-up-bench',
        GHE_HOST: github.host,
        GHE_PROTOCOL: 'http',
        REDIS_URL: redis.url,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        DRIFT_INTERVAL: '0',
      };
      cases.push({ label: '`serve --role web` until serving', run: (bin) => serveStart(bin, env) });
    }

    const samples = new Map<string, Record<Build, Sample[]>>(cases.map((c) => [c.label, { baseline: [], bin: [] }]));
    for (let round = 0; round < RUNS; round++) {
      process.stderr.write(`round ${round + 1}/${RUNS}\n`);
      for (const c of cases) {
        // Alternate which build goes first, so neither always runs on a machine the other warmed.
        const order: Build[] = round % 2 === 0 ? ['baseline', 'bin'] : ['bin', 'baseline'];
        for (const build of order) samples.get(c.label)![build].push(await c.run(BUILDS[build]));
      }
    }

    const widths = [36, 22, 22, 14];
    const lines = [
      `Builds, interleaved, medians of ${RUNS} (load ${loadBefore.toFixed(1)} before, ${(loadavg()[0] ?? 0).toFixed(1)} after):`,
      `  baseline ${BUILDS.baseline}`,
      `  bin      ${BUILDS.bin}`,
      '',
      tableRow(widths, ['command', 'baseline wall / CPU', 'bin wall / CPU', 'bin/baseline']),
      tableRow(widths, ['---', '---', '---', '---']),
    ];
    for (const c of cases) {
      const s = samples.get(c.label)!;
      const wall = (b: Build): number => median(s[b].map((x) => x.ms)) / 1000;
      const cpu = (b: Build): number => median(s[b].map((x) => x.cpuS));
      lines.push(
        tableRow(widths, [
          c.label,
          `${wall('baseline').toFixed(2)} s / ${cpu('baseline').toFixed(2)} s`,
          `${wall('bin').toFixed(2)} s / ${cpu('bin').toFixed(2)} s`,
          `${(wall('bin') / wall('baseline')).toFixed(2)}x / ${(cpu('bin') / cpu('baseline')).toFixed(2)}x`,
        ]),
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const stop of stops.reverse()) await stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
