/**
 * How a change reaches a running guest (live, pending a restart, needing a stop, losing data) and
 * how severe it is, per key, from Proxmox's hotplug rules (`core/hotplug.ts`). The planner asks it
 * of every change; the rendered badges and the check run's verdict come from it.
 */
import { HOTPLUG_RULES, LIVE, PENDING } from '../hotplug.js';
import type { Impact, Severity } from '../model.js';
import type { GuestType } from '../guest-flavours.js';

/** Context of a change: the guest's type, whether it runs, and its config in effect now. */
export interface ImpactContext {
  type: GuestType;
  running: boolean;
  /** The main config section (not pending): what Proxmox's hotplug code compares against. */
  current: Readonly<Record<string, string>>;
}

/** How one key change reaches the guest, and Proxmox's refusal when a running guest cannot take it. */
interface KeyImpact {
  impact: Impact;
  refusal?: string;
}

/**
 * Impact of setting (`to`) or deleting (`to` undefined) one key (docs/proxmox-api.md#hotplug-and-pending): a stopped
 * guest takes everything at once; a running one follows Proxmox's hotplug rules, shared with the
 * simulator in `core/hotplug.ts`.
 */
export function keyImpact(ctx: ImpactContext, key: string, to: string | undefined): KeyImpact {
  if (!ctx.running) return { impact: 'live' };
  const config = (k: string): string | undefined => ctx.current[k];
  const rules = HOTPLUG_RULES[ctx.type];
  const verdict = to === undefined ? rules.delete(key, config) : rules.set(key, to, config);
  if (verdict === LIVE) return { impact: 'live' };
  if (verdict === PENDING) return { impact: 'pending-restart' };
  return { impact: 'pending-restart', refusal: verdict.error.trimEnd() };
}

const SEVERITY_ORDER: Severity[] = ['read-only', 'configuration', 'service-impact', 'data-loss', 'host-access'];
const IMPACT_ORDER: Impact[] = ['live', 'pending-restart', 'needs-stop', 'data-loss'];

/** The more severe of two severities. */
export function maxSeverity(a: Severity, b: Severity): Severity {
  return SEVERITY_ORDER.indexOf(a) >= SEVERITY_ORDER.indexOf(b) ? a : b;
}

/** The stronger of two impacts (undefined counts as none). */
export function maxImpact(a: Impact | undefined, b: Impact): Impact {
  if (a === undefined) return b;
  return IMPACT_ORDER.indexOf(a) >= IMPACT_ORDER.indexOf(b) ? a : b;
}

/** Rank of a severity, for sorting (higher is more severe). */
export function severityRank(s: Severity): number {
  return SEVERITY_ORDER.indexOf(s);
}
