/**
 * The plan as a GitHub comment: a summary table that is never cut, errors, then per-guest details
 * folded in `<details>`, most severe first. Whatever the estate size the body stays under the size
 * budget: details that do not fit are left out whole, least severe first, and the comment says so.
 */
import { flavourOf } from '../guest-flavours.js';
import { describeOperation } from '../operations.js';
import type { DriftItem, GuestPlan, KeyChange, ObjectPlan, Operation, PendingItem, Plan } from '../model.js';
import { objectLabel, objectSteps } from './object-items.js';
import {
  assertMarker,
  codeSpan,
  escapeHtml,
  escapeText,
  fitList,
  markdownTable,
  resolveMaxChars,
  safeUrl,
  shorten,
  fitSection,
} from './markdown-format.js';
import { countPlan, planVerdict, type ClusterCounts, type PlanCounts, unchangedLabel } from './plan-counts.js';
import {
  ACTION_EMOJI,
  ACTION_LABEL,
  IMPACT_LABEL,
  compareByName,
  compareGuests,
  describeHostAccess,
  guestImpact,
  INSECURE_LABEL,
  plural,
} from './plan-labels.js';
import { isSensitiveKey } from '../key-rules.js';
import { orderSentence, plannedRestarts, restartSentence, snapshotSentence, windowSentence } from './render-order.js';
import { LIVE_WITHHELD } from '../plan/base-ownership.js';

/** Options of {@link renderPlanMarkdown}. */
interface PlanMarkdownOptions {
  /** Heading of the comment; default `pve-gitops plan`. */
  title?: string;
  /** Size budget in characters; default 65,000, must be below GitHub's 65,536. */
  maxChars?: number;
  /** Hidden HTML comment put first, so the app finds its sticky comment again. */
  marker?: string;
  /** Link to the full plan (the check run), offered when details are left out. */
  detailsUrl?: string;
}

/** The marker the app puts on its sticky plan comment. */
export const PLAN_MARKER = '<!-- pve-gitops:plan -->';

/** The CLI command that prints the whole plan, named whenever details are left out. */
const FULL_PLAN_COMMAND = 'pve-gitops plan --format json';

/** Most key-change rows shown for one guest; a create can set dozens of keys. */
const MAX_CHANGE_ROWS = 40;
/** Most drift or pending rows shown for one guest. */
const MAX_ITEM_ROWS = 20;
/** Most errors or warnings listed for one guest. */
const MAX_GUEST_MESSAGES = 10;

const UNSET = '*(unset)*';

/** Renders a plan as a GitHub comment body of at most `maxChars` characters. */
export function renderPlanMarkdown(plan: Plan, options: PlanMarkdownOptions = {}): string {
  const maxChars = resolveMaxChars(options.maxChars);
  if (options.marker !== undefined) assertMarker(options.marker);
  const { rows, total } = countPlan(plan);
  // Guests first, then the items of other kinds (a pool, a guest's membership) in apply-phase order.
  const detailed: (GuestPlan | ObjectPlan)[] = [
    ...plan.guests.filter((guest) => guest.action !== 'noop').sort(compareGuests),
    ...plan.objects.filter((item) => item.action !== 'noop'),
  ];

  const footer = (omitted: number): string => renderFooter(unchangedLabel(plan), omitted, options.detailsUrl);
  // The footer is longest when every guest is omitted; reserving that keeps the total in budget.
  const footerReserve = footer(detailed.length).length;
  let head = renderHead(plan, options, total, rows);
  if (head.length + footerReserve > maxChars) head = renderHead(plan, options, total, undefined);
  let remaining = maxChars - head.length - footerReserve;

  // Changes that reach the host come first: they matter most and are what a reviewer must see.
  const hostAccess = renderHostAccess(plan, Math.floor(remaining / 3));
  remaining -= hostAccess.length;
  const restarts = renderRestarts(plan, Math.floor(remaining / 4));
  remaining -= restarts.length;
  const errors = renderErrors(plan, Math.floor(remaining / 2));
  remaining -= errors.length;
  const warnings = renderPlanWarnings(plan, Math.floor(remaining / 4));
  remaining -= warnings.length;

  const renderItem = (item: GuestPlan | ObjectPlan): string =>
    item.kind === 'guest' ? renderGuest(item as GuestPlan, plan) : renderObject(item as ObjectPlan);
  const { text: details, shown } = fitSection('### Changes\n\n', detailed, renderItem, remaining);
  return head + hostAccess + restarts + errors + warnings + details + footer(detailed.length - shown);
}

