/**
 * Apply windows in the CLI's executor (README "Apply windows"): an item whose plan has `windows`
 * (a guest's own or its cluster's; an object of another kind — a pool, a firewall, an HA resource,
 * a backup job — its cluster's), none of them open by the caller's clock, is held — skipped,
 * retryable, never written — with when its next window opens; `--now` lets it in. The App's queue
 * waits for the window instead (`queue/apply/apply-windows.ts`): a command line does not sit for days.
 */
import type { GuestApplyResult, ObjectApplyResult } from '../core/apply-result.js';
import { closedReason, parseWindows, windowState } from '../core/spec/apply-windows.js';
import type { GuestPlan, ObjectPlan } from '../core/model.js';
import { resultOf } from './apply-object.js';

/** How the executor judges windows: the time (ms since the epoch), and whether `--now` overrides them. */
export interface WindowPolicy {
  clock: () => number;
  now: boolean;
}

/** Why an item with `windows` is held now, or undefined when it may apply. */
function heldReason(windows: readonly string[] | undefined, policy: WindowPolicy | undefined): string | undefined {
  if (policy?.now === true || !windows || windows.length === 0) return undefined;
  const state = windowState(parseWindows(windows), (policy?.clock ?? Date.now)());
  if (state.open) return undefined;
  return `held: ${closedReason(state)}; nothing was written — apply again then, or with --now`;
}

/** The held result of a guest outside every one of its windows, or undefined when it may apply. */
export function heldOutsideWindow(plan: GuestPlan, policy: WindowPolicy | undefined): GuestApplyResult | undefined {
  const error = heldReason(plan.windows, policy);
  if (error === undefined) return undefined;
  return { cluster: plan.cluster, name: plan.name, vmid: plan.vmid, node: plan.node, status: 'skipped', steps: [], error, retryable: true };
}

/** The held result of an object of another kind outside every window of its cluster, or undefined when it may apply. */
export function objectHeldOutsideWindow(item: ObjectPlan, policy: WindowPolicy | undefined): ObjectApplyResult | undefined {
  const error = heldReason(item.windows, policy);
  return error === undefined ? undefined : resultOf(item, 'skipped', { error, retryable: true });
}
