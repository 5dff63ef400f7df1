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
import type { GuestSpec, SpecSet } from '../model.js';

/**
 * Per loaded spec set, each of its copies' origin: the guest as loaded from its file once for all
 * loads sharing the cache. One entry per load, holding the map loading builds anyway: an entry per
 * copy (20,000 WeakMap entries) cost a third of the comparisons it saved.
 */
const originsOf = new WeakMap<SpecSet, ReadonlyMap<object, object>>();

/** Records the origins of the copies in `set` (by `load-specs.ts`, as it returns `set`). */
export function recordCopies(set: SpecSet, origins: ReadonlyMap<object, object>): void {
  originsOf.set(set, origins);
}

/**
 * Whether a guest of the loaded set `aSet` and one of `bSet` are copies of one loaded guest with
 * the same VMID: then they are the same spec. False for sets built otherwise. The sets' origins are
 * looked up once, not twice per guest compared.
 */
export function sameLoadedCopies(aSet: SpecSet, bSet: SpecSet): (a: GuestSpec, b: GuestSpec) => boolean {
  const aOrigins = originsOf.get(aSet);
  const bOrigins = originsOf.get(bSet);
  if (!aOrigins || !bOrigins) return () => false;
  return (a, b) => {
    const origin = aOrigins.get(a);
    return origin !== undefined && origin === bOrigins.get(b) && a.vmid === b.vmid && a.vmidDerived === b.vmidDerived;
  };
}
