/**
 * Words, signs and ordering shared by every plan renderer, so the comment, the terminal and the
 * check run describe a guest the same way.
 */
import type { GuestAction, GuestPlan, HostAccessItem, Impact, InsecureTransport } from '../model.js';
import { severityRank } from '../plan/impact.js';

/** Label per action as a reader sees it. */
export const ACTION_LABEL: Record<GuestAction, string> = {
  create: 'create',
  update: 'update',
  destroy: 'destroy',
  noop: 'no-op',
  orphan: 'orphan',
  error: 'error',
};

/** Emoji per action for the comment. */
export const ACTION_EMOJI: Record<GuestAction, string> = {
  create: '🟢',
  update: '🟡',
  destroy: '🔴',
  noop: '⚪',
  orphan: '🟣',
  error: '❌',
};

/** Terraform-style sign per action for the terminal. */
export const ACTION_SIGN: Record<GuestAction, string> = {
  create: '+',
  update: '~',
  destroy: '-',
  noop: ' ',
  orphan: '?',
  error: '!',
};

/** Impact labels as the design names them; data loss is shouted because it cannot be undone. */
export const IMPACT_LABEL: Record<Impact, string> = {
  live: 'live',
  'pending-restart': 'pending restart',
  'needs-stop': 'needs stop',
  'data-loss': 'DATA-LOSS RISK',
};

const IMPACT_RANK: Record<Impact, number> = { live: 0, 'pending-restart': 1, 'needs-stop': 2, 'data-loss': 3 };

/** How a connection's insecurity is described to a reviewer. */
export const INSECURE_LABEL: Record<InsecureTransport, string> = {
  http: 'plain http:// — the API token travelled unencrypted',
  'tls-unverified': 'TLS without certificate verification — the server was not authenticated',
};

/** One line for a host-access change: what the key does to the host, and whether the policy allows it. */
export function describeHostAccess(item: HostAccessItem): string {
  const verdict =
    item.allowed === undefined
      ? "the server's policy was not checked"
      : item.allowed
        ? "allowed by the server's policy"
        : "not allowed by the server's policy";
  return `${item.key}: ${item.reason} (${item.rule}; ${verdict}; Proxmox requires ${item.requires})`;
}

/** The guest's overall impact: the planner's, else the worst of its key changes. */
export function guestImpact(guest: GuestPlan): Impact | undefined {
  if (guest.severity === 'data-loss') return 'data-loss';
  if (guest.impact !== undefined) return guest.impact;
  let worst: Impact | undefined;
  for (const change of guest.changes) {
    if (worst === undefined || IMPACT_RANK[change.impact] > IMPACT_RANK[worst]) worst = change.impact;
  }
  return worst;
}

/**
 * Reading order of guest details, which is also the order they survive folding: guests with
 * errors first (they block the apply), then by severity, data-loss first, then cluster/name.
 */
export function compareGuests(a: GuestPlan, b: GuestPlan): number {
  const errorA = a.action === 'error' || a.errors.length > 0 ? 1 : 0;
  const errorB = b.action === 'error' || b.errors.length > 0 ? 1 : 0;
  if (errorA !== errorB) return errorB - errorA;
  const severity = severityRank(b.severity) - severityRank(a.severity);
  if (severity !== 0) return severity;
  if (a.cluster !== b.cluster) return a.cluster < b.cluster ? -1 : 1;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.vmid - b.vmid;
}

/** Orders by cluster, then name, then VMID: the stable reading order for lists. */
export function compareByName(
  a: { cluster: string; name: string; vmid: number },
  b: { cluster: string; name: string; vmid: number },
): number {
  if (a.cluster !== b.cluster) return a.cluster < b.cluster ? -1 : 1;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.vmid - b.vmid;
}

/** `1 error`, `2 errors`. */
export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}
