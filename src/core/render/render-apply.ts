/**
 * The executor's results for the sticky "apply" comment, the check run and the terminal. Same size
 * discipline as the plan: a summary table that is never cut, then per-guest details, failures
 * first, folded whole when they do not fit.
 */
import {
  APPLY_STATUSES,
  countApplyResult,
  type ApplyConflict,
  type ApplyCounts,
  type ApplyStatus,
  type ApplyStep,
  type ApplyValueChange,
  type ApplyResult,
  type GuestApplyResult,
  type ObjectApplyResult,
} from '../apply-result.js';
import { assertMarker, codeSpan, escapeHtml, escapeText, markdownTable, resolveMaxChars, safeUrl, fitSection } from './markdown-format.js';
import { compareByName, plural } from './plan-labels.js';
import { SENSITIVE_PLACEHOLDER } from './sensitive.js';
import { isSensitiveKey } from '../key-rules.js';
import { painter, terminalSafe, type Painter, type Style } from './text-format.js';

/** Options of {@link renderApplyMarkdown}. */
interface ApplyMarkdownOptions {
  /** Heading of the comment; default `pve-gitops apply`. */
  title?: string;
  /** Size budget in characters; default 65,000, must be below GitHub's 65,536. */
  maxChars?: number;
  /** Hidden HTML comment put first, so the app finds its sticky comment again. */
  marker?: string;
  /** Link to the full result (the check run), offered when details are left out. */
  detailsUrl?: string;
  /**
   * Guests the apply has not finished yet: the App's comment is updated while a merge's applies
   * run. With any, the head says the apply is in progress and they are listed first.
   */
  inProgress?: readonly GuestInProgress[];
  /** Items of other kinds the apply has not finished yet (a pool, a guest's membership), in apply-phase order. */
  objectsInProgress?: readonly ObjectInProgress[];
}

/** An item of another kind that is queued, waiting (behind another apply, an earlier phase) or running. */
export interface ObjectInProgress {
  kind: string;
  key: string;
  cluster: string;
  name: string;
  state: 'queued' | 'waiting' | 'running';
  reason?: string;
  steps?: ApplyStep[];
}

/** A guest an apply has not finished: queued, waiting (another apply of it, a lock, a retry) or running. */
export interface GuestInProgress {
  cluster: string;
  name: string;
  vmid: number;
  node: string;
  state: 'queued' | 'waiting' | 'running';
  /** Why it waits. */
  reason?: string;
  /** Steps carried out so far. */
  steps?: readonly ApplyStep[];
}

/** The marker the app puts on its sticky apply comment. */
export const APPLY_MARKER = '<!-- pve-gitops:apply -->';

const PROGRESS_EMOJI: Record<GuestInProgress['state'], string> = { queued: '🕓', waiting: '⏳', running: '🔄' };

const STATUS_EMOJI: Record<ApplyStatus, string> = {
  applied: '✅',
  unchanged: '⚪',
  conflict: '⚠️',
  failed: '❌',
  skipped: '⏭️',
};

/** What needs a reader first: failures, then conflicts, then what did not run, then successes. */
const STATUS_RANK: Record<ApplyStatus, number> = { failed: 0, conflict: 1, skipped: 2, applied: 3, unchanged: 4 };

const MAX_CONFLICT_ROWS = 20;
const MAX_STEP_ROWS = 30;

function compareResults(a: GuestApplyResult, b: GuestApplyResult): number {
  return STATUS_RANK[a.status] - STATUS_RANK[b.status] || compareByName(a, b);
}

/** `2 applied, 1 conflict, 3 unchanged`, or `Nothing to apply`. */
export function applyVerdict(counts: ApplyCounts): string {
  const parts: string[] = [];
  if (counts.applied > 0) parts.push(`${counts.applied} applied`);
  if (counts.conflict > 0) parts.push(plural(counts.conflict, 'conflict'));
  if (counts.failed > 0) parts.push(`${counts.failed} failed`);
  if (counts.skipped > 0) parts.push(`${counts.skipped} skipped`);
  if (counts.unchanged > 0) parts.push(`${counts.unchanged} unchanged`);
  return parts.length > 0 ? parts.join(', ') : 'Nothing to apply';
}

