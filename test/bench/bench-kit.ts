/**
 * Plumbing the benchmarks share: the simulator started in a process of its own (as a cluster is
 * remote to the App), its request counters, and the statistics and table rows they print.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent, Pool, request } from 'undici';

/** The CLI run from source (through tsx), the default of {@link startSimProcess}. */
export const SOURCE_BIN = fileURLToPath(new URL('../../src/bin.ts', import.meta.url));

/** The built CLI (`npm run build`). */
export const DIST_BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));

/** A simulator running in a child process. */
export interface SimProcess {
  url: string;
  /** A token allowed to write. */
  token: string;
  /** A read-only token. */
  auditToken: string;
  /** With `tls`: the CA certificate file that signs the simulator's certificate. */
  caFile?: string;
  stop(): Promise<void>;
}

/** Options of {@link startSimProcess}; a flag left out is the simulator's own default. */
export interface SimProcessOptions {
  fixture: string;
  nodes: readonly string[];
  /** The CLI to run: a `.ts` file runs through tsx (default: {@link SOURCE_BIN}). */
  bin?: string;
  latencyMs?: number;
  taskMs?: number;
  tls?: boolean;
  /** Where the simulator's stderr goes (default: this process's stderr). */
  stderr?: 'inherit' | 'ignore';
}

/** Starts `pve-gitops sim` on a free port and resolves once it has printed where it listens. */
export async function startSimProcess(options: SimProcessOptions): Promise<SimProcess> {
  const bin = options.bin ?? SOURCE_BIN;
  const args = [...(bin.endsWith('.ts') ? ['--import', 'tsx'] : []), bin, 'sim', '--port', '0', '--nodes', options.nodes.join(',')];
  if (options.tls) args.push('--tls');
  if (options.latencyMs !== undefined) args.push('--latency-ms', String(options.latencyMs));
  if (options.taskMs !== undefined) args.push('--task-ms', String(options.taskMs));
  args.push('--fixture', options.fixture);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', options.stderr ?? 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
  });
  const info = JSON.parse(line) as { url: string; token: string; auditToken: string; caFile?: string };
  return {
    ...info,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** What the simulator counts (the part the benchmarks read). */
export interface SimStats {
  requests: { total: number };
  writes: { total: number };
}

/** Calls a `_sim` route (they need no token); over TLS trusts the simulator's own CA. */
async function simRoute(sim: { url: string; caFile?: string }, route: 'stats' | 'reset-stats'): Promise<unknown> {
  const dispatcher = sim.caFile ? new Agent({ connect: { ca: await readFile(sim.caFile, 'utf8') } }) : undefined;
  try {
    const res = await request(`${sim.url}/_sim/${route}`, { method: route === 'stats' ? 'GET' : 'POST', dispatcher });
    return await res.body.json();
  } finally {
    await dispatcher?.close();
  }
}

/** The simulator's counters. */
export async function simStats(sim: { url: string; caFile?: string }): Promise<SimStats> {
  return (await simRoute(sim, 'stats')) as SimStats;
}

/** Sets the simulator's counters back to zero. */
export async function resetSimStats(sim: { url: string; caFile?: string }): Promise<void> {
  await simRoute(sim, 'reset-stats');
}

/**
 * The floor of a command's reads: a bare undici Pool of `connections` (fresh, so it opens its
 * connections and TLS sessions as the command does) sends the first of `paths` alone — the
 * listing every read waits for — then the others, `connections` at a time. Resolves with the
 * milliseconds from the first request to the last answer.
 */
export async function bareReads(
  sim: { url: string; caFile?: string },
  token: string,
  paths: readonly string[],
  connections: number,
): Promise<number> {
  const pool = new Pool(sim.url, {
    connections,
    pipelining: 1,
    ...(sim.caFile ? { connect: { ca: await readFile(sim.caFile, 'utf8') } } : {}),
  });
  const headers = { authorization: `PVEAPIToken=${token}`, accept: 'application/json' };
  const get = async (path: string): Promise<void> => {
    const res = await pool.request({ method: 'GET', path: `/api2/json${path}`, headers });
    await res.body.text();
    if (res.statusCode !== 200) throw new Error(`GET ${path}: HTTP ${res.statusCode}`);
  };
  try {
    const started = performance.now();
    const [first, ...rest] = paths;
    if (first !== undefined) await get(first);
    let next = 0;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < rest.length) await get(rest[next++]!);
      }),
    );
    return performance.now() - started;
  } finally {
    await pool.close();
  }
}

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** The nearest-rank `p`th percentile of ascending `sorted`. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** Runs `fn` and says how long it took, in milliseconds. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await fn();
  return { result, ms: performance.now() - started };
}

/** A table row: each cell padded to its column's width (10 past the given widths). */
export function tableRow(widths: readonly number[], cells: readonly (string | number)[]): string {
  return cells.map((c, i) => String(c).padEnd(widths[i] ?? 10)).join(' ');
}

/** First VMID of the benchmark estates. */
export const BENCH_LOWER = 100000;

/** The `bench` Cluster document of an estate on `nodes`. */
export function benchClusterYaml(nodes: readonly string[]): string {
  return `kind: Cluster\nname: bench\nvmids: { lower: ${BENCH_LOWER}, upper: 200000 }\nownerTag: pve-gitops\nnodes: [${nodes.join(', ')}]\n`;
}

/** The spec of guest `i` of a benchmark estate: `vm-<i>` at VMID 100000 + i, spread over `nodes`. */
export function benchGuestYaml(i: number, nodes: readonly string[], memory: number = 2048): string {
  return [
    'kind: VM',
    `name: vm-${i}`,
    'cluster: bench',
    `node: ${nodes[i % nodes.length]}`,
    `vmid: ${BENCH_LOWER + i}`,
    'config:',
    `  memory: ${memory}`,
    '  cores: 2',
    '  net0: virtio,bridge=vmbr0',
    '  scsi0: local-lvm:32',
    '  tags: [bench]',
    '',
  ].join('\n');
}

/**
 * Guest `i` of a benchmark estate as Proxmox holds it once its spec was applied (fixture form):
 * the MAC and volume Proxmox filled in, the owner tag, `boot` and `meta`; `config` changes or adds
 * keys (a value changed by hand, keys a benchmark needs).
 */
export function benchAppliedGuest(i: number, nodes: readonly string[], config: Record<string, string> = {}): unknown {
  return {
    vmid: BENCH_LOWER + i,
    type: 'qemu',
    node: nodes[i % nodes.length],
    running: i % 2 === 0,
    config: {
      name: `vm-${i}`,
      memory: '2048',
      cores: '2',
      net0: `virtio=${benchMac(i)},bridge=vmbr0`,
      scsi0: `local-lvm:vm-${BENCH_LOWER + i}-disk-0,size=32G`,
      tags: 'bench;pve-gitops',
      boot: 'order=scsi0;net0',
      meta: 'creation-qemu=9.2.0,ctime=1700000000',
      ...config,
    },
  };
}

/** A stable MAC for guest `i`, as Proxmox would have generated one. */
export function benchMac(i: number): string {
  return ['BC', '24', '11', ...[16, 8, 0].map((shift) => ((i >> shift) & 255).toString(16).padStart(2, '0').toUpperCase())].join(':');
}
