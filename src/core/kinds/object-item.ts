/**
 * What every kind of the generic pipeline builds its items and outcomes from (core/kinds/kind.ts):
 * an item's envelope with its defaults (an error empties its operations), a stored field read back,
 * and a failed write turned into an outcome. The kinds' own folders hold only what is theirs.
 */
import { UnavailableError } from '../port-errors.js';
import type { DriftItem, GuestAction, KeyChange, ObjectOperation, ObjectPlan, SourceRef } from '../model.js';
import type { ObjectApplyOutcome } from './kind.js';

/** The fields of an item besides its identity; defaults for the rest. */
export interface ItemParts {
  action: GuestAction;
  changes?: KeyChange[];
  operations?: ObjectOperation[];
  drift?: DriftItem[];
  errors?: string[];
  warnings?: string[];
  after?: string[];
  source?: SourceRef;
  payload: Record<string, unknown>;
}

/** One item in the envelope: an item with errors is an `error` and carries no operations. */
export function item(kind: string, key: string, cluster: string, name: string, parts: ItemParts): ObjectPlan {
  const errors = parts.errors ?? [];
  const plan: ObjectPlan = {
    kind,
    key,
    cluster,
    name,
    action: errors.length > 0 ? 'error' : parts.action,
    changes: parts.changes ?? [],
    operations: errors.length > 0 ? [] : (parts.operations ?? []),
    drift: parts.drift ?? [],
    errors,
    warnings: parts.warnings ?? [],
    severity: 'configuration',
    payload: parts.payload,
  };
  if (parts.after && parts.after.length > 0) plan.after = parts.after;
  if (parts.source) plan.source = parts.source;
  return plan;
}

/** Throws unless `value` is a non-empty string (a stored item's field). */
export function storedString(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw new Error(`stored item: ${what} is not a string`);
  return value;
}

/**
 * A write that failed, as an outcome. An unreachable cluster says nothing about the object:
 * running the apply again is safe unless the write may have gone through. A refusal (Proxmox's own
 * text) is never retried.
 */
export function failedOutcome(err: unknown, steps: ObjectApplyOutcome['steps']): ObjectApplyOutcome {
  const message = err instanceof Error ? err.message : String(err);
  return { status: 'failed', steps, error: message, ...(err instanceof UnavailableError ? { retryable: !err.writeUncertain } : {}) };
}

/**
 * Carries out an item's operations in order: `run` does one (given when it started), pushes its
 * step, and returns an outcome to stop with, or nothing to go on. A port error ends the item as
 * `failedOutcome` with the steps made so far; an item whose operations all went on is `applied`
 * when a step was made, `unchanged` when none was needed.
 */
export async function runOperations(
  operations: readonly ObjectOperation[],
  steps: ObjectApplyOutcome['steps'],
  run: (op: ObjectOperation, started: number) => Promise<ObjectApplyOutcome | undefined>,
): Promise<ObjectApplyOutcome> {
  for (const op of operations) {
    try {
      const stop = await run(op, Date.now());
      if (stop) return stop;
    } catch (err) {
      return failedOutcome(err, steps);
    }
  }
  return { status: steps.length > 0 ? 'applied' : 'unchanged', steps };
}
