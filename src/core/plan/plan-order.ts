/**
 * What a plan says about order and restarts (README "Order between guests: dependsOn",
 * "Restarts"), added to the guest plans once they are all made: each guest's `after` (the keys of
 * the guests its spec `dependsOn`), its apply windows, and, for a guest whose restart policy is `allowed` or `in-window` and whose
 * change leaves values pending on a running guest, the restart the apply will carry out and why.
 * Pure.
 */
import { guestKeyText } from '../kinds/resource-key.js';
import type { ClusterSpec, GuestPlan, GuestSpec, ObjectPlan } from '../model.js';
import { effectiveWindows } from '../spec/apply-windows.js';
import { DEFAULT_RESTARTS_IN_FLIGHT, effectiveRestart } from '../spec/restart-policy.js';

const POWER_OPS: ReadonlySet<string> = new Set(['start', 'shutdown', 'stop']);

/**
 * Sets the apply windows of `objects` (pools, firewalls, HA resources, backup jobs): their
 * cluster's, since a kind document has none of its own (validation refuses them).
 */
export function planObjectWindows(objects: ObjectPlan[], clusters: ReadonlyMap<string, ClusterSpec>): void {
  for (const item of objects) {
    const windows = effectiveWindows(undefined, clusters.get(item.cluster)?.windows);
    if (windows) item.windows = windows;
  }
}

/** Sets `after` and `restart` on `guests` from the head specs and their clusters. */
export function planOrderAndRestarts(
  guests: GuestPlan[],
  headGuests: readonly GuestSpec[],
  clusters: ReadonlyMap<string, ClusterSpec>,
): void {
  // Built at the first dependsOn: a plan of a few guests without one needs no map of the estate.
  let byName: Map<string, GuestSpec> | undefined;
  const named = (key: string): GuestSpec | undefined => {
    if (!byName) {
      byName = new Map();
      for (const spec of headGuests) byName.set(`${spec.cluster}/${spec.name}`, spec);
    }
    return byName.get(key);
  };
  for (const plan of guests) {
    const spec = plan.target.spec;
    if (!spec) continue;
    const after = (spec.dependsOn ?? [])
      .map((name) => named(`${spec.cluster}/${name}`))
      .filter((dep): dep is GuestSpec => dep !== undefined)
      .map((dep) => guestKeyText(dep.cluster, dep.vmid));
    if (after.length > 0) plan.after = after;
    const cluster = clusters.get(spec.cluster);
    const windows = effectiveWindows(spec.windows, cluster?.windows);
    if (windows) plan.windows = windows;
    const policy = effectiveRestart(spec.restart, cluster?.restart);
    if (policy.policy === 'never' || plan.action !== 'update') continue;
    // A start or stop in the same plan puts pending values in effect by itself.
    if (plan.operations.some((op) => POWER_OPS.has(op.op))) continue;
    const pending = plan.changes.filter((c) => c.impact === 'pending-restart').map((c) => c.key);
    if (pending.length === 0) continue;
    plan.restart = {
      reason: `${pending.join(', ')} ${pending.length === 1 ? 'takes' : 'take'} effect only after a restart (restart: ${policy.policy})`,
      force: policy.force,
      timeout: policy.timeout,
      inFlight: cluster?.restartsInFlight ?? DEFAULT_RESTARTS_IN_FLIGHT,
      ...(policy.policy === 'in-window' ? { inWindow: true } : {}),
    };
  }
}