/** Renders an apply result as a GitHub comment body of at most `maxChars` characters. */
export function renderApplyMarkdown(result: ApplyResult, options: ApplyMarkdownOptions = {}): string {
  const maxChars = resolveMaxChars(options.maxChars);
  if (options.marker !== undefined) assertMarker(options.marker);
  const counts = countApplyResult([...result.guests, ...(result.objects ?? [])]);
  const detailed = result.guests.filter((guest) => guest.status !== 'unchanged').sort(compareResults);
  const objects = (result.objects ?? []).filter((item) => item.status !== 'unchanged');
  const inProgress = [...(options.inProgress ?? [])].sort(compareByName);
  const objectsGoing = options.objectsInProgress ?? [];

  const footer = (omitted: number): string => renderFooter(counts, omitted, options.detailsUrl);
  const footerReserve = footer(detailed.length + objects.length + inProgress.length + objectsGoing.length).length;
  let head = renderHead(result, options, counts, true);
  if (head.length + footerReserve > maxChars) head = renderHead(result, options, counts, false);
  let remaining = maxChars - head.length - footerReserve;

  // What is still going on first, compactly: it is what a reader of a running apply looks for.
  const going: (GuestInProgress | ObjectInProgress)[] = [...inProgress, ...objectsGoing];
  const renderGoing = (item: GuestInProgress | ObjectInProgress): string =>
    'kind' in item ? renderObjectInProgress(item) : renderInProgress(item);
  const fitted = fitSection('### In progress\n\n', going, renderGoing, remaining - 1);
  const running = { text: fitted.text === '' ? '' : `${fitted.text}\n`, shown: fitted.shown };
  remaining -= running.text.length;
  const { text: details, shown } = fitSection('### Guests\n\n', detailed, renderGuest, remaining);
  remaining -= details.length;
  const others = fitSection('### Other objects\n\n', objects, renderObjectResult, remaining);
  return (
    head +
    running.text +
    details +
    others.text +
    footer(detailed.length - shown + objects.length - others.shown + going.length - running.shown)
  );
}

/** One item of another kind: its status and name, the error or what moved, the steps folded. */
function renderObjectResult(item: ObjectApplyResult): string {
  const lines = [
    `${STATUS_EMOJI[item.status]} **${item.status}** · **${escapeText(`${item.cluster}: ${item.kind} ${item.name}`, 160)}**`,
    '',
  ];
  if (item.error !== undefined) lines.push(`> ${escapeText(item.error, 2_000)}`, '');
  for (const moved of item.conflict ?? []) lines.push(`- moved after review: ${escapeText(moved, 500)}`);
  if ((item.conflict ?? []).length > 0) lines.push('');
  if (item.steps.length > 0) lines.push(renderSteps(item.steps));
  return `${lines.join('\n')}\n`;
}

function renderObjectInProgress(item: ObjectInProgress): string {
  const reason = item.reason !== undefined ? ` — ${escapeText(item.reason, 300)}` : '';
  return `- ${PROGRESS_EMOJI[item.state]} **${item.state}** · ${escapeText(item.kind, 40)} **${escapeText(`${item.cluster}/${item.name}`, 160)}**${reason}\n`;
}

function renderInProgress(guest: GuestInProgress): string {
  const steps = guest.steps?.length ?? 0;
  const done = steps > 0 ? ` · ${plural(steps, 'step')} done` : '';
  const reason = guest.reason !== undefined ? ` — ${escapeText(guest.reason, 300)}` : '';
  return `- ${PROGRESS_EMOJI[guest.state]} **${guest.state}** · ${guestRef(guest)}${done}${reason}\n`;
}

function clusterRows(
  guests: readonly { cluster: string; status: ApplyStatus }[],
  inProgress: readonly { cluster: string }[] = [],
): { cluster: string; counts: ApplyCounts }[] {
  const byCluster = new Map<string, { cluster: string; status: ApplyStatus }[]>();
  for (const guest of guests) {
    const list = byCluster.get(guest.cluster) ?? [];
    list.push(guest);
    byCluster.set(guest.cluster, list);
  }
  for (const guest of inProgress) if (!byCluster.has(guest.cluster)) byCluster.set(guest.cluster, []);
  return [...byCluster.keys()].sort().map((cluster) => ({ cluster, counts: countApplyResult(byCluster.get(cluster) ?? []) }));
}

