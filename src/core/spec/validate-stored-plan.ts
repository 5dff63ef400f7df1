/**
 * A stored plan is applied later, from a file anyone with access to the pipeline's artifacts could
 * have edited. Apply recomputes every change from the specs the plan carries (`target.spec`), so
 * those specs must pass exactly the checks `validate` applies to the YAML they came from: each spec
 * and Cluster document is rebuilt as the document it was loaded from and loaded the same way
 * (`loadSpecDocuments`), must come out as what the plan stores, and the set is validated together
 * (`validateSpecs`). The plan's own fields that apply trusts — a guest's identity, the owner tag
 * and prune policy it acts under — must agree with those specs.
 *
 * What cannot be checked from a plan is what was outside it: a pull request's plan carries only
 * the guests it changes, so a VMID derived against the whole estate is checked against its
 * cluster's range, not derived again.
 */
import type { ClusterSpec, GuestPlan, GuestSpec, Plan } from '../model.js';
import { compareSpecErrors, SpecError } from './errors.js';
import { loadSpecDocuments, type SpecDocument } from './load-specs.js';
import { fallbackPositions, validateSpecs } from './validate-specs.js';

/**
 * Every reason the specs stored in `plan` would not pass `validate`, or that the plan disagrees
 * with them; empty when the plan may be applied. Errors point at the spec files the plan recorded
 * (`file:line:col: message`), or name the guest (`cluster/name: message`) for the plan's own fields.
 */
export function validateStoredPlan(plan: Plan): SpecError[] {
  const errors: SpecError[] = [];
  const clusterSpecs = plan.clusterSpecs ?? [];
  const withSpec = plan.guests.filter((g): g is GuestPlan & { target: { spec: GuestSpec } } => g.target.spec !== undefined);

  const documents: SpecDocument[] = [
    ...clusterSpecs.map((cluster) => ({ raw: clusterDocument(cluster), at: fallbackPositions(cluster) })),
    ...withSpec.map((g) => ({ raw: guestDocument(g.target.spec), at: fallbackPositions(g.target.spec) })),
  ];
  const loaded = loadSpecDocuments(documents);
  for (const error of loaded.errors) errors.push(error);

  // Loaded documents come out in the order given; a document that failed to load has none.
  const loadedClusters = new Map(loaded.specs.clusters.map((c) => [c.source, c]));
  const loadedGuests = new Map(loaded.specs.guests.map((g) => [g.source, g]));
  for (const cluster of clusterSpecs) {
    const again = loadedClusters.get(cluster.source);
    if (again && !sameValue(withoutSource(again), withoutSource(cluster))) {
      errors.push(new SpecError(cluster.source, `the plan's Cluster document "${cluster.name}" is not what validate makes of it`));
    }
  }
  const clusters = new Map(clusterSpecs.map((c) => [c.name, c]));
  for (const g of withSpec) {
    const stored = g.target.spec;
    const again = loadedGuests.get(stored.source);
    if (again) {
      // A derived VMID depends on the whole estate; the plan's is checked against the range below.
      if (stored.vmidDerived) again.vmid = stored.vmid;
      const differs = differingField(again, stored);
      if (differs)
        errors.push(
          new SpecError(stored.source, `the plan's spec of ${stored.cluster}/${stored.name} is not what validate makes of it: ${differs}`),
        );
    }
    if (
      stored.cluster !== g.cluster ||
      stored.name !== g.name ||
      stored.vmid !== g.vmid ||
      stored.type !== g.type ||
      stored.vmidDerived !== g.vmidDerived
    ) {
      errors.push(
        planError(
          g,
          `the guest's cluster, name, VMID or type differ from its spec (${stored.cluster}/${stored.name}, ${stored.vmid}, ${stored.type})`,
        ),
      );
    }
    const cluster = clusters.get(stored.cluster);
    if (cluster && stored.vmidDerived && (stored.vmid < cluster.vmids.lower || stored.vmid >= cluster.vmids.upper)) {
      errors.push(
        new SpecError(
          stored.source,
          `vmid ${stored.vmid} is outside cluster "${cluster.name}" range [${cluster.vmids.lower}, ${cluster.vmids.upper})`,
        ),
      );
    }
  }
  for (const g of plan.guests) {
    const cluster = clusters.get(g.cluster);
    if (!cluster) {
      if (g.target.spec)
        errors.push(
          planError(g, `the plan holds no Cluster document "${g.cluster}" for its spec (a plan made by an older pve-gitops? plan again)`),
        );
      else if (g.target.prune)
        errors.push(planError(g, `prune is on for cluster "${g.cluster}", which has no Cluster document in the plan`));
      continue;
    }
    if (g.target.ownerTag !== cluster.ownerTag || g.target.prune !== cluster.prune) {
      errors.push(
        planError(
          g,
          `owner tag "${g.target.ownerTag}" and prune ${g.target.prune} differ from cluster "${cluster.name}" (owner tag "${cluster.ownerTag}", prune ${cluster.prune})`,
        ),
      );
    }
  }

  for (const error of validateSpecs(loaded.specs, { positions: loaded.positions, brokenClusters: loaded.brokenClusters }))
    errors.push(error);
  return errors.sort(compareSpecErrors);
}

