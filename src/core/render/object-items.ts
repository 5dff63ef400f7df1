/**
 * How every renderer names and describes an item of a kind other than the guest: through its kind
 * (core/kinds/kind.ts), so a new kind renders in the terminal, the plan comment and the drift report
 * without a renderer knowing it. An item of a kind this build does not know (never applied: the
 * stored-plan check refuses it) still renders by its envelope.
 */
import { objectKind } from '../kinds/registry.js';
import type { ObjectPlan } from '../model.js';

/** `pool web`: what a person calls the object. */
export function objectLabel(item: ObjectPlan): string {
  return objectKind(item.kind)?.label(item) ?? `${item.kind} ${item.name}`;
}

/** One line per operation worth showing (the change table shows the rest). */
export function objectSteps(item: ObjectPlan): string[] {
  const kind = objectKind(item.kind);
  return item.operations.map((op) => (kind ? kind.describe(op) : op.op)).filter((line): line is string => line !== undefined);
}
