/**
 * Plans the kinds other than the guest (core/kinds/): which clusters they make a pull request
 * touch, which of them need reading on a cluster, and their items, through each kind's `plan`.
 * Pure, like the guest planner; what was read is in `ObservedCluster.objects`.
 */
import { byPhase, guestKeys, OBJECT_KINDS } from '../kinds/registry.js';
import type { ObjectKind } from '../kinds/kind.js';
import { keyText, resourceKey } from '../kinds/resource-key.js';
import type { GuestPlan, GuestSpec, ObjectPlan, ObjectSpec, ObservedState, SpecSet } from '../model.js';

// biome-ignore lint/suspicious/noExplicitAny: kinds carry their own port and observed types.
type AnyKind = ObjectKind<any, any>;

function objectKey(object: ObjectSpec): string {
  return keyText(resourceKey(object.cluster, object.kind, object.id));
}

/** The guest-document keys that concern a kind: those it adds (a `pool:`), and those naming one of its objects. */
function referringKeys(kind: AnyKind): string[] {
  return [
    ...(kind.guestKeys ?? []).map(({ key }) => key),
    ...guestKeys()
      .filter(({ key }) => key.refersTo === kind.name)
      .map(({ key }) => key.key),
  ];
}

/**
 * The kinds (of `kinds`) that have anything on `cluster` in these spec sets: documents, or keys on
 * guests. One pass over each set's guests for all kinds: a plan asks this of every cluster it covers,
 * and a set holds the whole estate.
 */
export function kindsConcerned(kinds: readonly AnyKind[], cluster: string, sets: readonly (SpecSet | undefined)[]): AnyKind[] {
  const pending = new Set(kinds);
  const keys = new Map(kinds.map((kind) => [kind, referringKeys(kind)]));
  for (const set of sets) {
    for (const o of set?.objects ?? []) {
      if (o.cluster !== cluster) continue;
      for (const kind of pending) if (o.kind === kind.name) pending.delete(kind);
    }
    for (const g of set?.guests ?? []) {
      if (pending.size === 0) break;
      if (g.cluster !== cluster || g.refs === undefined) continue;
      const refs = g.refs;
      for (const kind of pending) if (keys.get(kind)?.some((key) => Object.hasOwn(refs, key))) pending.delete(kind);
    }
  }
  return kinds.filter((kind) => !pending.has(kind));
}

/**
 * Clusters whose documents of other kinds differ between `base` and `head` (added, removed,
 * changed): a pull request that changes a pool plans its cluster. Position-only edits are no change.
 */
export function clustersWithChangedObjects(head: SpecSet, base: SpecSet, same: (a: unknown, b: unknown) => boolean): Set<string> {
  const changed = new Set<string>();
  const baseObjects = new Map((base.objects ?? []).map((o) => [objectKey(o), o]));
  const headObjects = new Map((head.objects ?? []).map((o) => [objectKey(o), o]));
  for (const [key, o] of headObjects) if (!same(baseObjects.get(key), o)) changed.add(o.cluster);
  for (const [key, o] of baseObjects) if (!headObjects.has(key)) changed.add(o.cluster);
  return changed;
}

/** Inputs of {@link planObjects}. */
export interface PlanObjectsInput {
  head: SpecSet;
  base?: SpecSet;
  observed: ObservedState;
  /** The clusters the plan covers, and those planned in full. */
  clusters: readonly string[];
  fullClusters: ReadonlySet<string>;
  guestPlans: readonly GuestPlan[];
}

/** The items of every other kind on the planned clusters, in apply-phase order; read failures become plan errors. */
export function planObjects(input: PlanObjectsInput): { items: ObjectPlan[]; errors: { cluster: string; message: string }[] } {
  const items: ObjectPlan[] = [];
  const errors: { cluster: string; message: string }[] = [];
  for (const cluster of input.clusters) {
    const seen = input.observed.clusters[cluster];
    if (!seen) continue;
    for (const kind of kindsConcerned(OBJECT_KINDS, cluster, [input.head, input.base])) {
      const failed = seen.objectErrors?.[kind.name];
      if (failed !== undefined) {
        errors.push({ cluster, message: `${kind.name} objects of cluster '${cluster}' could not be read: ${failed}` });
        continue;
      }
      if (!seen.objects || !Object.hasOwn(seen.objects, kind.name)) continue;
      const ofKind = (set: SpecSet | undefined): ObjectSpec[] =>
        (set?.objects ?? []).filter((o) => o.kind === kind.name && o.cluster === cluster);
      const guestsOf = (set: SpecSet | undefined): GuestSpec[] => (set?.guests ?? []).filter((g) => g.cluster === cluster);
      const planned = kind.plan({
        cluster,
        head: ofKind(input.head),
        ...(input.base ? { base: ofKind(input.base) } : {}),
        headGuests: guestsOf(input.head),
        baseGuests: guestsOf(input.base),
        guestPlans: input.guestPlans.filter((g) => g.cluster === cluster),
        full: input.fullClusters.has(cluster) || input.base === undefined || input.base === input.head,
        observed: seen.objects[kind.name],
      });
      for (const item of planned) items.push(item);
    }
  }
  return { items: byPhase(items), errors };
}