function renderHead(plan: Plan, options: PlanMarkdownOptions, total: PlanCounts, rows: ClusterCounts[] | undefined): string {
  const lines: string[] = [];
  if (options.marker !== undefined) lines.push(options.marker);
  lines.push(`### ${escapeText(options.title ?? 'pve-gitops plan', 200)}`, '', `**${planVerdict(total)}**`, '');
  const meta = [plan.ref !== undefined ? `Ref ${codeSpan(plan.ref, 80)}` : undefined, `planned ${escapeText(plan.createdAt, 40)}`];
  lines.push(meta.filter((part) => part !== undefined).join(' · '), '');
  // Never cut: an insecure connection is part of what the reviewer is asked to trust.
  for (const c of plan.insecureConnections ?? []) {
    lines.push(`> ⚠️ **Insecure connection**: cluster ${codeSpan(c.cluster, 80)} was read over ${INSECURE_LABEL[c.transport]}.`, '');
  }
  lines.push(renderSummaryTable(total, rows), '');
  return `${lines.join('\n')}\n`;
}

const COUNT_COLUMNS: { key: keyof PlanCounts; title: string }[] = [
  { key: 'create', title: 'Create' },
  { key: 'update', title: 'Update' },
  { key: 'destroy', title: 'Destroy' },
  { key: 'noop', title: 'No-op' },
  { key: 'orphan', title: 'Orphan' },
  { key: 'error', title: 'Error' },
  { key: 'drift', title: 'Drift' },
  { key: 'pending', title: 'Pending' },
];

/**
 * One row per cluster plus a total when it adds information. `rows` undefined is the last resort
 * for an absurd number of clusters: only the total, so the body still fits.
 */
function renderSummaryTable(total: PlanCounts, rows: ClusterCounts[] | undefined): string {
  const cells = (label: string, counts: PlanCounts): string[] => [label, ...COUNT_COLUMNS.map((c) => String(counts[c.key]))];
  const body: string[][] = (rows ?? []).map((row) => cells(escapeText(row.cluster, 80), row.counts));
  const rowErrors = (rows ?? []).reduce((sum, row) => sum + row.counts.error, 0);
  if (rows === undefined || rows.length !== 1 || rowErrors !== total.error) body.push(cells('**Total**', total));
  const align = ['left' as const, ...COUNT_COLUMNS.map(() => 'right' as const)];
  const table = markdownTable(['Cluster', ...COUNT_COLUMNS.map((c) => c.title)], body, align);
  return rows === undefined ? `${table}\n\n_Per-cluster rows left out: too many clusters for one comment._` : table;
}

/** Every change that reaches the host, guest by guest, whether the server's policy allows it or not. */
function renderHostAccess(plan: Plan, budget: number): string {
  const items: string[] = [];
  for (const guest of [...plan.guests].sort(compareByName)) {
    for (const item of guest.hostAccess ?? []) items.push(`${guestRef(guest)}: ${escapeText(describeHostAccess(item))}`);
  }
  if (items.length === 0) return '';
  const heading = `### 🔓 Host access: ${plural(items.length, 'change')} reaching beyond the guest\n\n`;
  const list = fitList(
    items,
    budget - heading.length - 1,
    (omitted) => `_…and ${plural(omitted, 'more host-access change')}: see the full plan (${codeSpan(FULL_PLAN_COMMAND)})._`,
  );
  return `${heading}${list}\n`;
}

/** The guests the apply will restart and why, before merge (README "Restarts"). */
function renderRestarts(plan: Plan, budget: number): string {
  const items = plannedRestarts(plan).map((line) => escapeText(line));
  if (items.length === 0) return '';
  const heading = `### 🔁 Restarts: ${plural(items.length, 'guest')} will restart on apply\n\n`;
  const list = fitList(
    items,
    budget - heading.length - 1,
    (omitted) => `_…and ${plural(omitted, 'more restart')}: see the full plan (${codeSpan(FULL_PLAN_COMMAND)})._`,
  );
  return `${heading}${list}\n`;
}

/** Plan-level errors first (an unreachable cluster explains everything below), then guest errors. */
function renderErrors(plan: Plan, budget: number): string {
  const items = plan.errors.map(
    (error) => `${error.cluster !== undefined ? `**${escapeText(error.cluster, 80)}**: ` : ''}${escapeText(error.message)}`,
  );
  const failing = plan.guests.filter((guest) => guest.errors.length > 0).sort(compareByName);
  for (const guest of failing) {
    items.push(`${guestRef(guest)}: ${escapeText(guest.errors.join('; '))}`);
  }
  if (items.length === 0) return '';
  const heading = `### ❌ ${plural(items.length, 'error')}\n\n`;
  const list = fitList(
    items,
    budget - heading.length - 1,
    (omitted) => `_…and ${plural(omitted, 'more error')}: see the full plan (${codeSpan(FULL_PLAN_COMMAND)})._`,
  );
  return `${heading}${list}\n`;
}

