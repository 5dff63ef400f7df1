/**
 * Apply windows in the CLI's executor (README "Apply windows"): a guest whose plan has `windows`,
 * none of them open by the caller's clock, is held — skipped, retryable, never written — with when
 * its next window opens; `--now` lets it in. The App's queue waits for the window instead
 * (`queue/apply/apply-windows.ts`): a command line does not sit for days.
 */
import type { GuestApplyResult } from '../core/apply-result.js';
import { closedReason, parseWindows, windowState } from '../core/spec/apply-windows.js';
import type { GuestPlan } from '../core/model.js';

/** How the executor judges windows: the time (ms since the epoch), and whether `--now` overrides them. */
export interface WindowPolicy {
  clock: () => number;
  now: boolean;
}

/** The held result of a guest outside every one of its windows, or undefined when it may apply. */
export function heldOutsideWindow(plan: GuestPlan, policy: WindowPolicy | undefined): GuestApplyResult | undefined {
  if (policy?.now === true || !plan.windows || plan.windows.length === 0) return undefined;
  const state = windowState(parseWindows(plan.windows), (policy?.clock ?? Date.now)());
  if (state.open) return undefined;
  return {
    cluster: plan.cluster,
    name: plan.name,
    vmid: plan.vmid,
    node: plan.node,
    status: 'skipped',
    steps: [],
    error: `held: ${closedReason(state)}; nothing was written — apply again then, or with --now`,
    retryable: true,
  };
}
