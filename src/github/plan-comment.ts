/**
 * What the App posts about a plan: the sticky comment's body (the core's markdown plan with what
 * only the App knows around it — draft status, the commits planned, the other open pull requests
 * racing for the same guests) and the `pve-gitops/plan` check run's result (a short summary and
 * annotations on the YAML lines of errors). Pure: the worker posts what these return.
 */
import type { Plan } from '../core/model.js';
import { planHasErrors } from '../core/plan/plan-specs.js';
import { codeSpan, DEFAULT_MAX_CHARS, escapeText, fitList, markdownTable } from '../core/render/markdown-format.js';
import { countPlan, planVerdict } from '../core/render/plan-counts.js';
import { plural } from '../core/render/plan-labels.js';
import { PLAN_MARKER, renderPlanMarkdown } from '../core/render/render-markdown.js';
import type { Annotation, CheckResult } from './check-runs.js';

/** The commits a plan was made for. */
export interface PlannedCommits {
  headSha: string;
  baseSha: string;
  draft: boolean;
}

/** A guest of this pull request that other open pull requests' latest plans touch too. */
export interface Overlap {
  /** `cluster/name` */
  guest: string;
  vmid: number;
  prs: number[];
}

/** A guest of this pull request that an apply is queued or running for right now. */
export interface ApplyingGuest {
  /** `cluster/name` */
  guest: string;
  vmid: number;
  /** The pull requests whose applies it is (`#12`, or `owner/repo#12` from another repository). */
  applies: string[];
}

/** A problem that stopped the plan before Proxmox was asked: a spec error, an unusable archive or config. */
export interface SpecProblem {
  /** Repository path of the file, when the problem is in one. */
  path?: string;
  line?: number;
  col?: number;
  message: string;
}

/** Most overlap rows in a comment; a plan touching thousands of guests lists the first ones. */
const MAX_OVERLAP_ROWS = 50;

function short(sha: string): string {
  return sha.slice(0, 7);
}

function title(commits: PlannedCommits): string {
  return commits.draft ? 'pve-gitops plan · draft pull request' : 'pve-gitops plan';
}

/**
 * The core renderer dates its output (`planned <createdAt>`); a sticky comment must not change
 * when the plan did not, or every re-plan would edit it. The comment is rendered from a copy whose
 * `createdAt` names the commits planned instead — the check run carries the time.
 */
function commitsLabel(commits: PlannedCommits): string {
  return `for ${short(commits.headSha)} against base ${short(commits.baseSha)}`;
}

function renderOverlaps(overlaps: readonly Overlap[]): string {
  if (overlaps.length === 0) return '';
  const rows = overlaps
    .slice(0, MAX_OVERLAP_ROWS)
    .map((o) => [`**${escapeText(o.guest, 160)}** (${o.vmid})`, o.prs.map((pr) => `#${pr}`).join(', ')]);
  const more =
    overlaps.length > rows.length ? `\n\n_…and ${plural(overlaps.length - rows.length, 'more guest')} other pull requests touch too._` : '';
  return (
    `### 🔀 Other open pull requests touch these guests\n\n` +
    `Their latest plans change the same guests: whichever merges first changes what the other would apply.\n\n` +
    `${markdownTable(['Guest', 'Pull requests'], rows)}${more}\n\n`
  );
}

function renderApplying(applying: readonly ApplyingGuest[]): string {
  if (applying.length === 0) return '';
  const rows = applying
    .slice(0, MAX_OVERLAP_ROWS)
    .map((a) => [`**${escapeText(a.guest, 160)}** (${a.vmid})`, a.applies.map((label) => escapeText(label, 200)).join(', ')]);
  const more = applying.length > rows.length ? `\n\n_…and ${plural(applying.length - rows.length, 'more guest')}._` : '';
  return (
    `### ⏳ Applies in progress for these guests\n\n` +
    `A merged pull request's apply of these guests is queued or running: this plan was made before it finished, ` +
    `so plan again (\`/pve plan\`) once it has.\n\n` +
    `${markdownTable(['Guest', 'Apply of'], rows)}${more}\n\n`
  );
}

