/**
 * What the kinds' end-to-end tests share: a one-node simulated `lab` (pve-01, VMIDs 100–999) with
 * the product's cluster adapters over the audit token (plans, drift) and the admin token (applies,
 * and edits made on the cluster behind the specs' back), specs loaded from YAML after lab's Cluster
 * document, and the summaries of a plan, an apply and a drift run the tests compare.
 */
import { expect } from 'vitest';
import { buildDriftReport, type DriftReport } from '../../src/core/drift/drift-report.js';
import type { Plan, SpecSet } from '../../src/core/model.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { observeDrift } from '../../src/engine/run-plan.js';
import type { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';
import { useKindSimulator } from './kind-simulator.js';

/** lab's Cluster document. */
export const LAB_CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100, upper: 1000 }\nnodes: [pve-01]\n';

/** What each test gets: made afresh before each test. */
export interface PipelineLab {
  readonly sim: RunningSimulator;
  /** Over the audit token: what plans and drift runs read with. */
  readonly reader: PveClusterAdapter;
  /** Over the admin token: what applies write with. */
  readonly writer: PveClusterAdapter;
  /** The admin token's client, for changes made on the cluster itself. */
  readonly client: PveClient;
  /** Applies `plan` on lab; `key: status` of every guest and object. */
  apply(plan: Plan): Promise<string[]>;
  /** A drift run of `head` on lab: each drifted item's key and findings, and the drift report. */
  drift(head: SpecSet): Promise<{ drifted: unknown[]; report: DriftReport }>;
}

interface LabParts {
  sim: RunningSimulator;
  reader: PveClusterAdapter;
  writer: PveClusterAdapter;
  client: PveClient;
}

/**
 * Registers the hooks of the file's tests and returns the lab they use, which is a fresh one in
 * each test (read its parts inside the tests, not when the file is loaded).
 */
export function usePipelineLab(fixture: SimFixture = {}): PipelineLab {
  let parts: LabParts | undefined;
  const current = (): LabParts => {
    if (!parts) throw new Error('the pipeline lab is only there while a test runs');
    return parts;
  };
  useKindSimulator(
    { nodes: ['pve-01'], ...fixture },
    (client) => ({ client, cluster: new PveClusterAdapter(client, { wait: { intervalMs: 5 } }) }),
    (kit) => {
      parts = { sim: kit.sim, reader: kit.reader.cluster, writer: kit.writer.cluster, client: kit.writer.client };
    },
  );
  return {
    get sim() {
      return current().sim;
    },
    get reader() {
      return current().reader;
    },
    get writer() {
      return current().writer;
    },
    get client() {
      return current().client;
    },
    async apply(plan) {
      const result = await executePlan(plan, { lab: current().writer });
      return [...result.guests.map((g) => `lab/${g.vmid}: ${g.status}`), ...(result.objects ?? []).map((o) => `${o.key}: ${o.status}`)];
    },
    async drift(head) {
      const { plan, observed } = await observeDrift({ head, readers: { lab: current().reader } });
      const drifted = [...plan.guests, ...plan.objects].filter((item) => item.drift.length > 0).map((item) => [item.key, item.drift]);
      return { drifted, report: buildDriftReport({ plan, observed, specs: head, now: new Date(), ref: 'main' }) };
    },
  };
}

/** lab's Cluster document and `documents` as one file, loaded; a document that does not load fails the test. */
export function labSpecs(documents: readonly string[]): SpecSet {
  const loaded = loadSpecs([{ path: 'lab.yaml', text: [LAB_CLUSTER, ...documents].join('---\n') }]);
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  return loaded.specs;
}

/** `key: action` of every guest and object the plan changes. */
export function changed(plan: Plan): string[] {
  return [...plan.guests, ...plan.objects].filter((item) => item.action !== 'noop').map((item) => `${item.key}: ${item.action}`);
}
