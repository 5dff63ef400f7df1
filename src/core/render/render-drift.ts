/**
 * The drift report as the body of the "Drift report" issue: a summary per cluster that is never
 * cut, what could not be read, then every finding with the spec value, the live value, since when
 * it is seen and how to settle it either way — keep git (apply the spec) or keep the live value
 * (the spec change that says so). Under GitHub's size limit whatever the estate: sections that
 * do not fit are left out whole, least important first, and the body says how many.
 */
import type {
  DriftFinding,
  DriftGuest,
  DriftObject,
  DriftReport,
  ExpiredAllow,
  GuestProblem,
  PendingGuest,
} from '../drift/drift-report.js';
import type { SourceRef } from '../model.js';
import { assertMarker, codeSpan, escapeText, fitList, fitSection, markdownTable, resolveMaxChars, shorten } from './markdown-format.js';
import { plural } from './plan-labels.js';
import { SENSITIVE_PLACEHOLDER } from './sensitive.js';
import { isSensitiveKey } from '../key-rules.js';

/** Start of the hidden marker of the drift report issue; the content hash follows it. */
export const DRIFT_MARKER_PREFIX = '<!-- pve-gitops:drift-report';

/** The marker of a report whose content hashes to `contentHash`. */
export function driftMarker(contentHash: string): string {
  return `${DRIFT_MARKER_PREFIX} content=${contentHash.replace(/[^0-9a-f]/g, '')} -->`;
}

/** The content hash written in a drift report body's marker, if any. */
export function driftMarkerHash(body: string): string | undefined {
  return /^<!-- pve-gitops:drift-report content=([0-9a-f]+) -->/.exec(body)?.[1];
}

/** The CLI command that lists everything a shortened report leaves out. */
const FULL_DRIFT_COMMAND = 'pve-gitops drift --format json';

/** Options of {@link renderDriftReport}. */
interface DriftRenderOptions {
  /** Hidden HTML comment put first (see {@link driftMarker}). */
  marker: string;
  /** A spec file's path in the repository, from its path relative to the spec root. */
  repoPath?: (file: string) => string;
  /** How often the report is made, as words ("every hour"); undefined: not on a schedule. */
  schedule?: string;
  /** Where the allow-list lives, named in the text. */
  configPath?: string;
  /** Size budget in characters; default 65,000. */
  maxChars?: number;
  /** The repository turned `/pve adopt` on: the body says how to take the live values into git. */
  adopt?: boolean;
}

const CONFIG_PATH = '.github/pve-gitops.yml';
/** Most findings rows shown for one guest. */
const MAX_FINDING_ROWS = 40;

