/**
 * A plan or a drift report from specs and readers: observe, then plan. The command line and the
 * App's plan and drift workers all start here; it is given readers only, so it cannot write.
 */
import type { ClusterAccess, ObservedState, Plan, SpecSet } from '../core/model.js';
import { GuestPrePlans, planScope, planSpecs } from '../core/plan/plan-specs.js';
import type { ClusterReader } from '../core/ports.js';
import { observeClusters, type ObserveOptions } from './observe-clusters.js';

/**
 * Guests in scope from which they are planned as their reads arrive: a pull request's plan of a
 * few guests gains nothing from it, and the lookup of their specs passes over the whole estate.
 */
const PRE_PLAN_MIN_GUESTS = 100;

/** Inputs of {@link runPlan}. */
interface RunPlanInput extends ObserveOptions {
  head: SpecSet;
  base?: SpecSet;
  readers: Readonly<Record<string, ClusterReader>>;
  ref?: string;
  /** Per cluster, the server's host-access policy and whether the connection is insecure. */
  access?: Readonly<Record<string, ClusterAccess>>;
  /** A pull request's plan: the live values of guests the base branch does not own are withheld (`PlanInput.withholdUnowned`). */
  withholdUnowned?: boolean;
  /** Clusters deliberately not read (no reader), with why: the plan reports each as not readable for that reason. */
  unavailable?: Readonly<Record<string, string>>;
}

/**
 * Reads what the plan needs and plans it. Read-only by construction: it is given readers only.
 * With a base, only what changed between base and head is read and planned.
 */
export async function runPlan(input: RunPlanInput): Promise<Plan> {
  return (await observePlan(input)).plan;
}

/**
 * {@link runPlan}, also returning what was read: `apply --specs` needs to know which guests could
 * not be read, to apply the others (see {@link unreadGuests}).
 */
export async function observePlan(input: RunPlanInput): Promise<{ plan: Plan; observed: ObservedState }> {
  const scope = planScope(input.head, input.base);
  // Each guest is planned as its read arrives, while the others are still being read — when
  // there are enough of them: looking specs up costs a pass over the whole estate.
  const prePlanned = scope.guests.size >= PRE_PLAN_MIN_GUESTS ? new GuestPrePlans(input.head, input.base) : undefined;
  const observed = await observeClusters(
    input.readers,
    { head: input.head, base: input.base },
    scope,
    prePlanned ? withPrePlans(input, prePlanned) : input,
  );
  if (input.unavailable) observed.errors = { ...observed.errors, ...input.unavailable };
  const plan = planSpecs({
    head: input.head,
    base: input.base,
    observed,
    scope,
    ref: input.ref,
    access: input.access,
    ...(input.withholdUnowned ? { withholdUnowned: true } : {}),
    ...(prePlanned ? { prePlanned } : {}),
  });
  return { plan, observed };
}

/** The observe options of `input`, with each guest read handed to `prePlanned` as well. */
function withPrePlans(input: ObserveOptions, prePlanned: GuestPrePlans): ObserveOptions {
  const onGuestRead = input.onGuestRead;
  return {
    ...input,
    onGuestRead: (cluster, listed, observed) => {
      onGuestRead?.(cluster, listed, observed);
      // After the requests this answer lets go out (undici writes them from an immediate): a
      // plan made first would hold every later request back by its time. One still waiting when
      // planSpecs runs is simply planned there.
      setImmediate(() => prePlanned.add(cluster, listed, observed));
    },
  };
}

/**
 * The guests of `plan` that are errors only because their read failed (`cluster/vmid`): a
 * timeout or a 500 on one guest says nothing about the others, which can be applied as planned.
 */
export function unreadGuests(plan: Plan, observed: ObservedState): Set<string> {
  const unread = new Set<string>();
  for (const guest of plan.guests) {
    if (guest.action === 'error' && observed.clusters[guest.cluster]?.readErrors?.[guest.vmid] !== undefined) {
      unread.add(guest.key);
    }
  }
  return unread;
}

/**
 * The drift report: every owned guest of every cluster read against the specs, with
 * the specs as their own base, so every difference is drift. It never writes.
 */
export async function runDrift(input: Omit<RunPlanInput, 'base'>): Promise<Plan> {
  return (await observeDrift(input)).plan;
}

/**
 * {@link runDrift}, also returning what was read: the drift report needs the listings too
 * (unowned guests inside a cluster's VMID range are in no plan).
 */
export async function observeDrift(input: Omit<RunPlanInput, 'base'>): Promise<{ plan: Plan; observed: ObservedState }> {
  const scope = planScope(input.head);
  const prePlanned = new GuestPrePlans(input.head, input.head);
  const observed = await observeClusters(input.readers, { head: input.head }, scope, {
    ...withPrePlans(input, prePlanned),
    driftReport: true,
  });
  if (input.unavailable) observed.errors = { ...observed.errors, ...input.unavailable };
  const plan = planSpecs({
    head: input.head,
    base: input.head,
    observed,
    scope,
    ref: input.ref,
    access: input.access,
    prePlanned,
    driftReport: true,
  });
  return { plan, observed };
}
