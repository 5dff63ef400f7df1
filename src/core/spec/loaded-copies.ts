/**
 * Which loaded guests are copies of one loaded document. Loads that share a parse cache (a pull
 * request's base and head) load a file of the same text at the same path once, and give each load
 * its own copy of each of its guests (`load-specs.ts`). Two such copies with the same VMID are
 * equal specs by construction — loading sets nothing else of a copy — so a plan's scope needs no
 * field-by-field comparison of them: that comparison was most of the time of scoping a 10-guest
 * change in 10,000 guests, once per unchanged guest.
 *
 * The answer holds for copies as loading returns them: a copy edited after loading is not to be
 * compared through this (nothing in the product edits a loaded spec).
 */
import type { GuestSpec } from '../model.js';

/** Each copy's origin: the guest as loaded from its file once for all loads sharing the cache. */
const originOf = new WeakMap<GuestSpec, GuestSpec>();

/** Records that `copy` was made from `origin` (by `load-specs.ts`, before VMIDs are derived). */
export function recordCopy(copy: GuestSpec, origin: GuestSpec): void {
  originOf.set(copy, origin);
}

/** Whether `a` and `b` are copies of one loaded guest with the same VMID: then they are the same spec. */
export function copiesOfOneGuest(a: GuestSpec, b: GuestSpec): boolean {
  const origin = originOf.get(a);
  return origin !== undefined && origin === originOf.get(b) && a.vmid === b.vmid && a.vmidDerived === b.vmidDerived;
}
