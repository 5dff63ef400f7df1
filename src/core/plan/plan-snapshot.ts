/**
 * Snapshots first (README "Snapshots first"): whether a VM's apply is preceded by a snapshot.
 * `snapshot: risky` snapshots before a change whose impact is needs-stop or data-loss, `always`
 * before any change of an existing VM, `never` (the default) not at all; the guest's policy wins
 * over its cluster's. Containers are not snapshotted yet. Pure.
 */
import type { ClusterSpec, GuestPlan, SnapshotPolicy } from '../model.js';

/** Snapshots of this tool kept per VM unless the Cluster document says (`snapshotsKept`). */
export const DEFAULT_SNAPSHOTS_KEPT = 3;

const RISKY: ReadonlySet<string> = new Set(['needs-stop', 'data-loss']);

/** Sets `snapshot` on the VM plans that the policy in force snapshots first. */
export function planSnapshots(guests: GuestPlan[], clusters: ReadonlyMap<string, ClusterSpec>): void {
  for (const plan of guests) {
    const spec = plan.target.spec;
    if (!spec || plan.type !== 'qemu' || plan.action !== 'update') continue;
    const cluster = clusters.get(spec.cluster);
    const policy: SnapshotPolicy = spec.snapshot ?? cluster?.snapshot ?? 'never';
    if (policy === 'never') continue;
    const risky = plan.impact !== undefined && RISKY.has(plan.impact);
    if (policy === 'risky' && !risky) continue;
    const why = risky ? `its change is ${plan.impact}` : 'snapshot: always';
    plan.snapshot = {
      reason: `snapshot before the apply (${why}); a storage without snapshot support refuses it, and then nothing is written`,
      keep: cluster?.snapshotsKept ?? DEFAULT_SNAPSHOTS_KEPT,
    };
  }
}