const DRAFT_NOTE = '> 📝 **Draft pull request** — planned like any other, so the plan is ready when it is.\n\n';

/** A copy of the plan whose spec sources name repository paths (the plan keeps them relative to the spec root). */
function withRepoPaths(plan: Plan, repoPath: (file: string) => string): Plan {
  return { ...plan, guests: plan.guests.map((g) => (g.source ? { ...g, source: { ...g.source, file: repoPath(g.source.file) } } : g)) };
}

/**
 * The sticky comment for a plan. Always under GitHub's comment limit (the core renderer fits the
 * plan in what is left). `repoPath` turns a spec file's path (relative to the spec root) into the
 * repository path reviewers see in the diff.
 */
export function renderPlanComment(
  plan: Plan,
  commits: PlannedCommits,
  overlaps: readonly Overlap[],
  repoPath: (file: string) => string = (f) => f,
  applying: readonly ApplyingGuest[] = [],
): string {
  const overlapText = renderOverlaps(overlaps) + renderApplying(applying);
  const note = commits.draft ? DRAFT_NOTE : '';
  const body = renderPlanMarkdown(
    { ...withRepoPaths(plan, repoPath), ref: undefined, createdAt: commitsLabel(commits) },
    { marker: PLAN_MARKER, title: title(commits), maxChars: DEFAULT_MAX_CHARS - overlapText.length - note.length },
  );
  // The draft note goes under the heading block the renderer starts with (marker, title).
  const [marker = '', heading = '', ...rest] = body.split('\n');
  return [marker, heading, '', note.trimEnd(), ...rest].join('\n').replace(/\n{3,}/g, '\n\n') + overlapText;
}

function problemLine(problem: SpecProblem): string {
  const where =
    problem.path !== undefined
      ? `${codeSpan(`${problem.path}${problem.line !== undefined ? `:${problem.line}:${problem.col ?? 1}` : ''}`, 200)}: `
      : '';
  return `${where}${escapeText(problem.message)}`;
}

/** The sticky comment when nothing could be planned: the specs (or the archive, or the config) are unusable. */
export function renderProblemsComment(headline: string, problems: readonly SpecProblem[], commits: PlannedCommits): string {
  const head = [
    PLAN_MARKER,
    `### ${title(commits)}`,
    '',
    commits.draft ? DRAFT_NOTE.trimEnd() : undefined,
    commits.draft ? '' : undefined,
    `**❌ ${escapeText(headline)}: nothing was planned**`,
    '',
    `planned ${commitsLabel(commits)}`,
    '',
    '',
  ]
    .filter((line) => line !== undefined)
    .join('\n');
  const list = fitList(
    problems.map(problemLine),
    DEFAULT_MAX_CHARS - head.length - 200,
    (omitted) => `_…and ${plural(omitted, 'more problem')}._`,
  );
  return `${head}${list}\n_Fix ${problems.length === 1 ? 'it' : 'them'} and push: the plan runs again._\n`;
}

/**
 * The sticky comment for a fork's push that waits for a writer (`forks: on-command` in the
 * repository's config): nothing of the head was read, and why not.
 */
export function renderAwaitingCommandComment(commits: PlannedCommits): string {
  return [
    PLAN_MARKER,
    `### ${title(commits)}`,
    '',
    `**⏸️ Not planned yet: this pull request comes from a fork** (${short(commits.headSha)} against base ${short(commits.baseSha)})`,
    '',
    'This repository plans pull requests from forks when a collaborator with write, maintain or admin permission asks, ' +
      `after reading the change: comment ${codeSpan('/pve plan')}. Every new push waits for a new ${codeSpan('/pve plan')} ` +
      `(${codeSpan('forks: on-command')} in ${codeSpan('.github/pve-gitops.yml')}).`,
    '',
  ].join('\n');
}

