/**
 * Guest firewall benchmark: one VM with N rules on the in-process simulator, changed by a spec in
 * the ways a reviewer meets (one rule moved to the top, the list reversed, a seeded shuffle, ten
 * edits with ten additions and ten removals), planned and applied by the firewall kind over HTTP.
 *
 * Printed per change: the operations the plan shows a reviewer, the rule writes the apply sent
 * (and of them `moveto`s), the API requests the apply made (every write is followed by a re-read,
 * since `POST rules` checks no digest), the plan's and the apply's wall time, and whether a
 * re-plan was empty.
 *
 * Usage: node --import tsx test/bench/firewall-bench.ts [--rules 200]
 */
import { parseArgs } from 'node:util';
import { type FirewallObserved, firewallKind } from '../../src/core/kinds/firewall/firewall-kind.js';
import type { FirewallRule } from '../../src/core/kinds/firewall/port.js';
import type { GuestPlan, GuestSpec, ObjectPlan } from '../../src/core/model.js';
import { PveClient } from '../../src/pve/client.js';
import { FirewallAdapter } from '../../src/pve/kinds/firewall-adapter.js';
import { startSimulator } from '../../src/pve/sim/index.js';

const { values } = parseArgs({ options: { rules: { type: 'string', default: '200' } } });
const N = Number(values.rules);
const TARGET = { node: 'pve-01', type: 'qemu', vmid: 100 } as const;

const rule = (i: number, dport = 1000 + i): FirewallRule => ({
  type: 'in',
  action: 'ACCEPT',
  enable: true,
  proto: 'tcp',
  dport: String(dport),
  comment: `r${i}`,
});
const specRule = (r: FirewallRule) => ({ type: r.type, action: r.action, proto: r.proto, dport: r.dport, comment: r.comment });

/** A seeded shuffle (mulberry32), so every run measures the same permutation. */
function shuffled<T>(list: readonly T[], seed = 20): T[] {
  let a = seed;
  const random = (): number => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const live = Array.from({ length: N }, (_, i) => rule(i));
const CHANGES: { name: string; want: FirewallRule[] }[] = [
  { name: 'last rule to the top', want: [live[N - 1] as FirewallRule, ...live.slice(0, N - 1)] },
  { name: 'reversed', want: [...live].reverse() },
  { name: 'shuffled', want: shuffled(live) },
  {
    name: '10 edited, 10 added, 10 removed',
    want: [
      ...live.slice(10).map((r, i) => (i < 10 ? { ...r, dport: String(9000 + i) } : r)),
      ...Array.from({ length: 10 }, (_, i) => rule(N + i)),
    ],
  },
];

function guest(rules: FirewallRule[]): GuestSpec {
  return {
    kind: 'VM',
    type: 'qemu',
    name: 'web-01',
    cluster: 'lab',
    node: 'pve-01',
    vmid: 100,
    vmidDerived: false,
    power: 'ignore',
    state: 'present',
    adopt: false,
    ignore: [],
    config: {},
    refs: { firewall: { rules: rules.map(specRule) } },
    source: { file: 'bench.yaml', line: 1, col: 1 },
  };
}

async function plan(port: FirewallAdapter, spec: GuestSpec): Promise<ObjectPlan> {
  const observed: FirewallObserved = await firewallKind.observe(port, {
    cluster: 'lab',
    head: [],
    base: [],
    headGuests: [spec],
    baseGuests: [],
  });
  const guestPlan = { cluster: 'lab', vmid: 100, action: 'noop' } as GuestPlan;
  const [item] = firewallKind.plan({
    cluster: 'lab',
    head: [],
    headGuests: [spec],
    baseGuests: [],
    guestPlans: [guestPlan],
    full: true,
    observed,
  });
  return item as ObjectPlan;
}

const rows: string[][] = [['change', 'plan ops', 'rule writes', 'moveto', 'requests', 'plan ms', 'apply ms', 're-plan']];
for (const change of CHANGES) {
  const sim = await startSimulator({
    port: 0,
    taskMs: 1,
    clusterName: 'lab',
    fixture: { guests: [{ vmid: 100, type: 'qemu', node: 'pve-01', config: 'name: web-01\n' }] },
  });
  const client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
  const port = new FirewallAdapter(client);
  try {
    for (const r of [...live].reverse()) await port.createRule(TARGET, r);
    const spec = guest(change.want);
    let started = performance.now();
    const item = await plan(port, spec);
    const planMs = performance.now() - started;
    sim.sim.resetStats();
    started = performance.now();
    const outcome = await firewallKind.execute(item, port, {});
    const applyMs = performance.now() - started;
    const requests = sim.sim.stats().requests.total;
    if (outcome.status !== 'applied') throw new Error(`${change.name}: ${outcome.status} ${outcome.error ?? ''}`);
    const writes = outcome.steps.filter((s) => s.op === 'fw-rule');
    const again = await plan(port, spec);
    rows.push([
      change.name,
      String(item.operations.length),
      String(writes.length),
      String(writes.filter((s) => s.detail?.startsWith('moved')).length),
      String(requests),
      planMs.toFixed(0),
      applyMs.toFixed(0),
      again.action === 'noop' ? 'empty' : `${again.operations.length} left`,
    ]);
  } finally {
    await client.close();
    await sim.close();
  }
}

console.log(`guest firewall, ${N} rules on one VM (in-process simulator over HTTP)`);
const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
for (const r of rows) console.log(r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
