/**
 * Rehearsal benchmark: a pull request changing 10 guests of an estate of 10,000 (and smaller ones),
 * the simulator in its own process with 20 ms latency per request as a cluster across a network.
 * Prints, per estate size, the plan's time and requests beside the rehearsal's: the reads of the
 * copy's cluster facts and the apply on the in-process copy — and the CPU the rehearsal takes in
 * this process (the copy's simulator, the apply, the client), which other load on the machine
 * disturbs less than its time. Target: the rehearsal adds less than half of the plan's time
 * (docs/rehearsal.md).
 *
 * Usage: node --import tsx test/bench/rehearse-bench.ts [--sizes 1000,10000] [--latency-ms 20] [--runs 3]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { rehearsePlan } from '../../src/engine/rehearse/rehearse-plan.js';
import { observePlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { openRehearsalSandbox } from '../../src/pve/rehearse/sandbox.js';
import { median, resetSimStats, simStats, startSimProcess, tableRow, timed } from './bench-kit.js';
import { estateFiles, estateFixture, NODES } from './estate.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000' },
    'latency-ms': { type: 'string', default: '20' },
    runs: { type: 'string', default: '3' },
  },
});
const sizes = values.sizes.split(',').map(Number);
const latencyMs = Number(values['latency-ms']);
const runs = Number(values.runs);

const WIDTHS = [8, 10, 10, 12, 12, 12, 10, 8];
console.log(`rehearsal of a 10-guest pull request, ${latencyMs} ms latency per request, median of ${runs} runs`);
console.log(tableRow(WIDTHS, ['guests', 'plan ms', 'plan req', 'rehearse ms', 'rehearse req', 'rehearse cpu', 'added', 'target']));

const dir = await mkdtemp(join(tmpdir(), 'pve-rehearse-bench-'));
try {
  for (const n of sizes) {
    const layout = { kind: 'grouped', files: Math.max(1, Math.round(n / 50)) } as const;
    const baseFiles = estateFiles(n, layout);
    // Ten guests spread over the estate, so they sit on several nodes.
    const changed = Array.from({ length: 10 }, (_, k) => Math.floor((k * n) / 10) + (k % 4) + 1);
    const head = loadSpecs(estateFiles(n, layout, { guests: changed, memory: '8192' })).specs;
    const base = loadSpecs(baseFiles).specs;
    const fixturePath = join(dir, `estate-${n}.json`);
    await writeFile(fixturePath, JSON.stringify(estateFixture(baseFiles)));
    const sim = await startSimProcess({ fixture: fixturePath, nodes: NODES, latencyMs, taskMs: 0 });
    const client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, concurrency: 16 });
    const readers = { lab: new PveClusterAdapter(client) };
    try {
      const planMs: number[] = [];
      const rehearseMs: number[] = [];
      const rehearseCpuMs: number[] = [];
      let planRequests = 0;
      let rehearseRequests = 0;
      for (let run = 0; run < runs; run++) {
        await resetSimStats(sim);
        const planned = await timed(() => observePlan({ head, base, readers }));
        planMs.push(planned.ms);
        planRequests = (await simStats(sim)).requests.total;
        await resetSimStats(sim);
        const cpu = process.cpuUsage();
        const rehearsed = await timed(() =>
          rehearsePlan({ plan: planned.result.plan, observed: planned.result.observed, readers, openSandbox: openRehearsalSandbox }),
        );
        rehearseMs.push(rehearsed.ms);
        const used = process.cpuUsage(cpu);
        rehearseCpuMs.push((used.user + used.system) / 1000);
        rehearseRequests = (await simStats(sim)).requests.total;
        const applied = rehearsed.result.guests.filter((g) => g.status === 'applied').length;
        if (applied !== 10) throw new Error(`expected 10 guests applied on the copy, got ${applied}: ${JSON.stringify(rehearsed.result)}`);
      }
      const p = median(planMs);
      const r = median(rehearseMs);
      console.log(
        tableRow(WIDTHS, [
          n,
          p.toFixed(0),
          planRequests,
          r.toFixed(0),
          rehearseRequests,
          median(rehearseCpuMs).toFixed(0),
          `${((100 * r) / p).toFixed(0)}%`,
          r < p / 2 ? 'met' : 'MISSED',
        ]),
      );
    } finally {
      await client.close();
      await sim.stop();
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
