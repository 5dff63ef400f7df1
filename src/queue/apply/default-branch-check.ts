/**
 * What the default branch says now, against a merged pull request's stored plan: the check
 * behind `/pve apply` on a merged pull request. A later merge may have changed the same guests;
 * applying the older pull request's plan then would roll the default branch's state back on the
 * cluster, reviewed by no one and around branch protection. So `/pve apply` carries out a merged
 * pull request's plan only where the default branch's head describes each of its guests (and
 * their Cluster documents) exactly as the pull request's head did.
 */
import { GUEST_KIND, guestKeyText, keyText, parseKeyText, resourceKey } from '../../core/kinds/resource-key.js';
import type { ClusterSpec, GuestSpec, ObjectSpec, SpecSet } from '../../core/model.js';
import { objectWrites } from '../../engine/apply-object.js';
import type { StoredPlan } from '../plan/plan-store.js';

/** A value as canonical JSON: object keys sorted, positions in the files left out (moving a document changes nothing). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([key, v]) => key !== 'source' && key !== 'keySources' && v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, v]) => `${JSON.stringify(key)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function same(a: GuestSpec | ClusterSpec | ObjectSpec | undefined, b: GuestSpec | ClusterSpec | ObjectSpec | undefined): boolean {
  return a === undefined || b === undefined ? a === b : canonical(a) === canonical(b);
}

/**
 * The guests (`cluster/name`) the plan changes for which the default branch's specs now say
 * something else than the pull request's head did — their spec, or their cluster's document —
 * in plan order, then the items of other kinds the plan writes for which it does: the object's own
 * document (a pool), or the guest an item follows (a guest's membership comes from its
 * document). Empty: applying the plan applies what the default branch says.
 */
export function guestsTheBranchChanged(
  stored: Pick<StoredPlan, 'plan' | 'specs'>,
  branch: SpecSet,
  applied: ReadonlySet<string>,
): string[] {
  const key = (spec: { cluster: string; vmid: number }): string => guestKeyText(spec.cluster, spec.vmid);
  const headGuests = new Map(stored.specs.guests.map((g) => [key(g), g]));
  const branchGuests = new Map(branch.guests.map((g) => [key(g), g]));
  const headClusters = new Map(stored.specs.clusters.map((c) => [c.name, c]));
  const branchClusters = new Map(branch.clusters.map((c) => [c.name, c]));
  const guests = stored.plan.guests
    .filter((guest) => applied.has(guest.action))
    .filter((guest) => {
      const id = key(guest);
      return !same(headGuests.get(id), branchGuests.get(id)) || !same(headClusters.get(guest.cluster), branchClusters.get(guest.cluster));
    })
    .map((guest) => `${guest.cluster}/${guest.name}`);
  const objectKey = (spec: ObjectSpec): string => keyText(resourceKey(spec.cluster, spec.kind, spec.id));
  // A plan stored without its objects' documents cannot show they are unchanged: any the branch has differs.
  const headObjects = new Map((stored.specs.objects ?? []).map((o) => [objectKey(o), o]));
  const branchObjects = new Map((branch.objects ?? []).map((o) => [objectKey(o), o]));
  const objects = (stored.plan.objects ?? [])
    .filter(objectWrites)
    .filter((item) => {
      if (!same(headObjects.get(item.key), branchObjects.get(item.key))) return true;
      if (!same(headClusters.get(item.cluster), branchClusters.get(item.cluster))) return true;
      return (item.after ?? []).some((after) => {
        const followed = parseKeyText(after);
        if (followed?.kind !== GUEST_KIND) return false;
        const id = guestKeyText(followed.cluster, Number(followed.id));
        return !same(headGuests.get(id), branchGuests.get(id));
      });
    })
    .map((item) => `${item.cluster}: ${item.kind} ${item.name}`);
  return [...guests, ...objects];
}
