/**
 * Import benchmark: `pve-gitops import` of a generated unmanaged estate of 1,000 guests
 * (`unmanaged-estate.ts`) against `pve-gitops drift` of the same estate with the specs that import
 * wrote — both read one listing and one `…/pending` per guest, so the import should cost about what
 * the drift report costs (issue 19's target: within 1.2×). The import also reads each guest's
 * firewall file (four requests more a guest, which drift makes only for guests whose spec has
 * `firewall:`); `import --no-firewall` is timed too, the like-for-like figure. The simulator runs in its own process
 * (TLS, 20 ms per request); each command runs as a child process, timed from spawn to exit, with
 * its peak RSS from `/usr/bin/time` when present. Prints medians with the spread of several runs.
 *
 *   node --import tsx test/bench/import-bench.ts [--guests 1000] [--runs 5] [--bin dist/bin.js]
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DIST_BIN, median, SOURCE_BIN, startSimProcess, tableRow } from './bench-kit.js';
import { CLUSTER, NODES, unmanagedEstateFixture } from './unmanaged-estate.js';

const { values } = parseArgs({
  options: {
    guests: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '5' },
    'latency-ms': { type: 'string', default: '20' },
    bin: { type: 'string' },
  },
});
const GUESTS = Number(values.guests);
const RUNS = Number(values.runs);
const LATENCY_MS = Number(values['latency-ms']);
const BIN = values.bin ?? (existsSync(DIST_BIN) ? DIST_BIN : SOURCE_BIN);
const TIME = '/usr/bin/time';

interface Timed {
  code: number;
  ms: number;
  rssMiB?: number;
  stdout: string;
  stderr: string;
}

/** One command line run as a child process, from spawn to exit. */
async function run(args: string[], env: NodeJS.ProcessEnv, rssFile: string): Promise<Timed> {
  const node = [...(BIN.endsWith('.ts') ? ['--import', 'tsx'] : []), BIN, ...args];
  const measured = existsSync(TIME);
  const child = measured
    ? spawn(TIME, ['-f', '%M', '-o', rssFile, process.execPath, ...node], { env: { ...process.env, ...env } })
    : spawn(process.execPath, node, { env: { ...process.env, ...env } });
  const started = performance.now();
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status) => resolve(status ?? 1));
  });
  const ms = performance.now() - started;
  const rss = measured ? Number((await readFile(rssFile, 'utf8')).trim().split('\n').pop()) : Number.NaN;
  return { code, ms, ...(Number.isFinite(rss) ? { rssMiB: rss / 1024 } : {}), stdout, stderr };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-import-bench-'));
  const fixture = join(dir, 'estate.json');
  await writeFile(fixture, JSON.stringify(unmanagedEstateFixture(GUESTS)));
  const sim = await startSimProcess({ bin: BIN, fixture, nodes: NODES, latencyMs: LATENCY_MS, tls: true, stderr: 'ignore' });
  const prefix = `PVE_CLUSTER_${CLUSTER.toUpperCase()}_`;
  const env: NodeJS.ProcessEnv = {
    [`${prefix}URL`]: sim.url,
    [`${prefix}TOKEN`]: sim.token,
    [`${prefix}READ_TOKEN`]: sim.auditToken,
    ...(sim.caFile ? { [`${prefix}CA_FILE`]: sim.caFile } : {}),
  };
  process.stdout.write(
    `import benchmark: ${GUESTS} unmanaged guests, ${LATENCY_MS} ms latency per Proxmox request, 16 in flight (the default), TLS, simulator in its own process, ${BIN.endsWith('.ts') ? 'source through tsx' : 'built CLI'}, Node ${process.version}\n\n`,
  );
  const rssFile = join(dir, 'rss');
  const imports: Timed[] = [];
  const plainImports: Timed[] = [];
  const drifts: Timed[] = [];
  const specs = join(dir, 'specs');
  try {
    // The specs the drift runs read: an import's, which describe every guest.
    const first = await run(['import', '--out', specs], env, rssFile);
    if (first.code !== 0) throw new Error(`import exited ${first.code}: ${first.stdout.slice(-500)}${first.stderr}`);
    // Alternated, so a busy moment of the shared machine falls on both alike.
    for (let r = 0; r < RUNS; r++) {
      const out = join(dir, `import-${r}`);
      const imported = await run(['import', '--out', out], env, rssFile);
      if (!imported.stdout.includes(`${GUESTS} guests imported`))
        throw new Error(`import did not import every guest: ${imported.stdout.slice(-300)}`);
      imports.push(imported);
      await rm(out, { recursive: true, force: true });
      const plain = await run(['import', '--out', out, '--no-firewall'], env, rssFile);
      if (!plain.stdout.includes(`${GUESTS} guests imported`))
        throw new Error(`import --no-firewall did not import every guest: ${plain.stdout.slice(-300)}`);
      plainImports.push(plain);
      await rm(out, { recursive: true, force: true });
      const drift = await run(['drift', '--specs', specs, '--format', 'json', '--out', join(dir, 'drift.json')], env, rssFile);
      if (drift.code === 1) throw new Error(`drift exited 1: ${drift.stderr}`);
      drifts.push(drift);
    }
  } finally {
    await sim.stop();
  }
  const widths = [22, 30, 30, 12];
  const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
  const spread = (xs: readonly number[]): string => `${s(median(xs))} (${s(Math.min(...xs))}–${s(Math.max(...xs))})`;
  const rss = (runs: readonly Timed[]): string => {
    const xs = runs.flatMap((r) => (r.rssMiB === undefined ? [] : [r.rssMiB]));
    return xs.length ? `${Math.max(...xs).toFixed(0)} MiB` : 'n/a';
  };
  process.stdout.write(`${tableRow(widths, ['command', `median of ${RUNS} (min–max)`, 'peak RSS', ''])}\n`);
  process.stdout.write(`${tableRow(widths, ['import', spread(imports.map((r) => r.ms)), rss(imports), ''])}\n`);
  process.stdout.write(`${tableRow(widths, ['import --no-firewall', spread(plainImports.map((r) => r.ms)), rss(plainImports), ''])}\n`);
  process.stdout.write(`${tableRow(widths, ['drift', spread(drifts.map((r) => r.ms)), rss(drifts), ''])}\n`);
  const ratio = median(imports.map((r) => r.ms)) / median(drifts.map((r) => r.ms));
  const plainRatio = median(plainImports.map((r) => r.ms)) / median(drifts.map((r) => r.ms));
  process.stdout.write(`\nimport / drift: ${ratio.toFixed(2)}× (firewall files read too)\n`);
  process.stdout.write(`import --no-firewall / drift: ${plainRatio.toFixed(2)}× (target ≤ 1.2× ${plainRatio <= 1.2 ? '✓' : '✗'})\n`);
  await rm(dir, { recursive: true, force: true });
}

await main();
