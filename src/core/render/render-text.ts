/**
 * The plan for a terminal, in the manner of `terraform plan`: a sign and an action per guest, its
 * key changes indented underneath, then drift and pending sections and a one-line total.
 */
import { orderSentence, restartSentence, snapshotSentence, windowSentence } from './render-order.js';
import { describeOperation } from '../operations.js';
import type { GuestAction, GuestPlan, KeyChange, ObjectPlan, Plan } from '../model.js';
import { objectLabel, objectSteps } from './object-items.js';
import { countPlan, hasChanges, type PlanCounts, unchangedLabel } from './plan-counts.js';
import {
  ACTION_LABEL,
  ACTION_SIGN,
  IMPACT_LABEL,
  compareByName,
  compareGuests,
  describeHostAccess,
  guestImpact,
  INSECURE_LABEL,
  plural,
} from './plan-labels.js';
import { SENSITIVE_PLACEHOLDER } from './sensitive.js';
import { isSensitiveKey } from '../key-rules.js';
import { painter, terminalSafe, type Painter, type Style } from './text-format.js';

/** Options of {@link renderPlanText}. */
interface PlanTextOptions {
  /** Colour with ANSI escapes (only for a TTY). */
  color?: boolean;
}

const ACTION_STYLE: Record<GuestAction, Style[]> = {
  create: ['green'],
  update: ['yellow'],
  destroy: ['red'],
  noop: ['dim'],
  orphan: ['magenta'],
  error: ['red', 'bold'],
};

const INDENT = '    ';

/** Renders a plan for the terminal; ends with a newline. */
export function renderPlanText(plan: Plan, options: PlanTextOptions = {}): string {
  const paint = painter(options.color === true);
  const { total } = countPlan(plan);
  const lines: string[] = [];
  if (plan.ref !== undefined) lines.push(`Plan for ${terminalSafe(plan.ref)} (${terminalSafe(plan.createdAt)})`, '');
  for (const c of plan.insecureConnections ?? []) {
    lines.push(
      `${paint('Insecure connection:', 'red', 'bold')} cluster ${terminalSafe(c.cluster)} was read over ${INSECURE_LABEL[c.transport]}`,
    );
  }
  if ((plan.insecureConnections ?? []).length > 0) lines.push('');

  // Changes that reach the host come first.
  const hostAccess = [...plan.guests]
    .sort(compareByName)
    .flatMap((guest) => (guest.hostAccess ?? []).map((item) => `  ${guestRef(guest)}: ${terminalSafe(describeHostAccess(item), 2_000)}`));
  if (hostAccess.length > 0) lines.push(paint('Host access (changes reaching beyond the guest):', 'red', 'bold'), ...hostAccess, '');

  if (plan.errors.length > 0) {
    lines.push(paint('Errors:', 'red', 'bold'));
    for (const error of plan.errors)
      lines.push(`  ${paint('!', 'red', 'bold')} ${scope(error.cluster)}${terminalSafe(error.message, 2_000)}`);
    lines.push('');
  }
  if (plan.warnings.length > 0) {
    lines.push(paint('Warnings:', 'yellow'));
    for (const warning of plan.warnings) lines.push(`  ${scope(warning.cluster)}${terminalSafe(warning.message, 2_000)}`);
    lines.push('');
  }

  const listed = plan.guests.filter((guest) => guest.action !== 'noop').sort(compareGuests);
  for (const guest of listed) lines.push(...renderGuest(guest, paint));
  const objects = plan.objects.filter((item) => item.action !== 'noop');
  for (const item of objects) lines.push(...renderObject(item, paint));
  if (listed.length + objects.length > 0) lines.push('');

  lines.push(...renderDrift(plan.guests, paint), ...renderObjectDrift(plan.objects, paint), ...renderPending(plan.guests, paint));
  const unchanged = unchangedLabel(plan);
  if (unchanged !== undefined) lines.push(paint(`${unchanged} unchanged.`, 'dim'));
  lines.push(finalLine(total, paint));
  return `${lines.join('\n')}\n`;
}

function scope(cluster: string | undefined): string {
  return cluster !== undefined ? `${terminalSafe(cluster)}: ` : '';
}

