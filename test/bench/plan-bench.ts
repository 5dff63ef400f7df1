/**
 * Plan benchmark: for estates of 100, 1,000 and 10,000 guests on the simulator with 20 ms
 * latency per request, measures
 *   - a pull request touching 10 guests (scope = the change): time, requests, peak memory;
 *   - a full drift read of every owned guest: time, requests;
 *   - a naive client that reads every guest's config one after another and writes what differs,
 *     as the baseline (it has no notion of scope, so it reads the whole estate for any change).
 * The simulator runs in its own process so the figures are the planner's alone.
 *
 * Usage: node --import tsx test/bench/plan-bench.ts [--sizes 100,1000,10000] [--latency-ms 20] [--concurrency 16]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import type { GuestSpec, SpecSet } from '../../src/core/model.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { runDrift, runPlan } from '../../src/engine/run-plan.js';
import { makeClusterSpec, makeGuestSpec } from '../helpers/factories.js';
import {
  BENCH_LOWER,
  benchAppliedGuest,
  DIST_BIN,
  resetSimStats,
  type SimProcess,
  simStats,
  startSimProcess,
  tableRow,
} from './bench-kit.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100,1000,10000' },
    'latency-ms': { type: 'string', default: '20' },
    'naive-limit': { type: 'string', default: '1000' },
    /** Requests in flight to the cluster (the connection's concurrency setting). */
    concurrency: { type: 'string', default: '16' },
  },
});
const concurrency = Number(values.concurrency);
const sizes = values.sizes.split(',').map(Number);
const latencyMs = Number(values['latency-ms']);
const naiveLimit = Number(values['naive-limit']);
const NODES = ['pve-01', 'pve-02', 'pve-03'];
const LOWER = BENCH_LOWER;

const cluster = makeClusterSpec({ name: 'bench', vmids: { lower: LOWER, upper: 200000 }, nodes: NODES });

function guestSpec(i: number, memory = '2048'): GuestSpec {
  return makeGuestSpec({
    name: `vm-${i}`,
    cluster: 'bench',
    node: NODES[i % NODES.length]!,
    vmid: LOWER + i,
    config: { memory, cores: '2', net0: 'virtio,bridge=vmbr0', scsi0: 'local-lvm:32', tags: 'bench' },
    source: { file: `guests/vm-${i}.yaml`, line: 1, col: 1 },
  });
}

/** The estate as Proxmox would hold it after an apply of the specs. */
function fixture(n: number): unknown {
  const guests = Array.from({ length: n }, (_v, i) =>
    benchAppliedGuest(i, NODES, { smbios1: 'uuid=00000000-0000-4000-8000-000000000000', vmgenid: '00000000-0000-4000-8000-000000000001' }),
  );
  return { nodes: NODES, guests };
}

/** Runs `fn` while sampling the heap; returns its time and the peak heap growth. */
async function measure<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number; peakHeapMb: number }> {
  global.gc?.();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 5);
  const started = performance.now();
  try {
    const result = await fn();
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    return { result, ms: performance.now() - started, peakHeapMb: (peak - base) / 2 ** 20 };
  } finally {
    clearInterval(timer);
  }
}

/**
 * The baseline, as most scripts do it: every guest's config read one after another, compared,
 * and written (without a digest) when it differs. Returns how many guests it wrote.
 */
async function naive(sim: SimProcess, specs: GuestSpec[]): Promise<number> {
  const headers = { authorization: `PVEAPIToken=${sim.token}` };
  let written = 0;
  for (const g of specs) {
    const path = `${sim.url}/api2/json/nodes/${g.node}/qemu/${g.vmid}/config`;
    const res = await request(path, { headers });
    const body = (await res.body.json()) as { data: Record<string, unknown> };
    if (String(body.data.memory) === g.config.memory) continue;
    const put = await request(path, {
      method: 'PUT',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ memory: g.config.memory ?? '' }).toString(),
    });
    await put.body.dump();
    written += 1;
  }
  return written;
}

