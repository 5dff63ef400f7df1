/**
 * What a rehearsal found, guest by guest: would apply, or refused — the step and Proxmox's error
 * text — read from the apply result of the simulated copy. Pure data, stored with the plan and
 * rendered into the comment, the check run and the terminal.
 */
import type { ApplyResult, GuestApplyResult } from '../apply-result.js';
import type { Plan, SourceRef } from '../model.js';

/** One rehearsed guest. */
export interface RehearsedGuest {
  cluster: string;
  name: string;
  vmid: number;
  status: 'applied' | 'refused';
  /** The refused step (`create`, `config`, `resize`, `start`, …) and what it did. */
  step?: string;
  /** Proxmox's error text for the refused step. */
  error?: string;
  /** The spec document of the guest, for an annotation. */
  source?: SourceRef;
}

/** A rehearsal of one plan. */
export interface Rehearsal {
  version: 1;
  guests: RehearsedGuest[];
  /** Clusters that could not be copied, with why: their guests were not rehearsed. */
  skipped: Record<string, string>;
  /** API requests the copy took, over all clusters. */
  requests: number;
  ms: number;
}

/** The failing step of a guest's result: the last step that failed, else the last step. */
function refusedStep(result: GuestApplyResult): string | undefined {
  const failed = [...result.steps]
    .reverse()
    .find((s) => s.detail?.endsWith(': failed') || (s.exitStatus !== undefined && s.exitStatus !== 'OK'));
  const step = failed ?? result.steps.at(-1);
  if (!step) return undefined;
  return step.detail?.replace(/: failed$/, '') ?? step.op;
}

/** The rehearsal read from the apply of `plan` on the copy. */
export function rehearsalOf(
  plan: Plan,
  result: ApplyResult,
  context: { skipped: Record<string, string>; requests: number; ms: number },
): Rehearsal {
  const sources = new Map(plan.guests.map((g) => [`${g.cluster}/${g.vmid}`, g.source]));
  const guests: RehearsedGuest[] = [];
  for (const r of result.guests) {
    if (r.status === 'skipped' && r.steps.length === 0) continue;
    const source = sources.get(`${r.cluster}/${r.vmid}`);
    const base = { cluster: r.cluster, name: r.name, vmid: r.vmid, ...(source ? { source } : {}) };
    if (r.status === 'applied' || r.status === 'unchanged') {
      guests.push({ ...base, status: 'applied' });
      continue;
    }
    const step = refusedStep(r);
    guests.push({ ...base, status: 'refused', ...(step ? { step } : {}), error: r.error ?? r.status });
  }
  return { version: 1, guests, skipped: context.skipped, requests: context.requests, ms: context.ms };
}

/** The refused guests of a rehearsal. */
export function refusals(rehearsal: Rehearsal): RehearsedGuest[] {
  return rehearsal.guests.filter((g) => g.status === 'refused');
}

/** The one-line verdict: "Rehearsal: 10 of 10 guests applied on a simulated copy". */
export function rehearsalHeadline(rehearsal: Rehearsal): string {
  const applied = rehearsal.guests.filter((g) => g.status === 'applied').length;
  const total = rehearsal.guests.length;
  return `Rehearsal: ${applied} of ${total} guest${total === 1 ? '' : 's'} applied on a simulated copy`;
}

/** The line a person reads for one refusal. */
export function refusalLine(guest: RehearsedGuest): string {
  return `${guest.cluster}/${guest.name} (${guest.vmid}): ${guest.step ?? 'apply'} refused — ${guest.error ?? 'refused'}`;
}

/**
 * The rehearsal as a pull request may show it: the error text of a guest whose live values the
 * plan withholds (`GuestPlan.liveWithheld`) could quote them, so only the step is shown.
 */
export function withholdRehearsalLive(rehearsal: Rehearsal, plan: Plan): Rehearsal {
  const withheld = new Set(plan.guests.filter((g) => g.liveWithheld).map((g) => `${g.cluster}/${g.vmid}`));
  if (withheld.size === 0) return rehearsal;
  return {
    ...rehearsal,
    guests: rehearsal.guests.map((g) =>
      g.status === 'refused' && withheld.has(`${g.cluster}/${g.vmid}`)
        ? { ...g, error: 'refused (Proxmox’s answer withheld: the base branch does not own this guest)' }
        : g,
    ),
  };
}
