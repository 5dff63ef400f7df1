/**
 * What the App posts about an apply: the sticky apply comment on the pull request (its own
 * marker, apart from the plan comment) and the `pve-gitops/apply` check run on the merge commit.
 * The core renders the results (`renderApplyMarkdown`); this adds what only the App knows — which
 * merge or command started the run, the commits, what to comment next — and the notices posted
 * when a merge applies nothing (no reviewed plan, a plan with errors, nothing to change). Pure:
 * the workers post what these return.
 */
import {
  type ApplyResult,
  type ApplyCounts,
  countApplyResult,
  type GuestApplyResult,
  type ObjectApplyResult,
} from '../core/apply-result.js';
import { codeSpan, escapeText, fitList, markdownTable } from '../core/render/markdown-format.js';
import { plural } from '../core/render/plan-labels.js';
import { WINDOW_WAIT } from '../core/spec/apply-windows.js';
import {
  APPLY_MARKER,
  applyVerdict,
  type GuestInProgress,
  type ObjectInProgress,
  renderApplyMarkdown,
} from '../core/render/render-apply.js';
import type { CheckResult } from './check-runs.js';

/** An apply run as the comment shows it. */
export interface ApplyRunView {
  pr: number;
  headSha: string;
  mergeSha: string;
  trigger: 'merge' | 'command';
  requestedBy?: string;
  startedAt: string;
  /** When the last guest finished (ISO); the run is finished when nothing is in progress. */
  finishedAt: string;
  finished: GuestApplyResult[];
  inProgress: GuestInProgress[];
  /** Items of other kinds (a pool, a guest's membership) with their result, in apply-phase order. Absent: the run has none. */
  objects?: ObjectApplyResult[];
  /** Items of other kinds not finished yet, in apply-phase order. */
  objectsInProgress?: ObjectInProgress[];
}

function short(sha: string): string {
  return sha.slice(0, 7);
}

function context(view: Pick<ApplyRunView, 'trigger' | 'requestedBy' | 'headSha' | 'mergeSha'>): string {
  const plan = `the plan reviewed for ${codeSpan(short(view.headSha))}`;
  if (view.trigger === 'command') {
    const who = view.requestedBy !== undefined ? ` by ${escapeText(view.requestedBy, 100)}` : '';
    return `${codeSpan('/pve apply')}${who}: applying ${plan} (merged as ${codeSpan(short(view.mergeSha))}).`;
  }
  return `Merged as ${codeSpan(short(view.mergeSha))}: applying ${plan}.`;
}

function asResult(view: ApplyRunView): ApplyResult {
  const result: ApplyResult = { version: 1, startedAt: view.startedAt, finishedAt: view.finishedAt, guests: view.finished };
  // In apply-phase order, as the run keeps them (`runView`).
  if (view.objects !== undefined && view.objects.length > 0) result.objects = view.objects;
  return result;
}

/** Items not finished yet: guests and items of other kinds. */
function unfinished(view: ApplyRunView): number {
  return view.inProgress.length + (view.objectsInProgress?.length ?? 0);
}

/** Whether the run has items of other kinds (then counts say "items", not "guests"). */
function hasObjects(view: ApplyRunView): boolean {
  return (view.objects?.length ?? 0) + (view.objectsInProgress?.length ?? 0) > 0;
}

/** Results per status over guests and items of other kinds. */
function countAll(view: ApplyRunView): ApplyCounts {
  const counts = countApplyResult(view.finished);
  for (const item of view.objects ?? []) counts[item.status] += 1;
  return counts;
}

/** What to do next, when something did not apply. */
function nextSteps(view: ApplyRunView): string {
  if (unfinished(view) > 0) return '';
  const counts = countAll(view);
  if (counts.failed === 0) return '';
  return (
    `\n**${plural(counts.failed, hasObjects(view) ? 'item' : 'guest')} could not be applied.** Once the cause is gone (a cluster that was down, a ` +
    `lock held past the limit), comment ${codeSpan('/pve apply')} to run the apply again: every guest is read afresh, ` +
    'and what was already applied is found done.\n'
  );
}

/** The sticky apply comment for a run: under GitHub's comment limit whatever the number of guests. */
export function renderApplyComment(view: ApplyRunView): string {
  const line = `${context(view)}\n`;
  const next = nextSteps(view);
  const body = renderApplyMarkdown(asResult(view), {
    marker: APPLY_MARKER,
    title: 'pve-gitops apply',
    inProgress: view.inProgress,
    ...(view.objectsInProgress ? { objectsInProgress: view.objectsInProgress } : {}),
    maxChars: 65_000 - line.length - next.length - 2,
  });
  // The context goes under the heading block the renderer starts with (marker, title, blank).
  const [marker = '', heading = '', blank = '', ...rest] = body.split('\n');
  return [marker, heading, blank, line, ...rest].join('\n') + next;
}