const WIDTHS = [8, 30, 12, 10, 12, 10];
const row = (cells: (string | number)[]): string => tableRow(WIDTHS, cells);

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-bench-'));
  process.stdout.write(
    `plan benchmark: ${latencyMs} ms latency per request, ${concurrency} requests in flight, simulator in its own process, Node ${process.version}\n\n`,
  );
  process.stdout.write(`${row(['guests', 'scenario', 'time', 'requests', 'peak heap', 'target'])}\n`);
  try {
    for (const n of sizes) {
      const fixturePath = join(dir, `estate-${n}.json`);
      await writeFile(fixturePath, JSON.stringify(fixture(n)));
      const sim = await startSimProcess({ bin: DIST_BIN, fixture: fixturePath, nodes: NODES, latencyMs, taskMs: 0 });
      const client = new PveClient({ cluster: 'bench', url: sim.url, token: sim.auditToken, readOnly: true, concurrency });
      const readers = { bench: new PveClusterAdapter(client) };
      try {
        const baseGuests = Array.from({ length: n }, (_, i) => guestSpec(i));
        const base: SpecSet = { clusters: [cluster], guests: baseGuests };
        const touched = new Set(Array.from({ length: 10 }, (_, k) => Math.floor((k * n) / 10)));
        const head: SpecSet = { clusters: [cluster], guests: baseGuests.map((g, i) => (touched.has(i) ? guestSpec(i, '4096') : g)) };

        await resetSimStats(sim);
        const pr = await measure(() => runPlan({ head, base, readers }));
        const prRequests = (await simStats(sim)).requests.total;
        const prOk = pr.result.summary.update === 10 && pr.ms < 500 && prRequests <= 12;
        process.stdout.write(
          `${row([n, 'PR touching 10 guests', `${pr.ms.toFixed(0)} ms`, prRequests, `${pr.peakHeapMb.toFixed(1)} MB`, n === 10000 ? `<500 ms, ≤12 req ${prOk ? '✓' : '✗'}` : ''])}\n`,
        );

        await resetSimStats(sim);
        const drift = await measure(() => runDrift({ head: base, readers }));
        const driftRequests = (await simStats(sim)).requests.total;
        const driftOk = drift.ms < 2000;
        process.stdout.write(
          `${row([n, 'full drift read (all guests)', `${drift.ms.toFixed(0)} ms`, driftRequests, `${drift.peakHeapMb.toFixed(1)} MB`, n === 1000 ? `<2000 ms ${driftOk ? '✓' : '✗'}` : ''])}\n`,
        );
        if (drift.result.summary.drifted !== 0 || drift.result.summary.noop !== n) {
          throw new Error(
            `drift read found ${drift.result.summary.drifted} drifted, ${drift.result.summary.noop} unchanged of ${n}: the fixture does not match the specs`,
          );
        }

        const sample = head.guests.slice(0, Math.min(n, naiveLimit));
        await resetSimStats(sim);
        const baseline = await measure(() => naive(sim, sample));
        const naiveRequests = (await simStats(sim)).requests.total;
        const extrapolated = sample.length < n;
        const naiveMs = (baseline.ms * n) / sample.length;
        process.stdout.write(
          `${row([n, `naive read-then-write${extrapolated ? ' (extrap.)' : ''}`, `${(naiveMs / 1000).toFixed(1)} s`, extrapolated ? `~${Math.round((naiveRequests * n) / sample.length)}` : naiveRequests, `${baseline.peakHeapMb.toFixed(1)} MB`, extrapolated ? `from ${sample.length}` : ''])}\n`,
        );
      } finally {
        await client.close();
        await sim.stop();
      }
    }
    const rss = process.resourceUsage().maxRSS / 1024;
    process.stdout.write(`\npeak RSS of the benchmark process (planner side): ${rss.toFixed(0)} MB\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
