/**
 * What a rehearsal found, guest by guest and object by object (items of other kinds): would
 * apply, or refused — the step and Proxmox's error text — read from the apply result of the
 * simulated copy. Only what the plan's apply touches is counted. Pure data, stored with the plan
 * and rendered into the comment, the check run and the terminal.
 */
import type { ApplyResult, GuestApplyResult, ObjectApplyResult } from '../apply-result.js';
import { objectKind } from '../kinds/registry.js';
import type { ObjectPlan, Plan, SourceRef } from '../model.js';
import { guestTouched } from './copy.js';
import { objectTouched } from './kinds-copy.js';

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
  /** What the reviewer should know of an applied guest (`locked (backup) when planned: …`). */
  note?: string;
}

/** One rehearsed object of another kind (a pool, a backup job, a guest's HA resource or firewall). */
export interface RehearsedObject {
  kind: string;
  /** The item's key (`lab/ha/100`). */
  key: string;
  cluster: string;
  /** The kind's label for people (`HA resource of app-01 (vm:100)`). */
  label: string;
  status: 'applied' | 'refused';
  /** The refused operation (`add-fw-rule`, `create-pool`, …). */
  step?: string;
  /** Proxmox's error text, or what moved on the copy. */
  error?: string;
  /** The spec document the item comes from, for an annotation. */
  source?: SourceRef;
}

/** A rehearsal of one plan. */
export interface Rehearsal {
  version: 1;
  guests: RehearsedGuest[];
  /** The objects of other kinds; absent in a rehearsal stored before those were rehearsed. */
  objects?: RehearsedObject[];
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
  context: {
    skipped: Record<string, string>;
    requests: number;
    ms: number;
    /** Per guest (`cluster/vmid`), the lock it held when planned that the apply waits out. */
    locked?: Readonly<Record<string, string>>;
  },
): Rehearsal {
  const sources = new Map(plan.guests.filter((g) => guestTouched(g.action)).map((g) => [`${g.cluster}/${g.vmid}`, g.source]));
  const guests: RehearsedGuest[] = [];
  for (const r of result.guests) {
    if ((r.status === 'skipped' && r.steps.length === 0) || !sources.has(`${r.cluster}/${r.vmid}`)) continue;
    const source = sources.get(`${r.cluster}/${r.vmid}`);
    const base = { cluster: r.cluster, name: r.name, vmid: r.vmid, ...(source ? { source } : {}) };
    if (r.status === 'applied' || r.status === 'unchanged') {
      const lock = context.locked?.[`${r.cluster}/${r.vmid}`];
      guests.push({ ...base, status: 'applied', ...(lock ? { note: `locked (${lock}) when planned: the apply will wait for it` } : {}) });
      continue;
    }
    const step = refusedStep(r);
    guests.push({ ...base, status: 'refused', ...(step ? { step } : {}), error: r.error ?? r.status });
  }
  const objects = (result.objects ?? []).flatMap((r) => {
    const item = plan.objects.find((o) => o.key === r.key);
    return item && objectTouched(item) && !(r.status === 'skipped' && r.steps.length === 0) ? [rehearsedObject(item, r)] : [];
  });
  return { version: 1, guests, objects, skipped: context.skipped, requests: context.requests, ms: context.ms };
}

/**
 * One object's outcome. The refused step is the first operation without a step of its own (a
 * kind records a step once an operation went through); a conflict on the copy (it differs from
 * what was reviewed) is a refusal that names what moved.
 */
function rehearsedObject(item: ObjectPlan, r: ObjectApplyResult): RehearsedObject {
  const base = {
    kind: item.kind,
    key: item.key,
    cluster: item.cluster,
    label: objectKind(item.kind)?.label(item) ?? `${item.kind} ${item.name}`,
    ...(item.source ? { source: item.source } : {}),
  };
  if (r.status === 'applied' || r.status === 'unchanged') return { ...base, status: 'applied' };
  const step = item.operations[Math.min(r.steps.length, item.operations.length - 1)]?.op;
  const error = r.status === 'conflict' ? `differs from the review on the copy: ${(r.conflict ?? []).join('; ')}` : (r.error ?? r.status);
  return { ...base, status: 'refused', ...(step ? { step } : {}), error };
}

/** The refused guests of a rehearsal. */
export function refusals(rehearsal: Rehearsal): RehearsedGuest[] {
  return rehearsal.guests.filter((g) => g.status === 'refused');
}