/** `2030-01-02 03:04 UTC`. */
function when(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** A value as it would be written in a spec, quoted when plain YAML could read it otherwise. */
export function yamlScalar(value: string): string {
  return /^[A-Za-z0-9_][A-Za-z0-9_.,=/+;-]*$/.test(value) ? value : JSON.stringify(value);
}

function shown(key: string, value: string | undefined): string {
  if (value === undefined) return '*(unset)*';
  return codeSpan(isSensitiveKey(key) ? SENSITIVE_PLACEHOLDER : value);
}

function location(options: DriftRenderOptions, source: SourceRef | undefined, withLine = true): string | undefined {
  if (!source) return undefined;
  const file = options.repoPath ? options.repoPath(source.file) : source.file;
  return codeSpan(withLine ? `${file}:${source.line}` : file, 200);
}

function guestTitle(guest: { cluster: string; name: string; vmid: number }): string {
  return `**${escapeText(`${guest.cluster}/${guest.name}`, 160)}** (${guest.vmid})`;
}

/** The spec change that makes the live value the wanted one. */
function keepLive(guest: DriftGuest, finding: DriftFinding, options: DriftRenderOptions): string {
  const at = location(options, guest.keySources?.[finding.key] ?? guest.source);
  const file = location(options, guest.source, false) ?? 'its spec';
  const key = finding.key;
  if (finding.kind === 'power') {
    const live = finding.actual === 'running' || finding.actual === 'stopped' ? finding.actual : 'ignore';
    return `set ${codeSpan(`power: ${live}`)}${at ? ` in ${at}` : ''}`;
  }
  if (finding.kind === 'missing') return `delete ${file}, or set ${codeSpan('state: absent')} in it`;
  if (finding.actual === undefined) return `remove ${codeSpan(key)}${at ? ` from ${at}` : ''}`;
  const value = isSensitiveKey(key) ? undefined : finding.actual;
  const setting = value === undefined ? `${codeSpan(key)} to the live value` : codeSpan(`${key}: ${yamlScalar(value)}`);
  if (finding.expected === undefined) return `add ${setting} under ${codeSpan('config:')} in ${file}`;
  return `set ${setting}${at ? ` in ${at}` : ''}`;
}

function since(finding: DriftFinding): string {
  const expired = finding.expiredAllow?.expires;
  return `${when(finding.firstSeen)}${expired ? ` (allowed until ${escapeText(expired, 10)}, expired)` : ''}`;
}

/** One drifted guest: its findings and how to settle them. */
function renderGuest(guest: DriftGuest, options: DriftRenderOptions): string {
  const only = guest.findings.length === 1 ? guest.findings[0] : undefined;
  const lines: string[] = [];
  if (only?.kind === 'orphan') {
    lines.push(
      `##### 🟣 ${guestTitle(guest)} on ${escapeText(guest.node, 80)}: owned, without a spec`,
      '',
      `Carries the owner tag but no spec has it, since ${since(only)}. **Keep it:** add a spec with ${codeSpan(`vmid: ${guest.vmid}`)}. ` +
        `**Remove it:** set ${codeSpan('prune: true')} on cluster ${codeSpan(guest.cluster)}'s document (the next apply destroys it), ` +
        `or remove the owner tag so the repository lets go of it.`,
    );
    return `${lines.join('\n')}\n\n`;
  }
  if (only?.kind === 'unowned') {
    lines.push(
      `##### ⚪ ${guestTitle(guest)} on ${escapeText(guest.node, 80)}: not owned, inside the cluster's VMID range`,
      '',
      `Has ${escapeText(only.actual ?? 'no owner tag')}, since ${since(only)}. **Manage it:** a spec with ${codeSpan(`vmid: ${guest.vmid}`)} ` +
        `and ${codeSpan('adopt: true')}. **Leave it alone:** move it out of the range, or allow it in ${codeSpan(options.configPath ?? CONFIG_PATH)} ` +
        `(${codeSpan(`guest: ${guest.cluster}/${guest.vmid}`)}, ${codeSpan('keys: [unowned]')}).`,
    );
    return `${lines.join('\n')}\n\n`;
  }
  const where = location(options, guest.source, false);
  lines.push(`##### 🟡 ${guestTitle(guest)} on ${escapeText(guest.node, 80)}${where ? ` · ${where}` : ''}`, '');
  const rows = guest.findings
    .slice(0, MAX_FINDING_ROWS)
    .map((f) => [
      f.kind === 'missing' ? '*(the guest)*' : codeSpan(f.key),
      f.kind === 'missing' ? 'present' : shown(f.key, f.expected),
      f.kind === 'missing' ? '**missing**' : shown(f.key, f.actual),
      since(f),
      keepLive(guest, f, options),
    ]);
  lines.push(markdownTable(['Key', 'Spec (git)', 'Live', 'Seen since', 'To keep the live value'], rows));
  if (guest.findings.length > MAX_FINDING_ROWS) {
    lines.push('', `_…and ${plural(guest.findings.length - MAX_FINDING_ROWS, 'more key')}: ${codeSpan(FULL_DRIFT_COMMAND)} lists them._`);
  }
  const missing = guest.findings.some((f) => f.kind === 'missing');
  lines.push(
    '',
    missing
      ? `**Keep git:** ${codeSpan('pve-gitops apply')} on the default branch creates the guest again.`
      : `**Keep git:** ${codeSpan('pve-gitops apply')} on the default branch writes the spec's values back; merging a pull request that changes this guest does too.`,
  );
  return `${lines.join('\n')}\n\n`;
}

/** An object of another kind that drifted: each key with git's value and the cluster's. */
function renderObject(object: DriftObject): string {
  const rows = object.findings.map((f) => [codeSpan(f.key), shown(f.key, f.expected), shown(f.key, f.actual), since(f)]);
  return `**${escapeText(`${object.cluster}: ${object.kind} ${object.name}`, 160)}**\n\n${markdownTable(['key', 'default branch', 'on the cluster', 'since'], rows)}\n\n`;
}

function renderPending(guest: PendingGuest): string {
  const items = guest.items.map((item) =>
    item.delete
      ? `${codeSpan(item.key)} deleted`
      : `${codeSpan(item.key)} ${shown(item.key, item.current)} → ${shown(item.key, item.pending)}`,
  );
  return `- ${guestTitle(guest)} on ${escapeText(guest.node, 80)}: ${items.join(', ')}\n`;
}

function renderGuestProblem(guest: GuestProblem): string {
  return `- ${guestTitle(guest)}: ${escapeText(guest.messages.join('; '))}\n`;
}

function renderExpired(entries: readonly ExpiredAllow[], configPath: string): string {
  if (entries.length === 0) return '';
  const rows = entries.map((e) => [
    codeSpan(e.guest, 160),
    e.keys.map((k) => codeSpan(k, 64)).join(', '),
    escapeText(e.reason, 300),
    escapeText(e.expires ?? '', 10),
    String(e.covers),
  ]);
  return [
    `#### ⌛ ${plural(entries.length, 'expired allow-list entry', 'expired allow-list entries')}`,
    '',
    markdownTable(['Guest', 'Keys', 'Reason', 'Expired after', 'Findings it covered'], rows),
    '',
    `What they covered is reported as drift again. Remove them from ${codeSpan(configPath)}, or give them a later ${codeSpan('expires')}.`,
    '',
    '',
  ].join('\n');
}

function verdict(report: DriftReport): string {
  const c = report.clusters;
  const sum = (key: 'drifted' | 'orphans' | 'unowned' | 'pending' | 'errors'): number => c.reduce((n, s) => n + s[key], 0);
  const unread = c.filter((s) => s.unreadable !== undefined).length;
  const parts = [
    sum('drifted') > 0 ? `**${plural(sum('drifted'), 'drifted guest')}**` : undefined,
    sum('orphans') > 0 ? plural(sum('orphans'), 'orphan') : undefined,
    sum('unowned') > 0 ? plural(sum('unowned'), 'unowned guest in range', 'unowned guests in range') : undefined,
    sum('pending') > 0 ? `${plural(sum('pending'), 'guest')} waiting for a restart` : undefined,
    sum('errors') > 0 ? `${plural(sum('errors'), 'guest')} not read` : undefined,
    unread > 0 ? `**${plural(unread, 'cluster')} not read**` : undefined,
    report.expiredAllows.length > 0
      ? plural(report.expiredAllows.length, 'expired allow-list entry', 'expired allow-list entries')
      : undefined,
    report.problemHeadline !== undefined ? `**${escapeText(report.problemHeadline, 200)}**` : undefined,
  ].filter((p) => p !== undefined);
  return parts.length > 0 ? parts.join(' · ') : '**No drift**: every owned guest matches the default branch.';
}

function summaryTable(report: DriftReport): string {
  if (report.clusters.length === 0) return '';
  const rows = report.clusters.map((s) =>
    s.unreadable !== undefined
      ? [escapeText(s.name, 80), '**not read**', '–', '–', '–', '–', '–', '–']
      : [
          escapeText(s.name, 80),
          'yes',
          String(s.checked),
          String(s.drifted),
          String(s.orphans),
          String(s.unowned),
          String(s.pending),
          String(s.errors),
        ],
  );
  const align = ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'] as const;
  return `${markdownTable(['Cluster', 'Read', 'Guests checked', 'Drifted', 'Orphans', 'Unowned in range', 'Pending', 'Not read'], rows, align)}\n\n`;
}

/** The issue body for `report`. */
export function renderDriftReport(report: DriftReport, options: DriftRenderOptions): string {
  const maxChars = resolveMaxChars(options.maxChars);
  assertMarker(options.marker);
  const configPath = options.configPath ?? CONFIG_PATH;
  const head = [
    options.marker,
    '### pve-gitops drift report',
    '',
    verdict(report),
    '',
    `${summaryTable(report)}Compared with the default branch at ${codeSpan(report.ref.slice(0, 12), 20)} on ${when(report.checkedAt)}. ` +
      `${options.schedule ? `pve-gitops reads the clusters ${escapeText(options.schedule, 60)}; this` : 'This'} issue is edited only when the findings change, ` +
      `and closed when none are left. ${codeSpan('/pve drift')} in any comment checks now.` +
      (options.adopt
        ? ` ${codeSpan('/pve adopt')} here opens a pull request taking every live value into the specs (${codeSpan('/pve adopt <guest> [<key> …]', 60)}: only those).`
        : ''),
    '',
    '',
  ].join('\n');

  // Never cut: what could not be read explains what is missing below.
  const unread = report.clusters
    .filter((s) => s.unreadable !== undefined)
    .map(
      (s) =>
        `- **${escapeText(s.name, 80)}**: ${escapeText(s.unreadable ?? '')}. Nothing on it was checked: its guests are reported neither as drifted nor as gone.\n`,
    );
  const unreadText = unread.length > 0 ? `#### ⛔ ${plural(unread.length, 'cluster')} not read\n\n${unread.join('')}\n` : '';
  const footerReserve = 400;
  let remaining = maxChars - head.length - footerReserve;
  const unreadFitted = unreadText.length <= remaining / 2 ? unreadText : shorten(unreadText, Math.floor(remaining / 2));
  remaining -= unreadFitted.length;

  const problems =
    report.problems.length > 0
      ? `#### ❌ ${escapeText(report.problemHeadline ?? plural(report.problems.length, 'problem'), 200)}\n\n${fitList(
          report.problems.map(
            (p) =>
              `${p.path !== undefined ? `${codeSpan(p.line !== undefined ? `${p.path}:${p.line}` : p.path, 200)}: ` : ''}${escapeText(p.message)}`,
          ),
          Math.floor(remaining / 2),
          (omitted) => `_…and ${plural(omitted, 'more problem')}._`,
        )}\n`
      : '';
  remaining -= problems.length;
  const expired = renderExpired(report.expiredAllows, configPath);
  const expiredFitted = expired.length <= remaining / 3 ? expired : '';
  remaining -= expiredFitted.length;

  let omitted = expiredFitted.length < expired.length ? report.expiredAllows.length : 0;
  const drift = fitSection(`#### Drift\n\n`, report.guests, (g) => renderGuest(g, options), Math.floor(remaining * 0.75));
  omitted += report.guests.length - drift.shown;
  remaining -= drift.text.length;
  const objects = fitSection(`#### Drift of other objects\n\n`, report.objects ?? [], renderObject, Math.floor(remaining / 3));
  omitted += (report.objects ?? []).length - objects.shown;
  remaining -= objects.text.length;
  const errors = fitSection(
    `#### ⚠️ ${plural(report.guestErrors.length, 'guest')} not read or not planned\n\n`,
    report.guestErrors,
    renderGuestProblem,
    Math.floor(remaining / 2),
  );
  omitted += report.guestErrors.length - errors.shown;
  remaining -= errors.text.length;
  const pending = fitSection(
    `#### ⏳ ${plural(report.pending.length, 'guest')} waiting for a restart\n\n`,
    report.pending,
    renderPending,
    remaining,
  );
  omitted += report.pending.length - pending.shown;
  const pendingText = pending.text
    ? `${pending.text}\nThese values are accepted but not in effect: shut the guest down and start it from Proxmox.\n\n`
    : '';

  const footer: string[] = [];
  if (report.allowed > 0) footer.push(`_${plural(report.allowed, 'intended difference')} allowed by ${codeSpan(configPath)}, not listed._`);
  if (omitted > 0)
    footer.push(
      `**${plural(omitted, 'entry', 'entries')} left out** to stay under GitHub's size limit: ${codeSpan(FULL_DRIFT_COMMAND)} lists everything.`,
    );
  const footerText = footer.length > 0 ? `${footer.join('\n\n')}\n` : '';
  const body =
    head +
    unreadFitted +
    problems +
    expiredFitted +
    drift.text +
    objects.text +
    errors.text +
    (pending.text ? pendingText : '') +
    footerText;
  // The budget above leaves room; this only guards a pathological head (thousands of clusters).
  return shorten(body, maxChars);
}

/** The comment that closes the issue when the estate matches again. */
export function renderDriftClosing(report: DriftReport): string {
  const allowed = report.allowed > 0 ? ` (${plural(report.allowed, 'allowed difference')} not counted)` : '';
  return (
    `No drift left: every owned guest matches the default branch at ${codeSpan(report.ref.slice(0, 12), 20)}${allowed}, ` +
    `read on ${when(report.checkedAt)}. Closing; pve-gitops reopens this issue when drift returns.`
  );
}