function guestLine(guest: GuestApplyResult): string {
  const what = guest.error ?? (guest.conflict ? `changed after review: ${guest.conflict.map((c) => c.key).join(', ')}` : guest.status);
  return `${guest.status} · **${escapeText(`${guest.cluster}/${guest.name}`, 160)}** (${guest.vmid}): ${escapeText(what, 400)}`;
}

function objectLine(item: ObjectApplyResult): string {
  const what = item.error ?? (item.conflict ? `changed after review: ${item.conflict.join('; ')}` : item.status);
  return `${item.status} · ${escapeText(item.kind, 40)} **${escapeText(`${item.cluster}/${item.name}`, 160)}**: ${escapeText(what, 400)}`;
}

/** The `pve-gitops/apply` check run's output: in progress, or complete with its conclusion. */
export function applyCheckResult(view: ApplyRunView): CheckResult & { complete: boolean } {
  const counts = countAll(view);
  const left = unfinished(view);
  const complete = left === 0;
  const done = view.finished.length + (view.objects?.length ?? 0);
  const total = done + left;
  const noun = hasObjects(view) ? 'item' : 'guest';
  const verdict = applyVerdict(counts);
  const rows = [
    ['Applied', counts.applied],
    ['Unchanged', counts.unchanged],
    ['Conflict', counts.conflict],
    ['Failed', counts.failed],
    ...(counts.skipped > 0 ? [['Skipped', counts.skipped] as const] : []),
    ...(complete ? [] : [['In progress', left] as const]),
  ].map(([label, n]) => [String(label), String(n)]);
  const unhappy = [
    ...(view.objects ?? []).filter((o) => o.status === 'conflict' || o.status === 'failed').map(objectLine),
    ...view.finished.filter((g) => g.status === 'conflict' || g.status === 'failed').map(guestLine),
  ];
  // Guests and objects of other kinds alike: a cluster's windows gate every item of it.
  const windowWaits = [...view.inProgress, ...(view.objectsInProgress ?? [])].filter((g) => g.reason?.startsWith(WINDOW_WAIT) === true);
  const summary = [
    context(view),
    '',
    ...(windowWaits.length > 0
      ? [
          fitList(
            windowWaits.map((g) => `⏳ ${escapeText(`${g.cluster}/${g.name}`)}: ${escapeText(g.reason ?? '')}`),
            20_000,
            (omitted) => `…and ${plural(omitted, `more ${noun}`)} outside their windows`,
          ),
          '',
        ]
      : []),
    markdownTable([noun === 'item' ? 'Items' : 'Guests', String(total)], rows, ['left', 'right']),
    '',
    fitList(unhappy, 40_000, (omitted) => `…and ${plural(omitted, `more ${noun}`)}`),
    `The pull request's apply comment (#${view.pr}) has every ${noun}'s steps, task ids and what moved.`,
  ].join('\n');
  if (!complete) {
    const waits = windowWaits.length > 0 ? `; ${plural(windowWaits.length, noun)} waiting for an apply window` : '';
    return { complete, conclusion: 'neutral', title: `Applying: ${done} of ${total} ${noun}s done${waits}`, summary };
  }
  return {
    complete,
    conclusion: counts.conflict + counts.failed > 0 ? 'failure' : 'success',
    title: verdict,
    summary,
  };
}

/** What a guest that was queued or running when its run was lost is reported as. */
const LOST_GUEST =
  'unknown: the App lost this apply while the guest was queued or being written; it may have been changed — /pve plan shows it as it is';

/** The paragraph a lost run's comment and check run open with. */
const LOST_NOTE =
  "**This apply can no longer finish:** the App's Redis lost its state while it ran (restarted without its append-only " +
  'file, or emptied), and with it the queued and running guest jobs. What is shown below is what was known at the last ' +
  `report; guests marked unknown may or may not have been written. Comment ${codeSpan('/pve plan')} to see the cluster ` +
  `as it is now, then ${codeSpan('/pve apply')} to carry out what is left.`;

/**
 * A run Redis lost (its record gone while guests were unfinished), as far as the last report
 * knew it: the finished guests as they were, the others as unknown — a comment and a completed
 * check run that say so, instead of "in progress" forever.
 */
export function renderLostApply(view: ApplyRunView): { body: string; check: CheckResult } {
  const lost: ApplyRunView = {
    ...view,
    finished: [
      ...view.finished,
      ...view.inProgress.map(
        (g): GuestApplyResult => ({
          cluster: g.cluster,
          name: g.name,
          vmid: g.vmid,
          node: g.node,
          status: 'failed',
          steps: [...(g.steps ?? [])],
          error: LOST_GUEST,
        }),
      ),
    ],
    inProgress: [],
    ...(view.objects !== undefined || view.objectsInProgress !== undefined
      ? {
          objects: [
            ...(view.objects ?? []),
            ...(view.objectsInProgress ?? []).map(
              (o): ObjectApplyResult => ({
                kind: o.kind,
                key: o.key,
                cluster: o.cluster,
                name: o.name,
                status: 'failed',
                steps: [...(o.steps ?? [])],
                error: LOST_GUEST.replace('the guest was', 'the item was'),
              }),
            ),
          ],
          objectsInProgress: [],
        }
      : {}),
  };
  const [marker = '', heading = '', blank = '', line = '', ...rest] = renderApplyComment(lost).split('\n');
  const body = [marker, heading, blank, line, '', LOST_NOTE, ...rest].join('\n');
  const check = applyCheckResult(lost);
  const total = lost.finished.length + (lost.objects?.length ?? 0);
  const noun = hasObjects(lost) ? 'items' : 'guests';
  return {
    body,
    check: {
      conclusion: 'failure',
      title: `Apply lost: ${unfinished(view)} of ${total} ${noun} unknown`,
      summary: `${LOST_NOTE}\n\n${check.summary}`,
    },
  };
}