/** The refused objects of other kinds. */
export function objectRefusals(rehearsal: Rehearsal): RehearsedObject[] {
  return (rehearsal.objects ?? []).filter((o) => o.status === 'refused');
}

/** The applied guests with a note for the reviewer. */
export function notes(rehearsal: Rehearsal): RehearsedGuest[] {
  return rehearsal.guests.filter((g) => g.status === 'applied' && g.note !== undefined);
}

/** The line a person reads for one note. */
export function noteLine(guest: RehearsedGuest): string {
  return `${guest.cluster}/${guest.name} (${guest.vmid}): ${guest.note ?? ''}`;
}

/** One line of a rehearsal's report after its headline: a refusal, a note for the reviewer, or a cluster not rehearsed. */
export interface RehearsalItem {
  mark: 'refused' | 'note' | 'skipped';
  text: string;
}

/** The lines of a rehearsal's report after its headline, in the order every rendering lists them. */
export function rehearsalItems(rehearsal: Rehearsal): RehearsalItem[] {
  return [
    ...refusals(rehearsal).map((g) => ({ mark: 'refused' as const, text: refusalLine(g) })),
    ...objectRefusals(rehearsal).map((o) => ({ mark: 'refused' as const, text: objectRefusalLine(o) })),
    ...notes(rehearsal).map((g) => ({ mark: 'note' as const, text: noteLine(g) })),
    ...Object.entries(rehearsal.skipped).map(([cluster, why]) => ({
      mark: 'skipped' as const,
      text: `cluster ${cluster} not rehearsed: ${why}`,
    })),
  ];
}

/** Whether anything was refused, guest or object. */
export function anyRefused(rehearsal: Rehearsal): boolean {
  return refusals(rehearsal).length > 0 || objectRefusals(rehearsal).length > 0;
}

/** `3 of 3 guests`. */
function countText(items: readonly { status: string }[], noun: string): string {
  const applied = items.filter((i) => i.status === 'applied').length;
  return `${applied} of ${items.length} ${noun}${items.length === 1 ? '' : 's'}`;
}

/**
 * The one-line verdict: "Rehearsal: 10 of 10 guests applied on a simulated copy", with "and 3 of 3
 * other objects" when the plan touches objects of other kinds (only those, when it touches no guest).
 */
export function rehearsalHeadline(rehearsal: Rehearsal): string {
  const objects = rehearsal.objects ?? [];
  const parts: string[] = [];
  if (rehearsal.guests.length > 0 || objects.length === 0) parts.push(countText(rehearsal.guests, 'guest'));
  if (objects.length > 0) parts.push(countText(objects, 'other object'));
  return `Rehearsal: ${parts.join(' and ')} applied on a simulated copy`;
}

/** The line a person reads for one refusal. */
export function refusalLine(guest: RehearsedGuest): string {
  return `${guest.cluster}/${guest.name} (${guest.vmid}): ${guest.step ?? 'apply'} refused — ${guest.error ?? 'refused'}`;
}

/** The line a person reads for one refused object. */
export function objectRefusalLine(object: RehearsedObject): string {
  return `${object.cluster}/${object.label}: ${object.step ?? 'apply'} refused — ${object.error ?? 'refused'}`;
}

/**
 * The rehearsal as a pull request may show it: the error text of a guest whose live values the
 * plan withholds (`GuestPlan.liveWithheld`) could quote them, so only the step is shown.
 */
export function withholdRehearsalLive(rehearsal: Rehearsal, plan: Plan): Rehearsal {
  const withheld = new Set(plan.guests.filter((g) => g.liveWithheld).map((g) => `${g.cluster}/${g.vmid}`));
  const withheldObjects = new Set(plan.objects.filter((o) => o.liveWithheld).map((o) => o.key));
  if (withheld.size === 0 && withheldObjects.size === 0) return rehearsal;
  const answer = 'refused (Proxmox’s answer withheld: the base branch does not own this guest)';
  return {
    ...rehearsal,
    guests: rehearsal.guests.map((g) => (g.status === 'refused' && withheld.has(`${g.cluster}/${g.vmid}`) ? { ...g, error: answer } : g)),
    ...(rehearsal.objects
      ? { objects: rehearsal.objects.map((o) => (o.status === 'refused' && withheldObjects.has(o.key) ? { ...o, error: answer } : o)) }
      : {}),
  };
}