/** Annotations for a plan: guest errors and warnings on their spec's line, cluster errors on the Cluster document. */
export function planAnnotations(
  plan: Plan,
  repoPath: (file: string) => string,
  clusterSources: ReadonlyMap<string, { file: string; line: number }>,
): Annotation[] {
  const annotations: Annotation[] = [];
  for (const error of plan.errors) {
    const source = error.cluster !== undefined ? clusterSources.get(error.cluster) : undefined;
    if (!source) continue;
    annotations.push({
      path: repoPath(source.file),
      start_line: source.line,
      end_line: source.line,
      annotation_level: 'failure',
      title: `cluster ${error.cluster}`,
      message: error.message,
    });
  }
  for (const guest of plan.guests) {
    if (!guest.source) continue;
    const at = { path: repoPath(guest.source.file), start_line: guest.source.line, end_line: guest.source.line };
    for (const message of guest.errors)
      annotations.push({ ...at, annotation_level: 'failure', title: `${guest.cluster}/${guest.name}`, message });
    for (const message of guest.warnings)
      annotations.push({ ...at, annotation_level: 'warning', title: `${guest.cluster}/${guest.name}`, message });
  }
  return annotations;
}

/** The check run's result for a plan: failure when the plan has errors, success otherwise (changes are for review). */
export function planCheckResult(
  plan: Plan,
  commits: PlannedCommits,
  overlaps: readonly Overlap[],
  annotations: Annotation[],
  applying: readonly ApplyingGuest[] = [],
): CheckResult {
  const { total, rows } = countPlan(plan);
  const verdict = planVerdict(total);
  const lines = [`**${verdict}**${commits.draft ? ' · draft pull request' : ''}`, ''];
  const counted = rows.filter((row) => Object.values(row.counts).some((n) => n > 0));
  if (counted.length > 0) {
    lines.push(
      markdownTable(
        ['Cluster', 'Create', 'Update', 'Destroy', 'Errors', 'Drift', 'Pending'],
        counted.map((row) => [
          escapeText(row.cluster, 80),
          ...[row.counts.create, row.counts.update, row.counts.destroy, row.counts.error, row.counts.drift, row.counts.pending].map(String),
        ]),
      ),
      '',
    );
  }
  const unreadable = plan.errors.filter((error) => error.cluster !== undefined && / could not be read: /.test(error.message));
  for (const error of unreadable) lines.push(`- ⚠️ ${escapeText(error.message)}`);
  for (const error of plan.errors.filter((e) => !unreadable.includes(e)))
    lines.push(`- ❌ ${escapeText(`${error.cluster ? `${error.cluster}: ` : ''}${error.message}`)}`);
  if (overlaps.length > 0)
    lines.push(`- 🔀 ${plural(overlaps.length, 'guest')} also touched by other open pull requests (see the comment)`);
  if (applying.length > 0)
    lines.push(`- ⏳ an apply is in progress for ${plural(applying.length, 'guest')} of this plan (see the comment)`);
  lines.push('', 'The plan, with every change, drift and pending value, is in the pull request comment.');
  return {
    conclusion: planHasErrors(plan) ? 'failure' : 'success',
    title: planHasErrors(plan) ? `Plan errors: ${verdict}` : verdict,
    summary: lines.join('\n'),
    annotations,
  };
}

/** The check run's result when nothing could be planned. */
export function problemsCheckResult(headline: string, problems: readonly SpecProblem[]): CheckResult {
  const annotations: Annotation[] = problems
    .filter((p) => p.path !== undefined && p.line !== undefined)
    .map((p) => ({ path: p.path!, start_line: p.line!, end_line: p.line!, annotation_level: 'failure', message: p.message }));
  const listed = problems.slice(0, 50).map((p) => `- ${problemLine(p)}`);
  const more = problems.length > listed.length ? [`- …and ${plural(problems.length - listed.length, 'more problem')}`] : [];
  return {
    conclusion: 'failure',
    title: `${headline}: ${plural(problems.length, 'problem')}`,
    summary: [`**❌ ${escapeText(headline)}: nothing was planned**`, '', ...listed, ...more].join('\n'),
    annotations,
  };
}
