/**
 * The snapshot methods of a guest job's fenced writer (`apply-worker.ts`, `fencedWriter`):
 * taking, deleting and rolling back a snapshot are writes, recorded before they are sent — fenced
 * by the guest lock, so a job that lost the lock sends nothing; listing is a read. A writer
 * without snapshots gives none. The snapshots a run takes are named after it.
 */
import { createHash } from 'node:crypto';
import type { ClusterWriter } from '../../core/ports.js';
import { snapshotName } from '../../engine/snapshot-first.js';

/** The snapshot name of a run's guests: this tool's prefix and a digest of the run id (one name per run). */
export function runSnapshotName(runId: string): string {
  return snapshotName(`run-${createHash('sha256').update(runId).digest('hex').slice(0, 12)}`);
}

type SnapshotMethods = Pick<ClusterWriter, 'listSnapshots' | 'snapshot' | 'deleteSnapshot' | 'rollbackSnapshot'>;

/** `writer`'s snapshot methods, with `before(op)` awaited before every write. */
export function fencedSnapshots(writer: ClusterWriter, before: (op: string) => Promise<void>): SnapshotMethods {
  const out: SnapshotMethods = {};
  const { listSnapshots, snapshot, deleteSnapshot, rollbackSnapshot } = writer;
  if (listSnapshots) out.listSnapshots = (ref) => listSnapshots.call(writer, ref);
  if (snapshot)
    out.snapshot = async (ref, name, description, context) => {
      await before('snapshot');
      return snapshot.call(writer, ref, name, description, context);
    };
  if (deleteSnapshot)
    out.deleteSnapshot = async (ref, name, context) => {
      await before('delete-snapshot');
      return deleteSnapshot.call(writer, ref, name, context);
    };
  if (rollbackSnapshot)
    out.rollbackSnapshot = async (ref, name, context, options) => {
      await before('rollback');
      return rollbackSnapshot.call(writer, ref, name, context, options);
    };
  return out;
}
