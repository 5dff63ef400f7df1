/**
 * Adopting drift benchmark: what `pve-gitops adopt` and `/pve adopt` add to a drift read — the
 * live values taken into the spec files (each document found, edited in place and read back) and
 * the edited repository loaded again to check it — for estates of 1,000 and 10,000 guests (one
 * file per guest, as `pve-gitops import` writes them, and 100 guests per file), with 1% and 100%
 * of the guests drifted (memory and cores changed). The reading of the clusters is the drift
 * report's, measured by `drift-bench.ts`; this is the rest. Median of 5 runs.
 *
 * Usage: node --import tsx test/bench/adopt-bench.ts [--sizes 1000,10000] [--runs 5]
 */
import { parseArgs } from 'node:util';
import { adoptDrift } from '../../src/core/adopt/adopt-drift.js';
import type { DriftReport } from '../../src/core/drift/drift-report.js';
import { loadSpecs, type SpecFile } from '../../src/core/spec/load-specs.js';
import { BENCH_LOWER, benchClusterYaml, benchGuestYaml, tableRow } from './bench-kit.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000' },
    runs: { type: 'string', default: '5' },
  },
});
const sizes = values.sizes.split(',').map(Number);
const RUNS = Number(values.runs);
const NODES = ['pve-01', 'pve-02', 'pve-03'];

/** The repository: one file per guest, or `perFile` guests per file. */
function files(n: number, perFile: number): SpecFile[] {
  const out: SpecFile[] = [{ path: 'cluster.yaml', text: benchClusterYaml(NODES) }];
  for (let start = 0; start < n; start += perFile) {
    const docs: string[] = [];
    for (let i = start; i < Math.min(n, start + perFile); i++) docs.push(`# guest ${i}\n${benchGuestYaml(i, NODES)}`);
    out.push({ path: `guests/vm-${start}.yaml`, text: docs.join('---\n') });
  }
  return out;
}

/** A drift report in which every `every`-th guest had memory and cores changed by hand. */
function report(n: number, every: number): DriftReport {
  const guests: DriftReport['guests'] = [];
  for (let i = 0; i < n; i += every) {
    const vmid = BENCH_LOWER + i;
    const finding = (key: string, expected: string, actual: string) => ({
      id: `bench/${vmid}#${key}`,
      kind: 'config' as const,
      key,
      expected,
      actual,
      firstSeen: '2030-01-01T00:00:00.000Z',
    });
    guests.push({
      cluster: 'bench',
      name: `vm-${i}`,
      vmid,
      node: NODES[i % NODES.length]!,
      type: 'qemu',
      findings: [finding('memory', '2048', '4096'), finding('cores', '2', '4')],
    });
  }
  return {
    ref: 'main',
    checkedAt: '2030-01-01T00:00:00.000Z',
    clusters: [],
    problems: [],
    guests,
    pending: [],
    guestErrors: [],
    expiredAllows: [],
    allowed: 0,
    firstSeen: {},
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

const WIDTHS = [8, 16, 10, 10, 12, 14];
process.stdout.write(`adopt benchmark: adoptDrift on a loaded repository, median of ${RUNS} runs, Node ${process.version}\n\n`);
process.stdout.write(`${tableRow(WIDTHS, ['guests', 'layout', 'drifted', 'values', 'files', 'time'])}\n`);
for (const n of sizes) {
  for (const perFile of [1, 100]) {
    const repo = files(n, perFile);
    const loaded = loadSpecs(repo);
    if (loaded.errors.length > 0) throw new Error(loaded.errors[0]?.message);
    for (const every of [100, 1]) {
      const drift = report(n, every);
      const times: number[] = [];
      let result: ReturnType<typeof adoptDrift> | undefined;
      for (let run = 0; run < RUNS; run++) {
        const started = performance.now();
        result = adoptDrift({ report: drift, specs: loaded.specs, files: repo });
        times.push(performance.now() - started);
      }
      const layout = perFile === 1 ? 'file per guest' : `${perFile} per file`;
      process.stdout.write(
        `${tableRow(WIDTHS, [n, layout, `${100 / every}%`, result?.adopted.length ?? 0, result?.files.length ?? 0, `${median(times).toFixed(0)} ms`])}\n`,
      );
    }
  }
}
