/**
 * What the kinds of a guest's parts (its pool membership, its HA resource, its firewall) share
 * when they plan: the guests of one cluster that declare the part, each compared with the base
 * branch's spec of the same guest, so that a pull request plans only the parts it changes and a
 * guest being destroyed takes its parts with it (docs/adding-a-kind.md, "The kind module").
 */
import type { GuestPlan, GuestSpec, ObjectPlan } from '../model.js';
import type { KindPlanInput } from './kind.js';

/** How a guest-part kind reads its part from a guest spec. */
export interface GuestPart {
  /** Whether the guest declares the part (its guest key is present). */
  declares(guest: GuestSpec): boolean;
  /** Whether two specs of one guest, both declaring it, want the same part. */
  same(before: GuestSpec, head: GuestSpec): boolean;
}

/**
 * One item per present guest of the cluster that declares the part, except where the guest is
 * destroyed, and, in a pull request, where the base branch wanted the same (`unchanged` tells the
 * item so when the whole cluster is in scope).
 */
export function planGuestParts<Observed>(
  input: KindPlanInput<Observed>,
  part: GuestPart,
  planOne: (guest: GuestSpec, guestPlan: GuestPlan | undefined, unchanged: boolean) => ObjectPlan,
): ObjectPlan[] {
  const items: ObjectPlan[] = [];
  const scoped = input.base === undefined || input.full;
  for (const guest of input.headGuests) {
    if (guest.cluster !== input.cluster || guest.state !== 'present' || !part.declares(guest)) continue;
    const before = input.baseGuests.find((g) => g.cluster === guest.cluster && g.vmid === guest.vmid && g.state === 'present');
    const unchanged = before !== undefined && part.declares(before) && part.same(before, guest);
    if (!scoped && unchanged) continue;
    const guestPlan = input.guestPlans.find((p) => p.cluster === guest.cluster && p.vmid === guest.vmid);
    if (guestPlan?.action === 'destroy') continue;
    items.push(planOne(guest, guestPlan, unchanged));
  }
  return items;
}

/** Whether a guest spec carries the guest key `key` (`pool:`, `ha:`, `firewall:`), even as null. */
export function declaresGuestKey(key: string): (guest: GuestSpec) => boolean {
  return (guest) => guest.refs !== undefined && Object.hasOwn(guest.refs, key);
}
