/**
 * Every registered kind conforms (docs/adding-a-kind.md): a schema per document and its entry in the
 * editors' JSON Schema, its operations, a phase, a test factory, simulator routes and, for the kinds
 * of the generic pipeline, the functions and the Proxmox adapter. Then each kind's sample is planned
 * against a real simulator over HTTP, applied, and planned again: the second plan must be empty.
 */
import { describe, expect, it } from 'vitest';
import type { KindFacts, ObjectKind } from '../../src/core/kinds/kind.js';
import { KINDS, OBJECT_KINDS } from '../../src/core/kinds/registry.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { adaptedKinds } from '../../src/pve/kinds/adapters.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';
import { kindProblems } from './conformance.js';

describe('the kind registry', () => {
  it('holds kinds with unique names and unique document names', () => {
    const names = KINDS.map((k) => k.name);
    expect(new Set(names).size).toBe(names.length);
    const documents = KINDS.flatMap((k) => k.documents.map((d) => d.name));
    expect(new Set(documents).size).toBe(documents.length);
    expect(documents).not.toContain('Cluster');
  });

  it.each(KINDS.map((kind) => [kind.name, kind] as const))('%s conforms', (_name, kind) => {
    expect(kindProblems(kind, adaptedKinds())).toEqual([]);
  });

  it('finds everything missing in a deliberately incomplete kind', () => {
    const incomplete = {
      name: 'widget',
      documents: [{ name: 'Widget', schema: undefined }],
      phase: 'sometime',
      hasNode: false,
      operations: [],
      simRoutes: ['widgets'],
      plan: () => [],
    } as unknown as KindFacts;
    expect(kindProblems(incomplete, adaptedKinds())).toEqual([
      'widget: no apply phase (one of referenced, guests, guest-parts)',
      'widget: declares no operations',
      'widget: has no test factory',
      "widget: the simulator has no route module 'widgets'",
      'widget: document Widget has no schema',
      'widget: document Widget has no entry in the JSON Schema for editors',
      'widget: has no load',
      'widget: has no validate',
      'widget: has no observe',
      'widget: has no checkStored',
      'widget: has no label',
      'widget: has no describe',
      'widget: has no execute',
      'widget: has no Proxmox adapter (src/pve/kinds/adapters.ts)',
    ]);
  });

  it('finds a kind that nothing can ask for', () => {
    const orphan = { ...(KINDS[0] as KindFacts), name: 'nothing', documents: [] } as KindFacts;
    expect(kindProblems(orphan, adaptedKinds())).toContain(
      'nothing: declares no document and no key on guest documents: nothing can ask for it',
    );
  });
});

describe('each kind against the simulator', () => {
  /** A simulator of its own per kind: one kind's sample guests are no orphans of another's. */
  async function withSimulator(fn: (reader: PveClusterAdapter, writer: PveClusterAdapter) => Promise<void>): Promise<void> {
    const sim: RunningSimulator = await startSimulator({ port: 0, nodes: ['pve-01'], taskMs: 1, clusterName: 'lab' });
    const read = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
    const write = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
    try {
      await fn(new PveClusterAdapter(read, { wait: { intervalMs: 5 } }), new PveClusterAdapter(write, { wait: { intervalMs: 5 } }));
    } finally {
      await Promise.allSettled([read.close(), write.close()]);
      await sim.close();
    }
  }

  it.each(KINDS.map((kind) => [kind.name, kind] as const))(
    '%s: its sample plans, applies, and then plans no change',
    async (_name, kind) => {
      await withSimulator(async (reader, writer) => {
        const loaded = loadSpecs([{ path: `${kind.name}.yaml`, text: kind.testFactory().yaml }]);
        expect(loaded.errors).toEqual([]);
        const first = await runPlan({ head: loaded.specs, readers: { lab: reader } });
        expect(first.errors).toEqual([]);
        const ofKind = kind.name === 'guest' ? first.guests : first.objects.filter((item) => item.kind === kind.name);
        expect(ofKind.length).toBeGreaterThan(0);
        for (const item of ofKind) expect(item.errors).toEqual([]);
        // Every operation an item holds is one its kind declares.
        for (const item of ofKind) for (const op of item.operations as { op: string }[]) expect(kind.operations).toContain(op.op);
        const result = await executePlan(first, { lab: writer });
        const statuses = [...result.guests, ...(result.objects ?? [])].map(
          (r) => `${'key' in r ? r.key : r.vmid}: ${r.status} ${r.error ?? ''}`,
        );
        expect(statuses.filter((line) => !/: (applied|unchanged) $/.test(line))).toEqual([]);
        const again = await runPlan({ head: loaded.specs, readers: { lab: reader } });
        const left = [...again.guests, ...again.objects]
          .filter((item) => item.action !== 'noop')
          .map((item) => `${item.key}: ${item.action}`);
        expect(left).toEqual([]);
      });
    },
  );

  it('registers every generic kind with a describe for each of its operations', () => {
    for (const kind of OBJECT_KINDS as readonly ObjectKind[]) {
      for (const op of kind.operations) expect(() => kind.describe({ op })).not.toThrow();
    }
  });
});