function renderHead(result: ApplyResult, options: ApplyMarkdownOptions, counts: ApplyCounts, perCluster: boolean): string {
  const lines: string[] = [];
  const guestsGoing = options.inProgress ?? [];
  const inProgress: readonly { cluster: string }[] = [...guestsGoing, ...(options.objectsInProgress ?? [])];
  if (options.marker !== undefined) lines.push(options.marker);
  // Guests alone are counted as guests; with items of other kinds among them, as items.
  const what = inProgress.length === guestsGoing.length ? 'guest' : 'item';
  const finished = result.guests.length + (result.objects ?? []).length;
  const verdict =
    inProgress.length === 0
      ? applyVerdict(counts)
      : `⏳ ${plural(inProgress.length, what)} in progress${finished > 0 ? ` · so far ${applyVerdict(counts)}` : ''}`;
  lines.push(`### ${escapeText(options.title ?? 'pve-gitops apply', 200)}`, '', `**${verdict}**`, '');
  const meta = [result.ref !== undefined ? `Ref ${codeSpan(result.ref, 80)}` : undefined, `started ${escapeText(result.startedAt, 40)}`];
  if (inProgress.length > 0) {
    meta.push('in progress');
  } else {
    meta.push(`finished ${escapeText(result.finishedAt, 40)}`);
    const took = durationMs(result.startedAt, result.finishedAt);
    if (took !== undefined) meta.push(`took ${formatMs(took)}`);
  }
  lines.push(meta.filter((part) => part !== undefined).join(' · '), '');

  // The "In progress" column only while something is: a finished apply reads as it always did.
  const progressColumn = inProgress.length > 0;
  const cells = (label: string, c: ApplyCounts, going: number): string[] => [
    label,
    ...APPLY_STATUSES.map((status) => String(c[status])),
    ...(progressColumn ? [String(going)] : []),
  ];
  const going = (cluster?: string): number => inProgress.filter((g) => cluster === undefined || g.cluster === cluster).length;
  const rows = perCluster ? clusterRows([...result.guests, ...(result.objects ?? [])], inProgress) : [];
  const body = rows.map((row) => cells(escapeText(row.cluster, 80), row.counts, going(row.cluster)));
  if (rows.length !== 1) body.push(cells('**Total**', counts, going()));
  const titles = [
    ...APPLY_STATUSES.map((status) => status[0]?.toUpperCase() + status.slice(1)),
    ...(progressColumn ? ['In progress'] : []),
  ];
  lines.push(markdownTable(['Cluster', ...titles], body, ['left', ...titles.map(() => 'right' as const)]), '');
  if (!perCluster) lines.push('_Per-cluster rows left out: too many clusters for one comment._', '');
  if (counts.conflict > 0) {
    lines.push(
      `**Nothing was written for ${plural(counts.conflict, 'guest')} in conflict:** an owned value moved after review. Comment ${codeSpan('/pve plan')} to re-plan, review the new plan, then ${codeSpan('/pve apply')}.`,
      '',
    );
  }
  return `${lines.join('\n')}\n`;
}

function renderFooter(counts: ApplyCounts, omitted: number, detailsUrl: string | undefined): string {
  const lines: string[] = [];
  if (counts.unchanged > 0) lines.push(`_${plural(counts.unchanged, 'guest')} already matched the plan: nothing written._`);
  const link = detailsUrl !== undefined ? `the [full result](${safeUrl(detailsUrl)}) or ` : '';
  if (omitted > 0) {
    lines.push(
      `**${plural(omitted, "guest's details", "guests' details")} omitted** to stay under GitHub's comment size limit: see ${link}the check run.`,
    );
  } else if (detailsUrl !== undefined) {
    lines.push(`[Full result](${safeUrl(detailsUrl)})`);
  }
  return lines.length > 0 ? `${lines.join('\n\n')}\n` : '';
}

function guestRef(guest: Pick<GuestApplyResult, 'cluster' | 'name' | 'vmid' | 'node'>): string {
  return `**${escapeText(`${guest.cluster}/${guest.name}`, 160)}** (${guest.vmid}) on ${escapeText(guest.node, 80)}`;
}

