/**
 * Snapshots first (README "Snapshots first"): before the first write of a guest (a VM or a
 * container) whose plan announces
 * a snapshot (`GuestPlan.snapshot`), the apply takes one named after the run (`pvegitops-…`) and
 * then deletes the oldest snapshots of its own past the plan's `keep` — only snapshots whose name
 * has this tool's prefix, never anyone else's. A snapshot of that name already there (an earlier
 * run of this apply took it) is not taken again. When the snapshot fails (a storage without the
 * snapshot feature, the guest locked) nothing of the change is written.
 */
import type { ApplyStep } from '../core/apply-result.js';
import type { GuestPlan } from '../core/model.js';
import type { ClusterWriter, GuestRef, SnapshotInfo } from '../core/ports.js';
import { errorMessage } from '../util/error-message.js';

/** The names of this tool's snapshots begin so; nothing else is ever pruned. */
export const SNAPSHOT_PREFIX = 'pvegitops-';

/** Proxmox's snapshot names: a letter, then letters, digits, `_` and `-`, 40 at most (`pve-snapshot-name`). */
const MAX_NAME = 40;

/** A snapshot name for `tag` (a run's id, a time stamp), kept within Proxmox's format. */
export function snapshotName(tag: string): string {
  const clean = tag.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '');
  return `${SNAPSHOT_PREFIX}${clean}`.slice(0, MAX_NAME);
}

/** What {@link snapshotFirst} needs of the guest's apply. */
export interface SnapshotContext {
  plan: GuestPlan;
  writer: ClusterWriter;
  ref: GuestRef;
  name: string;
  signal?: AbortSignal;
  emit: (step: ApplyStep) => void;
}

/** This tool's snapshots past `keep`, oldest first. */
function pruned(snapshots: readonly SnapshotInfo[], keep: number): SnapshotInfo[] {
  const own = snapshots.filter((s) => s.name.startsWith(SNAPSHOT_PREFIX)).sort((a, b) => (a.snaptime ?? 0) - (b.snaptime ?? 0));
  return own.slice(0, Math.max(0, own.length - keep));
}

/** Takes the snapshot and prunes; resolves the error that stops the apply, or undefined to go on. */
export async function snapshotFirst(ctx: SnapshotContext): Promise<string | undefined> {
  const { writer, ref, name, plan } = ctx;
  const keep = plan.snapshot?.keep ?? 1;
  if (!writer.snapshot || !writer.listSnapshots)
    return 'the plan asks for a snapshot first, which this connection cannot take; nothing was written';
  try {
    const before = await writer.listSnapshots(ref);
    if (before.some((s) => s.name === name)) {
      ctx.emit({ op: 'snapshot-found', detail: `${name}, taken by an earlier run of this apply` });
    } else {
      const context = ctx.signal ? { signal: ctx.signal } : {};
      const result = await writer.snapshot(ref, name, `pve-gitops: before applying ${plan.cluster}/${plan.name}`, context);
      ctx.emit({
        op: 'snapshot',
        detail: name,
        ...(result.upid ? { upid: result.upid } : {}),
        ...(result.exitStatus ? { exitStatus: result.exitStatus } : {}),
      });
    }
  } catch (err) {
    return `snapshot ${name} before the apply failed: ${errorMessage(err)}; nothing was written`;
  }
  try {
    const now = await writer.listSnapshots(ref);
    for (const old of pruned(now, keep)) {
      if (!writer.deleteSnapshot) break;
      const result = await writer.deleteSnapshot(ref, old.name, ctx.signal ? { signal: ctx.signal } : {});
      ctx.emit({
        op: 'delete-snapshot',
        detail: `${old.name} (only the ${keep} newest of pve-gitops are kept)`,
        ...(result.upid ? { upid: result.upid } : {}),
      });
    }
  } catch (err) {
    // The snapshot is there: a prune that failed is reported and the apply goes on.
    ctx.emit({ op: 'snapshot-prune-failed', detail: errorMessage(err) });
  }
  return undefined;
}
