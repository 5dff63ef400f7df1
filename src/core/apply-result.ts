/**
 * What an apply did, guest by guest. The executor produces it; the renderers turn it into the
 * sticky "apply" comment, the `pve-gitops/apply` check run and CLI output. Pure data, no I/O.
 */

/** Outcome of one guest's apply job. */
export type ApplyStatus = 'applied' | 'unchanged' | 'conflict' | 'failed' | 'skipped';

/** One step the executor carried out (or tried), in order. */
export interface ApplyStep {
  /** The operation, e.g. `config`, `resize`, `start`, `destroy`, `wait-lock`. */
  op: string;
  /** Human-readable detail: keys written, the disk resized, why a step was skipped. */
  detail?: string;
  /** Proxmox task id when the step ran as a task, so an operator can find its log. */
  upid?: string;
  /** How the task ended: `OK`, `WARNINGS: N`, or the error text of a task that failed. */
  exitStatus?: string;
  /** Wall time of the step in milliseconds. */
  ms?: number;
}

/** Ops that record a wait or a re-read, not a change to the guest. */
const NON_WRITING_OPS: ReadonlySet<string> = new Set([
  'wait-lock',
  'wait-task',
  'digest-conflict',
  'relocated',
  'vmid-taken',
  'vanished',
  'wait-ha',
  'restarted',
  'restart-held',
  'snapshot-found',
  'snapshot-prune-failed',
]);

/**
 * Whether a step may have changed the guest: it started a task, or it is an op other than a wait
 * or a re-read. The engine asks it to know whether a guest was written; the queue asks it of an
 * earlier run's steps, to know whether that run may have changed the guest before it died.
 */
export function isWritingStep(step: ApplyStep): boolean {
  return step.upid !== undefined || !NON_WRITING_OPS.has(step.op);
}

/** A before/after pair of one key: `from` undefined means unset, `to` undefined means deleted. */
export interface ApplyValueChange {
  from?: string;
  to?: string;
}

/**
 * An owned value that moved between review and apply. `reviewed` is the change the PR showed,
 * `now` the change recomputed from the fresh read; either is absent when that side had no change
 * for the key.
 */
export interface ApplyConflict {
  key: string;
  reviewed?: ApplyValueChange;
  now?: ApplyValueChange;
}

/** The result for one guest. */
export interface GuestApplyResult {
  cluster: string;
  name: string;
  vmid: number;
  node: string;
  status: ApplyStatus;
  steps: ApplyStep[];
  /** Set when `status` is `conflict`: what moved after review. Nothing was written. */
  conflict?: ApplyConflict[];
  /** Set when `status` is `failed` (or `skipped` for a reason worth showing). */
  error?: string;
  /** Keys accepted by Proxmox but not in effect until the guest restarts. */
  pending?: string[];
  /**
   * Set on a `failed` or `skipped` guest when the failure says nothing about the guest itself (the
   * cluster could not be reached, the apply was interrupted): running the apply again is safe and
   * may succeed. Conflicts, refusals and permission errors are never retryable.
   */
  retryable?: boolean;
}

/** The result of applying one stored plan. Versioned like the plan, so it can be stored. */
export interface ApplyResult {
  version: 1;
  /** ISO timestamps. */
  startedAt: string;
  finishedAt: string;
  /** Free-form label of what was applied (the merged head SHA), when known. */
  ref?: string;
  guests: GuestApplyResult[];
  /** Items of the other kinds (a pool, a guest's membership), in apply-phase order. Absent: none. */
  objects?: ObjectApplyResult[];
}

/** The result for one item of a kind other than the guest: its envelope's identity and how it ended. */
export interface ObjectApplyResult {
  kind: string;
  key: string;
  cluster: string;
  name: string;
  status: ApplyStatus;
  steps: ApplyStep[];
  /** What moved between review and apply, one line each (status `conflict`). */
  conflict?: string[];
  error?: string;
  retryable?: boolean;
}

/** How many guests ended in each status. */
export type ApplyCounts = Record<ApplyStatus, number>;

/** Every status in the order reports list them. */
export const APPLY_STATUSES: readonly ApplyStatus[] = ['applied', 'unchanged', 'conflict', 'failed', 'skipped'];

/** Counts results (guests, items of other kinds) per status, e.g. to decide a check run's conclusion. */
export function countApplyResult(results: readonly { status: ApplyStatus }[]): ApplyCounts {
  const counts: ApplyCounts = { applied: 0, unchanged: 0, conflict: 0, failed: 0, skipped: 0 };
  for (const result of results) counts[result.status] += 1;
  return counts;
}

/** Every result of an apply, guests and items of other kinds, for counting. */
export function allResults(result: ApplyResult): readonly { status: ApplyStatus }[] {
  return [...result.guests, ...(result.objects ?? [])];
}