function renderPlanWarnings(plan: Plan, budget: number): string {
  if (plan.warnings.length === 0) return '';
  const items = plan.warnings.map(
    (warning) => `${warning.cluster !== undefined ? `**${escapeText(warning.cluster, 80)}**: ` : ''}${escapeText(warning.message)}`,
  );
  const heading = `### ⚠️ ${plural(items.length, 'warning')}\n\n`;
  const list = fitList(items, budget - heading.length - 1, (omitted) => `_…and ${plural(omitted, 'more warning')}._`);
  return `${heading}${list}\n`;
}

function renderFooter(unchanged: string | undefined, omitted: number, detailsUrl: string | undefined): string {
  const lines: string[] = [];
  if (unchanged !== undefined) lines.push(`_${unchanged} unchanged (no-op), not listed._`);
  const link = detailsUrl !== undefined ? `the [full plan](${safeUrl(detailsUrl)}), ` : '';
  if (omitted > 0) {
    lines.push(
      `**${plural(omitted, "guest's details", "guests' details")} omitted** to stay under GitHub's comment size limit: see ${link}the check run, or run ${codeSpan(FULL_PLAN_COMMAND)}.`,
    );
  } else if (detailsUrl !== undefined) {
    lines.push(`[Full plan](${safeUrl(detailsUrl)})`);
  }
  return lines.length > 0 ? `${lines.join('\n\n')}\n` : '';
}

function guestRef(guest: GuestPlan): string {
  return `**${escapeText(`${guest.cluster}/${guest.name}`, 160)}** (${guest.vmid})`;
}

/** One guest: a visible one-line heading, the rest folded. */
function renderGuest(guest: GuestPlan, plan: Plan): string {
  const impact = guestImpact(guest);
  const heading = [`${ACTION_EMOJI[guest.action]} **${ACTION_LABEL[guest.action]}**`, guestRef(guest)];
  if (guest.severity === 'host-access') heading.push('🔓 **HOST ACCESS**');
  if (impact !== undefined) heading.push(impact === 'data-loss' ? `**${IMPACT_LABEL[impact]}**` : IMPACT_LABEL[impact]);
  if (guest.drift.length > 0) heading.push('⚠️ drift');
  if (guest.pending.length > 0) heading.push('⏳ pending');
  if (guest.restart) heading.push('🔁 restarts');

  const sections = [
    renderMessages('Errors', guest.errors),
    renderChanges(guest.changes),
    renderOperations(guest.operations),
    renderDrift(guest.drift),
    renderPending(guest.pending),
    renderMessages('Warnings', guest.warnings),
    renderMessages(
      'Order and restart',
      [orderSentence(guest, plan), restartSentence(guest), windowSentence(guest), snapshotSentence(guest)].filter((s) => s !== undefined),
    ),
    renderNotes(guest),
  ].filter((section) => section !== '');
  return `${heading.join(' · ')}\n\n<details><summary>${escapeHtml(detailsSummary(guest))}</summary>\n\n${sections.join('')}</details>\n\n`;
}

/** An item of another kind: its heading visible, its changes, steps, drift and messages folded. */
function renderObject(item: ObjectPlan): string {
  const heading = [
    `${ACTION_EMOJI[item.action]} **${ACTION_LABEL[item.action]}**`,
    `**${escapeText(`${item.cluster}: ${objectLabel(item)}`, 160)}**`,
  ];
  if (item.drift.length > 0) heading.push('⚠️ drift');
  const steps = objectSteps(item);
  const sections = [
    renderMessages('Errors', item.errors),
    renderChanges(item.changes),
    steps.length > 0 ? `**Operations**, in order:\n\n${steps.map((step, i) => `${i + 1}. ${escapeText(step)}`).join('\n')}\n\n` : '',
    renderDrift(item.drift),
    renderMessages('Warnings', item.warnings),
    renderMessages(
      'Apply window',
      [windowSentence(item)].filter((s) => s !== undefined),
    ),
  ].filter((section) => section !== '');
  const summary = [item.changes.length > 0 ? plural(item.changes.length, 'change') : undefined, `${item.kind} on ${item.cluster}`]
    .filter((part) => part !== undefined)
    .join(' · ');
  return `${heading.join(' · ')}\n\n<details><summary>${escapeHtml(shorten(summary, 200))}</summary>\n\n${sections.join('')}</details>\n\n`;
}

function detailsSummary(guest: GuestPlan): string {
  const parts: string[] = [];
  if (guest.changes.length > 0) parts.push(plural(guest.changes.length, 'key change'));
  const ops = guest.operations.filter((op) => op.op !== 'config').length;
  if (ops > 0) parts.push(plural(ops, 'operation'));
  if (guest.drift.length > 0) parts.push(`${guest.drift.length} drifted`);
  if (guest.pending.length > 0) parts.push(`${guest.pending.length} pending`);
  parts.push(`${flavourOf(guest.type).noun} on ${guest.node}`);
  return shorten(parts.join(' · '), 200);
}