function guestRef(guest: GuestPlan): string {
  return `${terminalSafe(guest.cluster)}/${terminalSafe(guest.name)} (${guest.vmid})`;
}

/** A value as shown: secrets hidden; cut to fit with its length, unless it reaches the host (`whole`). */
function shown(key: string, value: string | undefined, whole = false): string {
  if (value === undefined) return '(unset)';
  if (isSensitiveKey(key)) return SENSITIVE_PLACEHOLDER;
  return whole ? terminalSafe(value, Number.POSITIVE_INFINITY) : terminalSafe(value);
}

function renderGuest(guest: GuestPlan, paint: Painter): string[] {
  const style = ACTION_STYLE[guest.action];
  const impact = guestImpact(guest);
  let line = `${paint(ACTION_SIGN[guest.action], ...style, 'bold')} ${paint(ACTION_LABEL[guest.action].padEnd(7), ...style)} ${paint(guestRef(guest), 'bold')}`;
  if (guest.action === 'create') line += ` on ${terminalSafe(guest.node)}`;
  if (guest.severity === 'host-access') line += ` [${paint('HOST ACCESS', 'red', 'bold')}]`;
  if (impact !== undefined) line += ` [${impact === 'data-loss' ? paint(IMPACT_LABEL[impact], 'red', 'bold') : IMPACT_LABEL[impact]}]`;
  const lines = [line];
  for (const error of guest.errors) lines.push(`${INDENT}${paint('! error:', 'red', 'bold')} ${terminalSafe(error, 2_000)}`);
  for (const change of guest.changes) lines.push(`${INDENT}${renderChange(change, paint)}`);
  for (const op of guest.operations) {
    const text = describeOperation(op, { value: (v) => terminalSafe(v) });
    if (text !== undefined) lines.push(`${INDENT}${paint('>', 'cyan')} ${text}`);
  }
  for (const warning of guest.warnings) lines.push(`${INDENT}${paint('warning:', 'yellow')} ${terminalSafe(warning, 2_000)}`);
  for (const note of [orderSentence(guest), restartSentence(guest), windowSentence(guest), snapshotSentence(guest)])
    if (note) lines.push(`${INDENT}${paint('note:', 'cyan')} ${terminalSafe(note, 2_000)}`);
  if (guest.drift.length > 0)
    lines.push(`${INDENT}${paint('drift:', 'yellow')} ${plural(guest.drift.length, 'key')} changed outside git (see Drift below)`);
  if (guest.pending.length > 0)
    lines.push(`${INDENT}pending: ${plural(guest.pending.length, 'key')} not in effect until restart (see Pending below)`);
  if (guest.vmidDerived) lines.push(`${INDENT}note: derived VMID ${guest.vmid} — pin it with \`vmid: ${guest.vmid}\``);
  if (guest.adopt === true) lines.push(`${INDENT}note: adopts an existing unowned guest (adds the owner tag)`);
  if (guest.action === 'orphan') lines.push(`${INDENT}note: carries the owner tag but has no spec; destroyed only with \`prune: true\``);
  return lines;
}

/** An item of another kind: its sign, action and label, then its errors, changes, steps and warnings. */
function renderObject(item: ObjectPlan, paint: Painter): string[] {
  const style = ACTION_STYLE[item.action];
  const lines = [
    `${paint(ACTION_SIGN[item.action], ...style, 'bold')} ${paint(ACTION_LABEL[item.action].padEnd(7), ...style)} ${paint(`${terminalSafe(item.cluster)}: ${terminalSafe(objectLabel(item))}`, 'bold')}`,
  ];
  for (const error of item.errors) lines.push(`${INDENT}${paint('! error:', 'red', 'bold')} ${terminalSafe(error, 2_000)}`);
  for (const change of item.changes) lines.push(`${INDENT}${renderChange(change, paint)}`);
  for (const step of objectSteps(item)) lines.push(`${INDENT}${paint('>', 'cyan')} ${terminalSafe(step, 2_000)}`);
  for (const warning of item.warnings) lines.push(`${INDENT}${paint('warning:', 'yellow')} ${terminalSafe(warning, 2_000)}`);
  const window = windowSentence(item);
  if (window) lines.push(`${INDENT}${paint('note:', 'cyan')} ${terminalSafe(window, 2_000)}`);
  if (item.drift.length > 0) lines.push(`${INDENT}${paint('drift:', 'yellow')} changed outside git (see Drift below)`);
  return lines;
}

