/**
 * The `restart:` policy of a guest and its cluster's default (README "Restarts"): whether an apply
 * that leaves values pending may restart the guest to put them in effect. Written as a word
 * (`never`, `allowed`, `in-window`) or as a mapping (`{ policy: allowed, force: true, timeout: 120 }`):
 * `timeout` is how long a clean shutdown may take, `force` lets a hard stop follow when it does not
 * finish in time. `in-window` restarts only inside an apply window, and needs windows on the guest
 * or its cluster (`apply-windows.ts`): validation refuses it without.
 */
import { z } from 'zod';
import type { RestartPolicy } from '../model.js';

/** What users write under `restart:`. */
export const RestartDocument = z.union([
  z.enum(['never', 'allowed', 'in-window']),
  z.strictObject({
    policy: z.enum(['never', 'allowed', 'in-window']),
    /** A hard stop may follow a shutdown that did not finish within `timeout` (default false). */
    force: z.boolean().optional(),
    /** Seconds a clean shutdown may take (default 180). */
    timeout: z.int().min(1).max(86_400).optional(),
  }),
]);
export type RestartDocument = z.infer<typeof RestartDocument>;

/** Seconds a clean shutdown may take unless the policy says. */
export const DEFAULT_SHUTDOWN_TIMEOUT_S = 180;

/** Restarts in flight at once per cluster unless the Cluster document says (`restartsInFlight`). */
export const DEFAULT_RESTARTS_IN_FLIGHT = 1;

/** The policy `doc` writes, defaults filled in. */
export function restartPolicy(doc: RestartDocument): RestartPolicy {
  if (typeof doc === 'string') return { policy: doc, force: false, timeout: DEFAULT_SHUTDOWN_TIMEOUT_S };
  return { policy: doc.policy, force: doc.force ?? false, timeout: doc.timeout ?? DEFAULT_SHUTDOWN_TIMEOUT_S };
}

/** The policy in force for a guest: its own, else its cluster's, else `never` (today's behaviour). */
export function effectiveRestart(guest: RestartPolicy | undefined, cluster: RestartPolicy | undefined): RestartPolicy {
  return guest ?? cluster ?? { policy: 'never', force: false, timeout: DEFAULT_SHUTDOWN_TIMEOUT_S };
}

/** The refusal of `in-window` without windows (the same words for a guest and a cluster). */
export const IN_WINDOW_REFUSED =
  'restart: in-window needs apply windows: add windows: to the guest or its Cluster document, or use never or allowed (see README "Apply windows")';
