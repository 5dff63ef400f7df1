/**
 * Counting a plan for its summary table and verdict. Counts come from the guests themselves so
 * the table, the verdict and the listed details can never disagree.
 */
import type { GuestAction, Plan } from '../model.js';
import { guestIsPending } from '../plan/plan-specs.js';
import { plural } from './plan-labels.js';

/**
 * Guests per action, plus guests with drift and pending guests — pending as the plan's summary
 * defines it ({@link guestIsPending}), so the table and `plan.summary` always agree.
 */
export interface PlanCounts {
  create: number;
  update: number;
  destroy: number;
  noop: number;
  orphan: number;
  /** Guests in error plus plan-level errors. */
  error: number;
  drift: number;
  pending: number;
}

/** One summary-table row. */
export interface ClusterCounts {
  cluster: string;
  counts: PlanCounts;
}

function emptyCounts(): PlanCounts {
  return { create: 0, update: 0, destroy: 0, noop: 0, orphan: 0, error: 0, drift: 0, pending: 0 };
}

/**
 * Per-cluster counts in the plan's cluster order (clusters only guests mention come after, sorted),
 * and the total. Plan-level errors without a cluster count only in the total.
 */
export function countPlan(plan: Plan): { rows: ClusterCounts[]; total: PlanCounts } {
  const byCluster = new Map<string, PlanCounts>();
  const total = emptyCounts();
  const row = (cluster: string): PlanCounts => {
    let counts = byCluster.get(cluster);
    if (counts === undefined) {
      counts = emptyCounts();
      byCluster.set(cluster, counts);
    }
    return counts;
  };
  for (const cluster of plan.clusters) row(cluster);
  const extra = new Set<string>();
  for (const item of [...plan.guests, ...plan.objects]) {
    if (!byCluster.has(item.cluster)) extra.add(item.cluster);
  }
  for (const cluster of [...extra].sort()) row(cluster);

  for (const guest of plan.guests) {
    const counts = row(guest.cluster);
    const action: GuestAction = guest.action;
    counts[action] += 1;
    total[action] += 1;
    if (guest.drift.length > 0) {
      counts.drift += 1;
      total.drift += 1;
    }
    if (guestIsPending(guest)) {
      counts.pending += 1;
      total.pending += 1;
    }
  }
  // Items of other kinds count like guests (a pool created is a create); they are never pending.
  for (const item of plan.objects) {
    const counts = row(item.cluster);
    counts[item.action] += 1;
    total[item.action] += 1;
    if (item.drift.length > 0) {
      counts.drift += 1;
      total.drift += 1;
    }
  }
  for (const error of plan.errors) {
    total.error += 1;
    if (error.cluster !== undefined) row(error.cluster).error += 1;
  }
  return { rows: [...byCluster].map(([cluster, counts]) => ({ cluster, counts })), total };
}

/** True when applying the plan would write something. */
export function hasChanges(counts: PlanCounts): boolean {
  return counts.create + counts.update + counts.destroy > 0;
}

/** `3 to create, 2 to update, 1 to destroy, 1 error`, or `No changes` (with orphans/errors if any). */
export function planVerdict(counts: PlanCounts): string {
  const parts: string[] = [];
  if (counts.create > 0) parts.push(`${counts.create} to create`);
  if (counts.update > 0) parts.push(`${counts.update} to update`);
  if (counts.destroy > 0) parts.push(`${counts.destroy} to destroy`);
  const changed = parts.length > 0;
  if (counts.orphan > 0) parts.push(plural(counts.orphan, 'orphan'));
  if (counts.error > 0) parts.push(plural(counts.error, 'error'));
  if (changed) return parts.join(', ');
  return parts.length > 0 ? `No changes, ${parts.join(', ')}` : 'No changes';
}
