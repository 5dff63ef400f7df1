/**
 * Pools end to end through the product's own pipeline against the simulator over HTTP: specs
 * loaded from YAML, `runPlan` (observe + plan), `executePlan` (the phases: pools, then guests,
 * then memberships), and a re-plan that finds nothing to do; a pull request that moves a guest to
 * another pool; a guest moved out of its pool on the cluster reported as drift.
 */
import { describe, expect, it } from 'vitest';
import type { PoolPort } from '../../src/core/kinds/pool/port.js';
import type { ObjectPlan, Plan, SpecSet } from '../../src/core/model.js';
import { renderPlanText } from '../../src/core/render/render-text.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { changed, labSpecs, usePipelineLab } from './pipeline-lab.js';

function specs(opts: { webComment: string; appPool: string; webPool?: string }): SpecSet {
  return labSpecs([
    `kind: Pool\nname: web\ncluster: lab\ncomment: ${opts.webComment}\n`,
    'kind: Pool\nname: db\ncluster: lab\n',
    `kind: VM\nname: web-01\ncluster: lab\nnode: pve-01\nvmid: 200\npool: ${opts.webPool ?? 'web'}\nconfig: { memory: 512 }\n`,
    `kind: VM\nname: app-01\ncluster: lab\nnode: pve-01\nvmid: 201\npool: ${opts.appPool}\nconfig: { memory: 512 }\n`,
  ]);
}

const lab = usePipelineLab({ pools: [] });

function objects(plan: Plan): Record<string, Pick<ObjectPlan, 'action' | 'operations'>> {
  return Object.fromEntries(plan.objects.map((o) => [o.key, { action: o.action, operations: o.operations }]));
}

describe('pools through the pipeline', () => {
  it('creates pools, then guests, then their memberships; a re-plan has nothing to do', async () => {
    const head = specs({ webComment: 'Web servers', appPool: 'db' });
    const plan = await runPlan({ head, readers: { lab: lab.reader } });
    expect(plan.errors).toEqual([]);
    // Pools first, memberships after the guests they follow.
    expect(plan.objects.map((o) => o.key)).toEqual(['lab/pool/db', 'lab/pool/web', 'lab/pool-member/200', 'lab/pool-member/201']);
    expect(objects(plan)['lab/pool-member/200']).toEqual({
      action: 'update',
      operations: [{ op: 'join-pool', vmid: 200, pool: 'web', from: null }],
    });
    expect(renderPlanText(plan)).toContain('pool web');
    expect((await lab.apply(plan)).sort()).toEqual([
      'lab/200: applied',
      'lab/201: applied',
      'lab/pool-member/200: applied',
      'lab/pool-member/201: applied',
      'lab/pool/db: applied',
      'lab/pool/web: applied',
    ]);
    expect(lab.sim.sim.poolOf(200)).toBe('web');
    expect(lab.sim.sim.poolOf(201)).toBe('db');
    expect(lab.sim.sim.pools.get('web')?.comment).toBe('Web servers');
    expect(changed(await runPlan({ head, readers: { lab: lab.reader } }))).toEqual([]);
  });

  it('moves a guest to another pool in a pull request: only what changed is planned, then applied', async () => {
    const base = specs({ webComment: 'Web servers', appPool: 'db' });
    await lab.apply(await runPlan({ head: base, readers: { lab: lab.reader } }));
    const head = specs({ webComment: 'Frontends', appPool: 'web' });
    const pr = await runPlan({ head, base, readers: { lab: lab.reader } });
    expect(pr.errors).toEqual([]);
    expect(objects(pr)).toEqual({
      'lab/pool/web': { action: 'update', operations: [{ op: 'update-pool', poolid: 'web', comment: 'Frontends', from: 'Web servers' }] },
      'lab/pool-member/201': { action: 'update', operations: [{ op: 'join-pool', vmid: 201, pool: 'web', from: 'db', allowMove: true }] },
    });
    expect((await lab.apply(pr)).filter((line) => line.includes('pool'))).toEqual([
      'lab/pool/web: applied',
      'lab/pool-member/201: applied',
    ]);
    expect(lab.sim.sim.poolOf(201)).toBe('web');
    expect(changed(await runPlan({ head, readers: { lab: lab.reader } }))).toEqual([]);
  });

  it('reports a guest moved out of its pool on the cluster as drift, and nothing else', async () => {
    const head = specs({ webComment: 'Web servers', appPool: 'db' });
    await lab.apply(await runPlan({ head, readers: { lab: lab.reader } }));
    await lab.client.request('PUT', '/pools', { poolid: 'web', vms: '200', delete: 1 });
    const { drifted, report } = await lab.drift(head);
    expect(drifted).toEqual([['lab/pool-member/200', [{ key: 'pool', expected: 'web' }]]]);
    expect(report.problems).toEqual([]);
    expect(report.objects?.map((o) => [o.key, o.findings.map((f) => [f.key, f.expected, f.actual])])).toEqual([
      ['lab/pool-member/200', [['pool', 'web', undefined]]],
    ]);
  });

  it('refuses a guest pool that is neither declared nor on the cluster', async () => {
    const head = specs({ webComment: 'Web servers', appPool: 'ghost' });
    const plan = await runPlan({ head, readers: { lab: lab.reader } });
    const ghost = plan.objects.find((o) => o.key === 'lab/pool/ghost');
    expect(ghost?.action).toBe('error');
    expect(ghost?.errors[0]).toContain("pool 'ghost', named by app-01 (201), is neither a Pool document nor on cluster 'lab'");
  });

  it('refuses it on a cluster without any Pool document too', async () => {
    const head = labSpecs(['kind: VM\nname: app-01\ncluster: lab\nnode: pve-01\nvmid: 201\npool: ghost\nconfig: { memory: 512 }\n']);
    const plan = await runPlan({ head, readers: { lab: lab.reader } });
    const ghost = plan.objects.find((o) => o.key === 'lab/pool/ghost');
    expect(ghost?.action).toBe('error');
    expect(ghost?.errors[0]).toContain("pool 'ghost', named by app-01 (201), is neither a Pool document nor on cluster 'lab'");
  });

  it('creates a nested pool only once its parent, planned in the same phase, exists', async () => {
    const head = labSpecs(['kind: Pool\nname: team/web\ncluster: lab\n', 'kind: Pool\nname: team\ncluster: lab\n']);
    const plan = await runPlan({ head, readers: { lab: lab.reader } });
    expect(changed(plan)).toEqual(['lab/pool/team: create', 'lab/pool/team/web: create']);
    // The pool port's calls in the order they are made and end.
    const calls: string[] = [];
    const port = lab.writer.kindPort('pool') as PoolPort;
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
    const writes = new Proxy(lab.writer, { get: (target, key) => (key === 'kindPort' ? () => logged : Reflect.get(target, key)) });
    // The child first in the list: it still waits for its parent before it even reads.
    const result = await executePlan({ ...plan, objects: [...plan.objects].reverse() }, { lab: writes });
    expect((result.objects ?? []).map((o) => `${o.key}: ${o.status}${o.error ? ` (${o.error})` : ''}`).sort()).toEqual([
      'lab/pool/team/web: applied',
      'lab/pool/team: applied',
    ]);
    expect(calls.indexOf('read team/web')).toBeGreaterThan(calls.indexOf('created team'));
    expect([...lab.sim.sim.pools.keys()].sort()).toEqual(['team', 'team/web']);
  });
});
