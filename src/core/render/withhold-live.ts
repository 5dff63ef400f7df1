/**
 * What a pull request may see of a plan: no live value of a guest the base branch does not own
 * (docs/github-app.md, "How pull requests from forks are planned"). The stored plan keeps those
 * values — the apply compares them with what it reads then — and every rendering for a pull
 * request goes through {@link withholdLiveValues} first.
 */
import type { GuestPlan, ObjectPlan, Operation, Plan } from '../model.js';
import { LIVE_WITHHELD } from '../plan/base-ownership.js';

export { LIVE_WITHHELD } from '../plan/base-ownership.js';

function withheldOperation(op: Operation, shownTo: ReadonlyMap<string, string | undefined>): Operation {
  switch (op.op) {
    case 'config': {
      // A written value may carry live parts (a NIC's MAC, a disk's volume): only the spec's value is shown.
      const set = Object.fromEntries(
        Object.entries(op.set).map(([key, value]) => [key, shownTo.get(key) === value ? value : LIVE_WITHHELD]),
      );
      const from = Object.fromEntries(Object.keys(op.from).map((key) => [key, LIVE_WITHHELD]));
      return { ...op, set, delete: [...op.delete], from };
    }
    case 'resize':
    case 'move-disk':
      return { ...op, from: LIVE_WITHHELD };
    default:
      return op;
  }
}

function withheldGuest(guest: GuestPlan): GuestPlan {
  const shownTo = new Map(guest.changes.map((c) => [c.key, c.to]));
  return {
    ...guest,
    changes: guest.changes.map((c) => (c.from === undefined ? { ...c } : { ...c, from: LIVE_WITHHELD })),
    operations: guest.operations.map((op) => withheldOperation(op, shownTo)),
    drift: guest.drift.map((d) => (d.actual === undefined ? { ...d } : { ...d, actual: LIVE_WITHHELD })),
    pending: guest.pending.map((p) => ({
      ...p,
      ...(p.current !== undefined ? { current: LIVE_WITHHELD } : {}),
      ...(p.pending !== undefined ? { pending: LIVE_WITHHELD } : {}),
    })),
  };
}

/**
 * A copy of `plan` in which every guest marked `liveWithheld` shows which keys would change and
 * to what the spec says, but none of its live values: current values, drift, pending values and
 * the live parts of operations read {@link LIVE_WITHHELD}. Guests without the mark are unchanged.
 */
export function withholdLiveValues(plan: Plan): Plan {
  if (!plan.guests.some((g) => g.liveWithheld === true) && !plan.objects.some((o) => o.liveWithheld === true)) return plan;
  return {
    ...plan,
    guests: plan.guests.map((g) => (g.liveWithheld === true ? withheldGuest(g) : g)),
    objects: plan.objects.map((o) => (o.liveWithheld === true ? withheldObject(o) : o)),
  };
}

/**
 * An item of another kind that follows a withheld guest: its current values and drift withheld, and
 * its operations (which only its kind can read, and which may carry a live value) left out.
 */
function withheldObject(item: ObjectPlan): ObjectPlan {
  return {
    ...item,
    changes: item.changes.map((c) => (c.from === undefined ? { ...c } : { ...c, from: LIVE_WITHHELD })),
    operations: [],
    drift: item.drift.map((d) => (d.actual === undefined ? { ...d } : { ...d, actual: LIVE_WITHHELD })),
  };
}
