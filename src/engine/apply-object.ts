/**
 * Applies one item of a kind other than the guest (core/kinds/kind.ts): finds the kind and its
 * port, holds the item back when an item it must follow did not apply, and turns whatever happens
 * into an {@link ObjectApplyResult}. The kind's own `execute` reads before it writes and compares
 * with the review; this module only routes and reports. The guest's executor is `apply-guest.ts`.
 */
import type { ApplyStatus, ObjectApplyResult } from '../core/apply-result.js';
import type { ObjectApplyContext } from '../core/kinds/kind.js';
import { objectKind } from '../core/kinds/registry.js';
import type { ObjectPlan } from '../core/model.js';
import type { ClusterWriter } from '../core/ports.js';
import { errorMessage } from '../util/error-message.js';

/** The actions that write; every other item is reported without being touched. */
const WRITING_ACTIONS: ReadonlySet<ObjectPlan['action']> = new Set(['create', 'update', 'destroy']);

/** Whether an item's apply writes anything (it has operations and a writing action). */
export function objectWrites(item: ObjectPlan): boolean {
  return WRITING_ACTIONS.has(item.action) && item.operations.length > 0;
}

/** The result of an item that is not applied: nothing to do, or an error the plan already found. */
export function objectWithoutApply(item: ObjectPlan): ObjectApplyResult | undefined {
  if (item.action === 'error') return resultOf(item, 'skipped', { error: item.errors.join('; ') || 'the plan has an error' });
  if (!objectWrites(item)) return resultOf(item, 'unchanged');
  return undefined;
}

/** A result for `item` with `status`. */
export function resultOf(item: ObjectPlan, status: ApplyStatus, extra: Partial<ObjectApplyResult> = {}): ObjectApplyResult {
  return { kind: item.kind, key: item.key, cluster: item.cluster, name: item.name, status, steps: [], ...extra };
}

/**
 * The item held because `blocker` (an item it follows, by key) did not apply: skipped, not failed,
 * and retryable once the blocker applies.
 */
export function heldResult(item: ObjectPlan, blocker: string, status: ApplyStatus): ObjectApplyResult {
  return resultOf(item, 'skipped', { error: `held: ${blocker} it follows ended ${status}`, retryable: true });
}

/** Carries out one item through its kind's executor and port. Never throws. */
export async function applyObject(item: ObjectPlan, writer: ClusterWriter, context: ObjectApplyContext = {}): Promise<ObjectApplyResult> {
  const untouched = objectWithoutApply(item);
  if (untouched) return untouched;
  const kind = objectKind(item.kind);
  if (!kind) return resultOf(item, 'failed', { error: `this pve-gitops does not know the kind '${item.kind}'` });
  const port = writer.kindPort?.(item.kind);
  if (port === undefined)
    return resultOf(item, 'failed', { error: `the connection to cluster '${item.cluster}' cannot manage ${item.kind} objects` });
  try {
    const outcome = await kind.execute(item, port, context);
    return { ...resultOf(item, outcome.status), ...outcome };
  } catch (err) {
    return resultOf(item, 'failed', { error: errorMessage(err) });
  }
}