/**
 * A value cell: secrets hidden, unset shown as such, everything else as escaped code — cut to
 * `MAX_VALUE_CHARS` with a note of its length, except values of keys that reach the host
 * (`whole`), which a reviewer must see entire.
 */
function valueCell(key: string, value: string | undefined, unset = UNSET, whole = false): string {
  if (value === undefined) return unset;
  if (value === LIVE_WITHHELD) return `*${LIVE_WITHHELD}*`;
  if (isSensitiveKey(key)) return '*(sensitive)*';
  return whole ? codeSpan(value, Number.POSITIVE_INFINITY) : codeSpan(value);
}

function moreRows(omitted: number, what: string): string {
  return omitted > 0 ? `\n_…and ${plural(omitted, what)}: see the full plan._\n` : '';
}

function renderChanges(changes: readonly KeyChange[]): string {
  if (changes.length === 0) return '';
  const rows = changes
    .slice(0, MAX_CHANGE_ROWS)
    .map((change) => [
      codeSpan(change.key),
      valueCell(change.key, change.from, UNSET, change.severity === 'host-access'),
      valueCell(change.key, change.to, '*(deleted)*', change.severity === 'host-access'),
      [
        change.impact === 'data-loss' ? `**${IMPACT_LABEL[change.impact]}**` : IMPACT_LABEL[change.impact],
        ...(change.severity === 'host-access' ? ['🔓 **host access**'] : []),
      ].join(' · '),
    ]);
  const table = markdownTable(['key', 'current', 'desired', 'impact'], rows);
  return `${table}\n${moreRows(changes.length - rows.length, 'more key')}\n`;
}

function renderOperations(operations: readonly Operation[]): string {
  const steps = operations
    .map((op) => describeOperation(op, { value: codeSpan, emphasise: (text) => `**${text}**` }))
    .filter((step): step is string => step !== undefined);
  if (steps.length === 0) return '';
  return `**Operations**, in order:\n\n${steps.map((step, i) => `${i + 1}. ${step}`).join('\n')}\n\n`;
}

function renderDrift(drift: readonly DriftItem[]): string {
  if (drift.length === 0) return '';
  const rows = drift
    .slice(0, MAX_ITEM_ROWS)
    .map((item) => [codeSpan(item.key), valueCell(item.key, item.expected, '*(not set)*'), valueCell(item.key, item.actual)]);
  const table = markdownTable(['key', 'base branch spec', 'on the cluster'], rows);
  return `**⚠️ Drift: changed outside git** — merging reverts it unless the PR takes the live value.\n\n${table}\n${moreRows(drift.length - rows.length, 'more drifted key')}\n`;
}

function renderPending(pending: readonly PendingItem[]): string {
  if (pending.length === 0) return '';
  const rows = pending
    .slice(0, MAX_ITEM_ROWS)
    .map((item) => [
      codeSpan(item.key),
      valueCell(item.key, item.current),
      item.delete === true ? '*(delete)*' : valueCell(item.key, item.pending),
    ]);
  const table = markdownTable(['key', 'in effect', 'pending'], rows);
  return `**⏳ Pending:** accepted but not in effect until restart.\n\n${table}\n${moreRows(pending.length - rows.length, 'more pending key')}\n`;
}

function renderMessages(title: string, messages: readonly string[]): string {
  if (messages.length === 0) return '';
  const listed = messages.slice(0, MAX_GUEST_MESSAGES).map((message) => `- ${escapeText(message)}`);
  return `**${title}**\n\n${listed.join('\n')}\n${moreRows(messages.length - listed.length, `more ${title.toLowerCase().replace(/s$/, '')}`)}\n`;
}

function renderNotes(guest: GuestPlan): string {
  const notes: string[] = [];
  if (guest.vmidDerived) notes.push(`derived VMID ${guest.vmid} — pin it with ${codeSpan(`vmid: ${guest.vmid}`)}`);
  if (guest.adopt === true) notes.push('adopts an existing unowned guest: the plan adds the owner tag');
  if (guest.liveWithheld === true)
    notes.push(
      'the base branch does not own this guest: its live values are withheld here (the keys that would change and the values the spec sets are shown)',
    );
  if (guest.action === 'orphan') notes.push('carries the owner tag but has no spec: reported only (destroyed only with `prune: true`)');
  if (guest.source !== undefined) notes.push(`spec: ${codeSpan(`${guest.source.file}:${guest.source.line}`, 200)}`);
  if (notes.length === 0) return '';
  return `${notes.map((note) => `- ${note}`).join('\n')}\n\n`;
}
