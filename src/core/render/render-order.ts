/**
 * What a plan says about restarts and order (README "Restarts", "Order between guests: dependsOn"),
 * worded once for every renderer: the restart a guest's apply will carry out and why, and the
 * guests it applies after. Pure text; each renderer escapes it for its medium.
 */
import type { GuestPlan, ObjectPlan, Plan } from '../model.js';

/** The restart of `guest`, as one sentence; undefined when its apply restarts nothing. */
export function restartSentence(guest: GuestPlan): string | undefined {
  const restart = guest.restart;
  if (!restart) return undefined;
  const stop = restart.force ? `then a hard stop if it has not stopped` : 'no hard stop (force: false)';
  const when = restart.inWindow ? 'restarts after the apply, inside an apply window only' : 'restarts after the apply';
  return `${when}: ${restart.reason}; clean shutdown within ${restart.timeout} s, ${stop}; at most ${restart.inFlight} restart(s) at once on ${guest.cluster}`;
}

/** The snapshot the apply takes first, as one sentence; undefined when none. */
export function snapshotSentence(guest: GuestPlan): string | undefined {
  if (!guest.snapshot) return undefined;
  return `${guest.snapshot.reason}; the ${guest.snapshot.keep} newest snapshots of pve-gitops are kept`;
}

/**
 * When the item may be applied (its apply windows), as one sentence; undefined when any time. An
 * object of another kind (a pool, a firewall) has its cluster's windows, and says so.
 */
export function windowSentence(item: Pick<GuestPlan | ObjectPlan, 'kind' | 'windows'>): string | undefined {
  if (!item.windows || item.windows.length === 0) return undefined;
  const whose = item.kind === 'guest' ? 'its' : "its cluster's";
  return `applies only inside ${whose} apply window${item.windows.length === 1 ? '' : 's'}: ${item.windows.join('; ')} (an admin's /pve apply --now overrides)`;
}

/** The guests `guest` applies after, as one sentence; undefined when it depends on none. */
export function orderSentence(guest: GuestPlan, plan?: Plan): string | undefined {
  if (!guest.after || guest.after.length === 0) return undefined;
  const names = new Map((plan?.guests ?? []).map((g) => [g.key, `${g.cluster}/${g.name}`]));
  const list = guest.after.map((key) => names.get(key) ?? key).join(', ');
  return `applies after ${list} (dependsOn); held, not written, if one of them does not apply`;
}

/** `cluster/name (vmid): sentence` for every guest the apply will restart, by name. */
export function plannedRestarts(plan: Plan): string[] {
  const lines: string[] = [];
  for (const guest of plan.guests) {
    const sentence = restartSentence(guest);
    if (sentence) lines.push(`${guest.cluster}/${guest.name} (${guest.vmid}): ${sentence}`);
  }
  return lines.sort();
}