function planError(g: GuestPlan, message: string): SpecError {
  return new SpecError({ file: `${g.cluster}/${g.name}`, line: 0, col: 0 }, `plan: ${message}`);
}

/** The Cluster document a cluster spec was loaded from. */
function clusterDocument(cluster: ClusterSpec): Record<string, unknown> {
  return {
    kind: 'Cluster',
    name: cluster.name,
    vmids: { lower: cluster.vmids.lower, upper: cluster.vmids.upper },
    ownerTag: cluster.ownerTag,
    nodes: cluster.nodes,
    ...(cluster.storages ? { storages: cluster.storages } : {}),
    ...(cluster.bridges ? { bridges: cluster.bridges } : {}),
    prune: cluster.prune,
    ...(cluster.restart ? { restart: cluster.restart } : {}),
    ...(cluster.restartsInFlight !== undefined ? { restartsInFlight: cluster.restartsInFlight } : {}),
    ...(cluster.windows ? { windows: cluster.windows } : {}),
    ...(cluster.snapshot ? { snapshot: cluster.snapshot } : {}),
    ...(cluster.snapshotsKept !== undefined ? { snapshotsKept: cluster.snapshotsKept } : {}),
  };
}

/** The VM or Container document a guest spec was loaded from (config as Proxmox's wire strings). */
function guestDocument(spec: GuestSpec): Record<string, unknown> {
  return {
    kind: spec.kind,
    name: spec.name,
    cluster: spec.cluster,
    node: spec.node,
    ...(spec.vmidDerived ? {} : { vmid: spec.vmid }),
    power: spec.power,
    state: spec.state,
    adopt: spec.adopt,
    ignore: spec.ignore,
    config: spec.config,
    create: { ...(spec.createOptions ?? {}), ...(spec.clone ? { clone: spec.clone } : {}) },
    // `dependsOn` is left out: its names were checked against every spec when the plan was made,
    // and a stored plan holds only the guests it changes.
    ...(spec.restart ? { restart: spec.restart } : {}),
    ...(spec.template ? { template: true } : {}),
    ...(spec.regenerateCloudinit ? { cloudinit: 'regenerate' } : {}),
    ...(spec.windows ? { windows: spec.windows } : {}),
    ...(spec.snapshot ? { snapshot: spec.snapshot } : {}),
  };
}

const GUEST_FIELDS = ['kind', 'type', 'name', 'cluster', 'node', 'vmid', 'vmidDerived', 'power', 'state', 'adopt', 'ignore'] as const;

/** The first field in which the spec loaded again differs from the stored one, described. */
function differingField(again: GuestSpec, stored: GuestSpec): string | undefined {
  for (const field of GUEST_FIELDS) {
    if (!sameValue(again[field], stored[field]))
      return `${field} ${JSON.stringify(stored[field])} would be ${JSON.stringify(again[field])}`;
  }
  for (const field of ['clone', 'template', 'regenerateCloudinit'] as const) {
    if (!sameValue(again[field], stored[field]))
      return `${field} ${JSON.stringify(stored[field])} would be ${JSON.stringify(again[field])}`;
  }
  for (const [label, a, b] of [
    ['config', again.config, stored.config],
    ['create', again.createOptions ?? {}, stored.createOptions ?? {}],
  ] as const) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (a[key] !== b[key]) return `${label}.${key} ${JSON.stringify(b[key])} would be ${JSON.stringify(a[key])}`;
    }
  }
  return undefined;
}

function withoutSource(cluster: ClusterSpec): Omit<ClusterSpec, 'source'> {
  const { source: _source, ...rest } = cluster;
  return rest;
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
