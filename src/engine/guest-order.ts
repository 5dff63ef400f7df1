/**
 * Order between the guests of one run (`dependsOn`, README "Order between guests: dependsOn"): a guest whose
 * plan has `after` keys starts only once each of those guests has its result, and is held —
 * skipped, retryable, never written — when one of them did not apply. Keys of guests the run does
 * not carry are not waited for. Used by the CLI's executor; the App's queue does the same across
 * workers (`queue/apply/depends-on.ts`).
 */
import type { ApplyStatus, GuestApplyResult } from '../core/apply-result.js';
import type { GuestPlan } from '../core/model.js';

/** Statuses after which a guest that depends on this one may go ahead. */
const FOLLOWABLE: ReadonlySet<ApplyStatus> = new Set(['applied', 'unchanged']);

/** Results by guest key, as they arrive. */
export class GuestOrder {
  readonly #settled = new Map<string, Promise<ApplyStatus>>();
  readonly #resolve = new Map<string, (status: ApplyStatus) => void>();

  /** `keys`: every guest of the run. */
  constructor(keys: Iterable<string>) {
    for (const key of keys) this.#settled.set(key, new Promise((resolve) => this.#resolve.set(key, resolve)));
  }

  /** Records a guest's result. */
  settle(key: string, status: ApplyStatus): void {
    this.#resolve.get(key)?.(status);
  }

  /** Waits for the guests `plan` follows; the first that did not apply, or undefined to go ahead. */
  async blocker(plan: GuestPlan): Promise<{ key: string; status: ApplyStatus } | undefined> {
    for (const key of plan.after ?? []) {
      const settled = this.#settled.get(key);
      if (!settled) continue;
      const status = await settled;
      if (!FOLLOWABLE.has(status)) return { key, status };
    }
    return undefined;
  }
}

/** The result of a guest held because a guest it depends on ended `status`. */
export function heldGuestResult(
  plan: GuestPlan,
  blocker: { key: string; status: ApplyStatus },
  blockerName: string | undefined,
): GuestApplyResult {
  const named = blockerName ? `${blockerName} (${blocker.key})` : blocker.key;
  return {
    cluster: plan.cluster,
    name: plan.name,
    vmid: plan.vmid,
    node: plan.node,
    status: 'skipped',
    steps: [],
    error: `held: it depends on ${named}, which ended ${blocker.status}; nothing was written — apply again once that guest applies`,
    retryable: true,
  };
}