function renderGuest(guest: GuestApplyResult): string {
  const parts = [`${STATUS_EMOJI[guest.status]} **${guest.status}** · ${guestRef(guest)}\n\n`];
  if (guest.error !== undefined) parts.push(`> ${escapeText(guest.error)}\n\n`);
  if (guest.pending !== undefined && guest.pending.length > 0) {
    parts.push(`⏳ Pending until restart: ${guest.pending.map((k) => codeSpan(k)).join(', ')}\n\n`);
  }
  if (guest.conflict !== undefined && guest.conflict.length > 0) parts.push(renderConflicts(guest.conflict));
  if (guest.steps.length > 0) {
    const tasks = guest.steps.filter((step) => step.upid !== undefined).length;
    const summary = `${plural(guest.steps.length, 'step')}${tasks > 0 ? ` · ${plural(tasks, 'task')}` : ''}`;
    parts.push(`<details><summary>${escapeHtml(summary)}</summary>\n\n${renderSteps(guest.steps)}</details>\n\n`);
  }
  return parts.join('');
}

function changeCell(key: string, change: ApplyValueChange | undefined): string {
  if (change === undefined) return '*(no change)*';
  const side = (value: string | undefined, unset: string): string => {
    if (value === undefined) return unset;
    return isSensitiveKey(key) ? '*(sensitive)*' : codeSpan(value);
  };
  return `${side(change.from, '*(unset)*')} → ${side(change.to, '*(deleted)*')}`;
}

function renderConflicts(conflicts: readonly ApplyConflict[]): string {
  const rows = conflicts.slice(0, MAX_CONFLICT_ROWS).map((c) => [codeSpan(c.key), changeCell(c.key, c.reviewed), changeCell(c.key, c.now)]);
  const more = conflicts.length - rows.length;
  const table = markdownTable(['key', 'reviewed change', 'change now'], rows);
  return `${table}\n${more > 0 ? `\n_…and ${plural(more, 'more key')}._\n` : ''}\n`;
}

function renderSteps(steps: readonly ApplyStep[]): string {
  const rows = steps
    .slice(0, MAX_STEP_ROWS)
    .map((step, i) => [
      String(i + 1),
      codeSpan(step.op, 40),
      step.detail !== undefined ? escapeText(step.detail) : '',
      step.upid !== undefined ? codeSpan(step.upid, 200) : '',
      step.exitStatus !== undefined ? escapeText(step.exitStatus) : '',
      step.ms !== undefined ? formatMs(step.ms) : '',
    ]);
  const more = steps.length - rows.length;
  const table = markdownTable(['#', 'step', 'detail', 'task', 'exit status', 'time'], rows, [
    'right',
    'left',
    'left',
    'left',
    'left',
    'right',
  ]);
  return `${table}\n${more > 0 ? `\n_…and ${plural(more, 'more step')}._\n` : ''}\n`;
}

