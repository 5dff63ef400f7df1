/**
 * Pools end to end through the product's own pipeline against the simulator over HTTP: specs
 * loaded from YAML, `runPlan` (observe + plan), `executePlan` (the phases: pools, then guests,
 * then memberships), and a re-plan that finds nothing to do; a pull request that moves a guest to
 * another pool; a guest moved out of its pool on the cluster reported as drift.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PoolPort } from '../../src/core/kinds/pool/port.js';
import type { ObjectPlan, Plan, SpecSet } from '../../src/core/model.js';
import { buildDriftReport } from '../../src/core/drift/drift-report.js';
import { renderPlanText } from '../../src/core/render/render-text.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { observeDrift, runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100, upper: 1000 }\nnodes: [pve-01]\n';

function specs(opts: { webComment: string; appPool: string; webPool?: string }): SpecSet {
  const yaml = [
    CLUSTER,
    `kind: Pool\nname: web\ncluster: lab\ncomment: ${opts.webComment}\n`,
    'kind: Pool\nname: db\ncluster: lab\n',
    `kind: VM\nname: web-01\ncluster: lab\nnode: pve-01\nvmid: 200\npool: ${opts.webPool ?? 'web'}\nconfig: { memory: 512 }\n`,
    `kind: VM\nname: app-01\ncluster: lab\nnode: pve-01\nvmid: 201\npool: ${opts.appPool}\nconfig: { memory: 512 }\n`,
  ].join('---\n');
  const loaded = loadSpecs([{ path: 'lab.yaml', text: yaml }]);
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  return loaded.specs;
}

let sim: RunningSimulator;
let clients: PveClient[];
let reader: PveClusterAdapter;
let writer: PveClusterAdapter;

beforeEach(async () => {
  sim = await startSimulator({ port: 0, nodes: ['pve-01'], taskMs: 1, clusterName: 'lab', fixture: { pools: [] } });
  const read = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
  const write = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
  clients = [read, write];
  reader = new PveClusterAdapter(read, { wait: { intervalMs: 5 } });
  writer = new PveClusterAdapter(write, { wait: { intervalMs: 5 } });
});
afterEach(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await sim.close();
});

function objects(plan: Plan): Record<string, Pick<ObjectPlan, 'action' | 'operations'>> {
  return Object.fromEntries(plan.objects.map((o) => [o.key, { action: o.action, operations: o.operations }]));
}

function changed(plan: Plan): string[] {
  return [...plan.guests, ...plan.objects].filter((item) => item.action !== 'noop').map((item) => `${item.key}: ${item.action}`);
}

async function apply(plan: Plan): Promise<string[]> {
  const result = await executePlan(plan, { lab: writer });
  return [...result.guests.map((g) => `lab/${g.vmid}: ${g.status}`), ...(result.objects ?? []).map((o) => `${o.key}: ${o.status}`)];
}

describe('pools through the pipeline', () => {
  it('creates pools, then guests, then their memberships; a re-plan has nothing to do', async () => {
    const head = specs({ webComment: 'Web servers', appPool: 'db' });
    const plan = await runPlan({ head, readers: { lab: reader } });
    expect(plan.errors).toEqual([]);
    // Pools first, memberships after the guests they follow.
    expect(plan.objects.map((o) => o.key)).toEqual(['lab/pool/db', 'lab/pool/web', 'lab/pool-member/200', 'lab/pool-member/201']);
    expect(objects(plan)['lab/pool-member/200']).toEqual({
      action: 'update',
      operations: [{ op: 'join-pool', vmid: 200, pool: 'web', from: null }],
    });
    expect(renderPlanText(plan)).toContain('pool web');
    expect((await apply(plan)).sort()).toEqual([
      'lab/200: applied',
      'lab/201: applied',
      'lab/pool-member/200: applied',
      'lab/pool-member/201: applied',
      'lab/pool/db: applied',
      'lab/pool/web: applied',
    ]);
    expect(sim.sim.poolOf(200)).toBe('web');
    expect(sim.sim.poolOf(201)).toBe('db');
    expect(sim.sim.pools.get('web')?.comment).toBe('Web servers');
    expect(changed(await runPlan({ head, readers: { lab: reader } }))).toEqual([]);
  });

  it('moves a guest to another pool in a pull request: only what changed is planned, then applied', async () => {
    const base = specs({ webComment: 'Web servers', appPool: 'db' });
    await apply(await runPlan({ head: base, readers: { lab: reader } }));
    const head = specs({ webComment: 'Frontends', appPool: 'web' });
    const pr = await runPlan({ head, base, readers: { lab: reader } });
    expect(pr.errors).toEqual([]);
    expect(objects(pr)).toEqual({
      'lab/pool/web': { action: 'update', operations: [{ op: 'update-pool', poolid: 'web', comment: 'Frontends', from: 'Web servers' }] },
      'lab/pool-member/201': { action: 'update', operations: [{ op: 'join-pool', vmid: 201, pool: 'web', from: 'db', allowMove: true }] },
    });
    expect((await apply(pr)).filter((line) => line.includes('pool'))).toEqual(['lab/pool/web: applied', 'lab/pool-member/201: applied']);
    expect(sim.sim.poolOf(201)).toBe('web');
    expect(changed(await runPlan({ head, readers: { lab: reader } }))).toEqual([]);
  });

  it('reports a guest moved out of its pool on the cluster as drift, and nothing else', async () => {
    const head = specs({ webComment: 'Web servers', appPool: 'db' });
    await apply(await runPlan({ head, readers: { lab: reader } }));
    const writes = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
    clients.push(writes);
    await writes.request('PUT', '/pools', { poolid: 'web', vms: '200', delete: 1 });
    const { plan, observed } = await observeDrift({ head, readers: { lab: reader } });
    const drifted = [...plan.guests, ...plan.objects].filter((item) => item.drift.length > 0);
    expect(drifted.map((item) => [item.key, item.drift])).toEqual([['lab/pool-member/200', [{ key: 'pool', expected: 'web' }]]]);
    const report = buildDriftReport({ plan, observed, specs: head, now: new Date(), ref: 'main' });
    expect(report.problems).toEqual([]);
    expect(report.objects?.map((o) => [o.key, o.findings.map((f) => [f.key, f.expected, f.actual])])).toEqual([
      ['lab/pool-member/200', [['pool', 'web', undefined]]],
    ]);
  });

  it('creates a nested pool only once its parent, planned in the same phase, exists', async () => {
    const loaded = loadSpecs([
      {
        path: 'lab.yaml',
        text: [CLUSTER, 'kind: Pool\nname: team/web\ncluster: lab\n', 'kind: Pool\nname: team\ncluster: lab\n'].join('---\n'),
      },
    ]);
    const plan = await runPlan({ head: loaded.specs, readers: { lab: reader } });
    expect(changed(plan)).toEqual(['lab/pool/team: create', 'lab/pool/team/web: create']);
    // The pool port's calls in the order they are made and end.
    const calls: string[] = [];
    const port = writer.kindPort('pool') as PoolPort;
    const logged: PoolPort = {
      listPools: () => port.listPools(),
      memberships: () => port.memberships(),
      auditsEveryPool: () => port.auditsEveryPool(),
      updatePool: (poolid, update) => port.updatePool(poolid, update),
      deletePool: (poolid) => port.deletePool(poolid),
      readPool: (poolid) => {
        calls.push(`read ${poolid}`);
        return port.readPool(poolid);
      },
      createPool: async (poolid, comment) => {
        await port.createPool(poolid, comment);
        calls.push(`created ${poolid}`);
      },
    };
    const writes = new Proxy(writer, { get: (target, key) => (key === 'kindPort' ? () => logged : Reflect.get(target, key)) });
    // The child first in the list: it still waits for its parent before it even reads.
    const result = await executePlan({ ...plan, objects: [...plan.objects].reverse() }, { lab: writes });
    expect((result.objects ?? []).map((o) => `${o.key}: ${o.status}${o.error ? ` (${o.error})` : ''}`).sort()).toEqual([
      'lab/pool/team/web: applied',
      'lab/pool/team: applied',
    ]);
    expect(calls.indexOf('read team/web')).toBeGreaterThan(calls.indexOf('created team'));
    expect([...sim.sim.pools.keys()].sort()).toEqual(['team', 'team/web']);
  });

  it('refuses a guest pool that is neither declared nor on the cluster', async () => {
    const head = specs({ webComment: 'Web servers', appPool: 'ghost' });
    const plan = await runPlan({ head, readers: { lab: reader } });
    const ghost = plan.objects.find((o) => o.key === 'lab/pool/ghost');
    expect(ghost?.action).toBe('error');
    expect(ghost?.errors[0]).toContain("pool 'ghost', named by app-01 (201), is neither a Pool document nor on cluster 'lab'");
  });

  it('refuses it on a cluster without any Pool document too', async () => {
    const yaml = [CLUSTER, 'kind: VM\nname: app-01\ncluster: lab\nnode: pve-01\nvmid: 201\npool: ghost\nconfig: { memory: 512 }\n'].join(
      '---\n',
    );
    const loaded = loadSpecs([{ path: 'lab.yaml', text: yaml }]);
    expect(loaded.errors).toEqual([]);
    const plan = await runPlan({ head: loaded.specs, readers: { lab: reader } });
    const ghost = plan.objects.find((o) => o.key === 'lab/pool/ghost');
    expect(ghost?.action).toBe('error');
    expect(ghost?.errors[0]).toContain("pool 'ghost', named by app-01 (201), is neither a Pool document nor on cluster 'lab'");
  });
});