/** Drift of items of other kinds, in the Drift section's form. */
function renderObjectDrift(items: readonly ObjectPlan[], paint: Painter): string[] {
  const drifted = items.filter((item) => item.drift.length > 0);
  if (drifted.length === 0) return [];
  const lines = [paint('Drift (changed outside git, reverted by apply):', 'yellow')];
  for (const item of drifted) {
    lines.push(`  ${terminalSafe(item.cluster)}: ${terminalSafe(objectLabel(item))}`);
    for (const d of item.drift)
      lines.push(`${INDENT}${terminalSafe(d.key)}: ${shown(d.key, d.expected)} in git, ${shown(d.key, d.actual)} on the cluster`);
  }
  lines.push('');
  return lines;
}

/** `~ memory: 2048 → 4096 (live)`, `+ key: value`, `- key: value`. */
function renderChange(change: KeyChange, paint: Painter): string {
  let impact = change.impact === 'data-loss' ? paint(IMPACT_LABEL[change.impact], 'red', 'bold') : IMPACT_LABEL[change.impact];
  if (change.severity === 'host-access') impact += `, ${paint('host access', 'red', 'bold')}`;
  // Values of options that reach the host are shown whole: a reviewer must see all they do.
  const whole = change.severity === 'host-access';
  if (change.from === undefined)
    return `${paint('+', 'green')} ${terminalSafe(change.key)}: ${shown(change.key, change.to, whole)} (${impact})`;
  if (change.to === undefined)
    return `${paint('-', 'red')} ${terminalSafe(change.key)}: ${shown(change.key, change.from, whole)} (${impact})`;
  return `${paint('~', 'yellow')} ${terminalSafe(change.key)}: ${shown(change.key, change.from, whole)} → ${shown(change.key, change.to, whole)} (${impact})`;
}

function renderDrift(guests: readonly GuestPlan[], paint: Painter): string[] {
  const drifted = guests.filter((guest) => guest.drift.length > 0).sort(compareByName);
  if (drifted.length === 0) return [];
  const lines = [paint('Drift (changed outside git; applying reverts it unless the spec takes the live value):', 'yellow', 'bold')];
  for (const guest of drifted) {
    lines.push(`  ${guestRef(guest)}`);
    for (const item of guest.drift) {
      lines.push(`${INDENT}${terminalSafe(item.key)}: spec ${shown(item.key, item.expected)}, cluster ${shown(item.key, item.actual)}`);
    }
  }
  lines.push('');
  return lines;
}

function renderPending(guests: readonly GuestPlan[], paint: Painter): string[] {
  const waiting = guests.filter((guest) => guest.pending.length > 0).sort(compareByName);
  if (waiting.length === 0) return [];
  const lines = [paint('Pending (accepted but not in effect until restart):', 'bold')];
  for (const guest of waiting) {
    lines.push(`  ${guestRef(guest)}`);
    for (const item of guest.pending) {
      const target = item.delete === true ? '(delete)' : shown(item.key, item.pending);
      lines.push(`${INDENT}${terminalSafe(item.key)}: ${shown(item.key, item.current)} → ${target}`);
    }
  }
  lines.push('');
  return lines;
}

/** `Plan: 1 to create, 2 to update, 0 to destroy.` or `No changes.`, with errors and orphans when any. */
function finalLine(total: PlanCounts, paint: Painter): string {
  const extra: string[] = [];
  if (total.orphan > 0) extra.push(plural(total.orphan, 'orphan'));
  if (total.error > 0) extra.push(paint(plural(total.error, 'error'), 'red', 'bold'));
  if (!hasChanges(total) && total.error === 0) {
    return extra.length > 0 ? `No changes. ${extra.join(', ')}.` : 'No changes.';
  }
  const counts = `Plan: ${total.create} to create, ${total.update} to update, ${total.destroy} to destroy`;
  return `${paint(counts, 'bold')}${extra.length > 0 ? `, ${extra.join(', ')}` : ''}.`;
}
