/**
 * Apply's check that what it is about to write is what was reviewed: the guest's plan recomputed
 * from a fresh read against the stored plan, key by key and step by step. A difference in an owned
 * value is a conflict and nothing is written (docs/design.md, "Recompute and compare").
 */
import type { ApplyConflict } from '../apply-result.js';
import type { GuestPlan, Operation } from '../model.js';
import { sameOperation, summariseOperation } from '../operations.js';
import { LIVE_WITHHELD } from './base-ownership.js';
import { desiredConfig } from './desired-config.js';
import { withoutMac } from './plan-clone.js';

type ConfigOp = Extract<Operation, { op: 'config' }>;

function configOf(plan: GuestPlan): ConfigOp | undefined {
  return plan.operations.find((o): o is ConfigOp => o.op === 'config');
}

function change(from: string | undefined, to: string | undefined): { from?: string; to?: string } {
  const c: { from?: string; to?: string } = {};
  if (from !== undefined) c.from = from;
  if (to !== undefined) c.to = to;
  return c;
}

/**
 * Compares a guest's change recomputed at apply time with the reviewed one (docs/design.md#recompute-and-compare). The
 * recomputed change may only be the reviewed change or what is left of it after a partial apply:
 * every key it touches must start from the reviewed value and go to the reviewed value, and every
 * other step must have been reviewed. Anything else means an owned value moved after review.
 * A digest that moved without an owned value moving (a backup's lock, a snapshot) is no conflict,
 * because digests are not compared at all.
 */
export function compareWithReviewed(reviewed: GuestPlan, now: GuestPlan): ApplyConflict[] {
  const conflicts = compare(reviewed, now);
  return reviewed.liveWithheld === true ? conflicts.map((c) => withheldConflict(c, reviewed)) : conflicts;
}

/**
 * A conflict as the pull request may see it when the reviewed plan withheld the guest's live
 * values (the base branch did not own it): the keys that moved, and of the values only those the
 * spec sets — the apply comment is as public as the plan comment was.
 */
function withheldConflict(conflict: ApplyConflict, reviewed: GuestPlan): ApplyConflict {
  const spec = reviewed.target.spec;
  const specTo = spec ? desiredConfig(spec, reviewed.target.ownerTag)[conflict.key] : undefined;
  const side = (value: { from?: string; to?: string } | undefined): { from?: string; to?: string } | undefined => {
    if (value === undefined) return undefined;
    const shown: { from?: string; to?: string } = {};
    if (value.from !== undefined) shown.from = LIVE_WITHHELD;
    if (value.to !== undefined) shown.to = value.to === specTo ? value.to : LIVE_WITHHELD;
    return shown;
  };
  const shown: ApplyConflict = { key: conflict.key };
  const reviewedSide = side(conflict.reviewed);
  const nowSide = side(conflict.now);
  if (reviewedSide) shown.reviewed = reviewedSide;
  if (nowSide) shown.now = nowSide;
  return shown;
}

function compare(reviewed: GuestPlan, now: GuestPlan): ApplyConflict[] {
  const conflicts: ApplyConflict[] = [];
  if (now.action === 'error') {
    return [{ key: '(guest)', now: change(undefined, now.errors.join('; ')) }];
  }
  if (reviewed.action === 'destroy' && now.action === 'destroy' && now.name !== reviewed.name) {
    // Another guest now holds the VMID (a clone carries the owner tag along): not the one reviewed.
    return [{ key: '(guest)', reviewed: change(undefined, reviewed.name), now: change(undefined, now.name) }];
  }
  const was = configOf(reviewed);
  const is = configOf(now);
  // A clone's NICs got new MACs after review: compared without them (plan-clone.ts).
  const cloned = reviewed.operations.some((o) => o.op === 'clone');
  const same = (key: string, a: string | undefined, b: string | undefined): boolean =>
    a === b ||
    (cloned && a !== undefined && b !== undefined && /^net\d+$/.test(key) && withoutMac(reviewed.type, a) === withoutMac(reviewed.type, b));
  if (is) {
    for (const [key, to] of Object.entries(is.set)) {
      const reviewedTo = was?.set[key];
      if (!same(key, reviewedTo, to) || !same(key, was?.from[key], is.from[key])) {
        conflicts.push({ key, reviewed: change(was?.from[key], reviewedTo), now: change(is.from[key], to) });
      }
    }
    for (const key of is.delete) {
      if (!was?.delete.includes(key) || !same(key, was.from[key], is.from[key])) {
        conflicts.push({ key, reviewed: change(was?.from[key], was?.set[key]), now: change(is.from[key], undefined) });
      }
    }
  }
  for (const op of now.operations) {
    if (op.op === 'config') continue;
    if (!reviewed.operations.some((r) => sameOperation(op, r))) {
      const key = 'disk' in op ? `${op.disk} (${op.op})` : `(${op.op})`;
      const reviewedOp = reviewed.operations.find((r) => r.op === op.op && (!('disk' in op) || ('disk' in r && r.disk === op.disk)));
      conflicts.push({
        key,
        reviewed: change(undefined, reviewedOp ? summariseOperation(reviewedOp) : undefined),
        now: change(undefined, summariseOperation(op)),
      });
    }
  }
  return conflicts;
}