function durationMs(startedAt: string, finishedAt: string): number | undefined {
  const ms = Date.parse(finishedAt) - Date.parse(startedAt);
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** `340 ms`, `12.3 s`, `4 min 5 s`. */
export function formatMs(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  // Below 59.95 s one decimal; above, rounding would print "60.0 s".
  if (ms < 59_950) return `${(ms / 1_000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1_000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** Options of {@link renderApplyText}. */
interface ApplyTextOptions {
  /** Colour with ANSI escapes (only for a TTY). */
  color?: boolean;
}

const STATUS_STYLE: Record<ApplyStatus, Style[]> = {
  applied: ['green'],
  unchanged: ['dim'],
  conflict: ['yellow', 'bold'],
  failed: ['red', 'bold'],
  skipped: ['magenta'],
};

const INDENT = '    ';

/** Renders an apply result for the terminal; every guest is listed, unchanged ones in one line. */
export function renderApplyText(result: ApplyResult, options: ApplyTextOptions = {}): string {
  const paint = painter(options.color === true);
  const counts = countApplyResult([...result.guests, ...(result.objects ?? [])]);
  const took = durationMs(result.startedAt, result.finishedAt);
  const lines = [
    `Apply${result.ref !== undefined ? ` of ${terminalSafe(result.ref)}` : ''}: started ${terminalSafe(result.startedAt)}, finished ${terminalSafe(result.finishedAt)}${took !== undefined ? ` (${formatMs(took)})` : ''}`,
    '',
  ];
  const listed = [...result.guests].sort(compareResults);
  for (const guest of listed) lines.push(...renderGuestText(guest, paint));
  for (const item of result.objects ?? []) lines.push(...renderObjectText(item, paint));
  if (listed.length + (result.objects ?? []).length > 0) lines.push('');
  if (counts.conflict > 0) {
    lines.push(
      paint('Nothing was written for guests in conflict: an owned value moved after review. Re-plan, review, then apply again.', 'yellow'),
      '',
    );
  }
  const total = APPLY_STATUSES.map((status) => {
    const part = `${counts[status]} ${status}`;
    return counts[status] > 0 && (status === 'failed' || status === 'conflict') ? paint(part, ...STATUS_STYLE[status]) : part;
  });
  lines.push(`Apply: ${total.join(', ')}.`);
  return `${lines.join('\n')}\n`;
}

function renderGuestText(guest: GuestApplyResult, paint: Painter): string[] {
  const style = STATUS_STYLE[guest.status];
  const lines = [
    `${paint(guest.status.padEnd(9), ...style)} ${paint(`${terminalSafe(guest.cluster)}/${terminalSafe(guest.name)} (${guest.vmid})`, 'bold')} on ${terminalSafe(guest.node)}`,
  ];
  if (guest.pending !== undefined && guest.pending.length > 0) {
    lines.push(`${INDENT}${paint('pending until restart:', 'yellow')} ${guest.pending.map((k) => terminalSafe(k)).join(', ')}`);
  }
  if (guest.status === 'unchanged') return lines;
  if (guest.error !== undefined) lines.push(`${INDENT}${paint('error:', 'red', 'bold')} ${terminalSafe(guest.error, 2_000)}`);
  for (const c of guest.conflict ?? []) {
    lines.push(
      `${INDENT}${paint('moved:', 'yellow')} ${terminalSafe(c.key)}: reviewed ${changeText(c.key, c.reviewed)}, now ${changeText(c.key, c.now)}`,
    );
  }
  for (const step of guest.steps) {
    const parts = [paint(terminalSafe(step.op), 'cyan')];
    if (step.detail !== undefined) parts.push(terminalSafe(step.detail, 500));
    if (step.upid !== undefined) parts.push(paint(terminalSafe(step.upid), 'dim'));
    if (step.exitStatus !== undefined) parts.push(terminalSafe(step.exitStatus, 200));
    if (step.ms !== undefined) parts.push(`(${formatMs(step.ms)})`);
    lines.push(`${INDENT}${parts.join(' ')}`);
  }
  return lines;
}

function renderObjectText(item: ObjectApplyResult, paint: Painter): string[] {
  const lines = [
    `${paint(item.status.padEnd(9), ...STATUS_STYLE[item.status])} ${paint(`${terminalSafe(item.cluster)}: ${terminalSafe(item.kind)} ${terminalSafe(item.name)}`, 'bold')}`,
  ];
  if (item.error !== undefined) lines.push(`${INDENT}${paint('error:', 'red', 'bold')} ${terminalSafe(item.error, 2_000)}`);
  for (const moved of item.conflict ?? []) lines.push(`${INDENT}${paint('moved:', 'yellow')} ${terminalSafe(moved, 500)}`);
  for (const step of item.steps) {
    lines.push(`${INDENT}${paint(terminalSafe(step.op), 'cyan')}${step.detail !== undefined ? ` ${terminalSafe(step.detail, 500)}` : ''}`);
  }
  return lines;
}

function changeText(key: string, change: ApplyValueChange | undefined): string {
  if (change === undefined) return '(no change)';
  const side = (value: string | undefined, unset: string): string => {
    if (value === undefined) return unset;
    return isSensitiveKey(key) ? SENSITIVE_PLACEHOLDER : terminalSafe(value);
  };
  return `${side(change.from, '(unset)')} → ${side(change.to, '(deleted)')}`;
}