/** Why a merge (or `/pve apply`) applied nothing. */
export type ApplyNotice =
  | {
      kind: 'no-plan';
      pr: number;
      headSha: string;
      mergeSha: string;
      plannedOn?: string;
      mergedInto?: string;
      /** A plan of the merged head was posted, but only after the merge (or in its second). */
      shownAfterMerge?: boolean;
    }
  | { kind: 'plan-errors'; pr: number; headSha: string; mergeSha: string; errors: string[] }
  | { kind: 'invalid-specs'; pr: number; headSha: string; mergeSha: string; errors: string[] }
  | { kind: 'no-changes'; pr: number; headSha: string; mergeSha: string }
  /** The merge's job failed for good before any guest was queued. */
  | { kind: 'not-started'; pr: number; headSha: string; mergeSha: string; why: string };

/** The apply comment and check run for a merge that applies nothing. */
export function renderApplyNotice(notice: ApplyNotice): { body: string; check: CheckResult } {
  const head = codeSpan(short(notice.headSha));
  const merge = codeSpan(short(notice.mergeSha));
  const lines = [APPLY_MARKER, '### pve-gitops apply', ''];
  let check: CheckResult;
  switch (notice.kind) {
    case 'no-plan':
      lines.push(
        notice.plannedOn !== undefined && notice.mergedInto !== undefined
          ? `**Nothing was applied:** the plan reviewed for ${head} was made against ${codeSpan(notice.plannedOn)}, but this pull request was merged into ${codeSpan(notice.mergedInto)} (as ${merge}); what that branch brings was never shown.`
          : notice.shownAfterMerge === true
            ? `**Nothing was applied:** the plan of ${head} was posted only when (or after) this pull request was merged (as ${merge}), so no one had seen it when they merged.`
            : `**Nothing was applied:** no reviewed plan was stored for ${head}, the head this pull request was merged with (as ${merge}).`,
        '',
        'It was planned now — see the plan comment. Review that plan, then comment `/pve apply` to apply it.',
      );
      check = {
        conclusion: 'neutral',
        title: 'Not applied: no reviewed plan',
        summary: `No plan was stored for ${head}: it was planned now and posted on #${notice.pr}. Comment \`/pve apply\` there after review.`,
      };
      break;
    case 'not-started':
      lines.push(
        `**Nothing was applied:** the apply of this merge (as ${merge}, head ${head}) did not start: ${escapeText(notice.why, 500)}.`,
        '',
        'Check the plan comment, then comment `/pve apply` to start it.',
      );
      check = {
        conclusion: 'failure',
        title: 'Not applied: the apply did not start',
        summary: `The apply of ${merge} did not start: ${escapeText(notice.why, 500)}. Comment \`/pve apply\` on #${notice.pr} to start it.`,
      };
      break;
    case 'plan-errors': {
      const list = fitList(
        notice.errors.map((e) => escapeText(e, 500)),
        20_000,
        (omitted) => `…and ${plural(omitted, 'more error')}`,
      );
      lines.push(
        `**Nothing was applied:** the plan reviewed for ${head} has errors, and a plan with errors is never applied.`,
        '',
        list,
        'Fix them in a new pull request (or push here and comment `/pve plan`), then apply the plan without errors.',
      );
      check = { conclusion: 'failure', title: 'Not applied: the plan has errors', summary: lines.slice(3).join('\n') };
      break;
    }
    case 'invalid-specs': {
      const list = fitList(
        notice.errors.map((e) => escapeText(e, 500)),
        20_000,
        (omitted) => `…and ${plural(omitted, 'more error')}`,
      );
      lines.push(
        `**Nothing was applied:** the specs stored with the plan for ${head} do not pass validation as it stands now ` +
          '(a plan made by another version of pve-gitops, or changed in storage).',
        '',
        list,
        'Comment `/pve plan` to plan the pull request again, review it, then `/pve apply`.',
      );
      check = { conclusion: 'failure', title: 'Not applied: the stored specs are invalid', summary: lines.slice(3).join('\n') };
      break;
    }
    case 'no-changes':
      lines.push(`**Nothing to apply:** the plan reviewed for ${head} changes no guest.`);
      check = { conclusion: 'success', title: 'Nothing to apply', summary: `The plan reviewed for ${head} changes no guest.` };
      break;
  }
  return { body: `${lines.join('\n')}\n`, check };
}
