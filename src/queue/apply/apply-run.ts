/**
 * Apply runs: started by a merge into the default branch (the `merge` job) or by `/pve apply` on
 * a merged pull request, and reported to the pull request as they go (the `report` job).
 *
 * Starting a run takes the plan stored for the merged head — exactly what was reviewed — and
 * never a plan with errors; a merge whose head was never planned (or whose plan Redis lost) is
 * planned now and posted, and nothing is applied until someone reviews it and comments
 * `/pve apply`. A run copies the reviewed plans of the guests it changes, appends its tickets to
 * their FIFOs and adds one job per guest (`apply-worker.ts`). Nothing here waits for GitHub
 * before the first guest job is queued: the check run and the comment are created by the first
 * report, so the time from the merge to the first Proxmox write is Redis round trips only.
 *
 * A report renders the run from Redis and brings both up to date: the check run (created on the
 * merge commit by the first report, completed by the one that sees every guest finished) and the
 * sticky apply comment — the pull request's latest run only, so an older run still going cannot
 * overwrite a newer one's comment. Reports of one pull request are serialised by a lock and render
 * what Redis holds once they have it, so a slower report never posts an older state over a newer.
 */
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { bodyHash, ensureComment } from '../../github/sticky-comment.js';
import type { GuestApplyResult, ObjectApplyResult } from '../../core/apply-result.js';
import { byPhase } from '../../core/kinds/registry.js';
import type { GuestPlan, ObjectPlan } from '../../core/model.js';
import { objectWrites } from '../../engine/apply-object.js';
import { planErrorLines, planHasErrors } from '../../core/plan/plan-specs.js';
import { formatSpecError } from '../../core/spec/errors.js';
import { validateStoredPlan } from '../../core/spec/validate-stored-plan.js';
import { APPLY_MARKER, type GuestInProgress, type ObjectInProgress } from '../../core/render/render-apply.js';
import {
  type ApplyNotice,
  type ApplyRunView,
  applyCheckResult,
  renderApplyComment,
  renderApplyNotice,
} from '../../github/apply-comment.js';
import { APPLY_CHECK_NAME } from '../../github/check-names.js';
import { type CheckTarget, completeCheckRun, createCompletedCheckRun, startCheckRun, updateCheckRun } from '../../github/check-runs.js';
import { type ApplyJobs, commandRunId, mergeRunId } from './apply-jobs.js';
import { applyOverride, letInNow } from './apply-now.js';
import { guestsTheBranchChanged } from './default-branch-check.js';
import { syncDeployments } from './deployments.js';
import type { LostRuns } from './lost-runs.js';
import {
  type ApplyCause,
  type ApplyRun,
  type ApplyStore,
  type GuestProgress,
  type ItemProgress,
  isFinal,
  isGuestProgress,
  itemKeyOf,
  type ObjectProgress,
  type RunRecord,
  type RunTrigger,
  runItems,
} from './apply-store.js';
import { finishLost, lostJobReason } from './apply-worker.js';
import type { PlanTarget } from '../plan/plan-pr.js';
import type { CommandHandler } from '../plan/plan-worker.js';
import type { PlanStore, StoredPlan } from '../plan/plan-store.js';
import { type HeldLock, withLock } from '../redis-lock.js';
import { ApplyRunJob, type MergeJobData, type RepoRef } from '../schema.js';

/** What the run queue's worker needs; constructed by the composition root (`src/server/serve.ts`). */
export interface ApplyRunDeps {
  logger: Logger;
  redis: Redis;
  store: ApplyStore;
  plans: PlanStore;
  jobs: ApplyJobs;
  /** The installation's Octokit (`probot.auth(installationId)`). */
  github: (installationId: number) => Promise<ProbotOctokit>;
  /** Plans and posts a pull request head now (the plan job's own path), for a merge without a stored plan. */
  planNow: (octokit: ProbotOctokit, target: PlanTarget, logger: Logger) => Promise<unknown>;
  /** Expiry of the posting lock (renewed while held): a report whose worker died holds no one up longer. */
  lockMs: number;
  /** This process's memory of unfinished runs, to report one Redis lost (`lost-runs.ts`). */
  lost?: LostRuns;
  /** A GitHub deployment per cluster per run (`deployments.ts`; on unless `APPLY_DEPLOYMENTS=0`). */
  deployments?: boolean;
}

/** Throws when the posting lock was lost (a worker paused past its expiry): a newer report may have posted since. */
async function stillPosting(lock: HeldLock): Promise<void> {
  if (lock.lost.aborted || !(await lock.stillHeld())) throw new Error(`${lock.key}: the posting lock was lost; the report runs again`);
}

/** Guest actions a run carries out; the others (no change, orphans) are not touched. */
const APPLIED_ACTIONS: ReadonlySet<GuestPlan['action']> = new Set(['create', 'update', 'destroy']);

/** A run to start. */
interface RunRequest {
  runId: string;
  trigger: RunTrigger;
  requestedBy?: string;
  installationId: number;
  stored: StoredPlan;
  mergeSha: string;
  /** Seconds since the epoch: `merged_at`, or when `/pve apply` was accepted. */
  order: number;
  /** An admin's `/pve apply --now`: let in outside the apply windows. */
  now?: boolean;
}

function queued(plan: GuestPlan | ObjectPlan): ItemProgress {
  if ('vmid' in plan) return { cluster: plan.cluster, name: plan.name, vmid: plan.vmid, node: plan.node, status: 'queued', steps: [] };
  return { kind: plan.kind, key: plan.key, cluster: plan.cluster, name: plan.name, status: 'queued', steps: [] };
}

/** Posts the apply comment and a completed check run for a merge that applies nothing. */
async function postNotice(deps: ApplyRunDeps, octokit: ProbotOctokit, repo: RepoRef, notice: ApplyNotice, log: Logger): Promise<void> {
  const { body, check } = renderApplyNotice(notice);
  await withLock(deps.redis, deps.store.postLockKey(repo.id, notice.pr), { ttlMs: deps.lockMs, waitMs: 120_000 }, async () => {
    const target: CheckTarget = { owner: repo.owner, repo: repo.name, headSha: notice.mergeSha };
    await createCompletedCheckRun(octokit, target, { name: APPLY_CHECK_NAME, externalId: String(notice.pr) }, check);
    // The comment now speaks of this merge: an older run still going must not overwrite it.
    await deps.store.setLatestRun(repo.id, notice.pr, '');
    const comment = await ensureComment(octokit, {
      owner: repo.owner,
      repo: repo.name,
      issueNumber: notice.pr,
      marker: APPLY_MARKER,
      body,
      known: await deps.store.getComment(repo.id, notice.pr),
    });
    await deps.store.setComment(repo.id, notice.pr, comment);
  });
  log.info({ notice: notice.kind }, 'nothing applied: notice posted');
}

/** How `head` relates to `base` in the repository's history, as GitHub's compare API says. */
async function commitRelation(octokit: ProbotOctokit, repo: RepoRef, base: string, head: string): Promise<string> {
  // One commit listed at most: only the status is read, and a long history costs nothing more.
  const { data } = await octokit.rest.repos.compareCommitsWithBasehead({
    owner: repo.owner,
    repo: repo.name,
    basehead: `${base}...${head}`,
    per_page: 1,
  });
  return data.status;
}

/**
 * The score of a merge's tickets. `merged_at` has one-second resolution, so merges of the same
 * second are placed by the default branch's history instead of by chance: after every merge of
 * that second already queued for one of its guests that its merge commit descends from, before
 * every one that descends from it. Only ties cost a GitHub request (docs/github-app.md, "What an
 * apply is keyed on"); the caller holds the repository's lock, so two merges of one second never
 * both miss each other.
 */
async function mergeOrder(
  deps: ApplyRunDeps,
  octokit: ProbotOctokit,
  run: { id: string; repo: RepoRef; mergeSha: string; order: number },
  guests: readonly string[],
  log: Logger,
): Promise<number> {
  const second = Math.floor(run.order);
  let after = second;
  let before = second + 1;
  for (const [otherId, score] of await deps.store.ticketsWithin(guests, second, second + 1)) {
    if (otherId === run.id) continue;
    const other = (await deps.store.getRun(otherId))?.run;
    if (other?.trigger !== 'merge' || other.repo.id !== run.repo.id || other.mergeSha === run.mergeSha) continue;
    const relation = await commitRelation(octokit, run.repo, other.mergeSha, run.mergeSha);
    if (relation === 'ahead') after = Math.max(after, score);
    else if (relation === 'behind') before = Math.min(before, score);
    log.info({ other: otherId, relation }, 'merged in the same second as another apply of its guests: ordered by history');
  }
  // Diverged histories (or none found) keep the middle of the interval; ties left fall to the run id.
  return after < before ? (after + before) / 2 : after + 1e-4;
}

/**
 * Starts a run of a stored plan: resolves `started`, or `notice` when it applies nothing (the plan
 * has errors, or no changes) and the pull request was told why.
 */
async function startRun(deps: ApplyRunDeps, octokit: ProbotOctokit, request: RunRequest, log: Logger): Promise<'started' | 'notice'> {
  const { stored } = request;
  // Started completely by an earlier attempt of this job that failed before marking its cause
  // carried out: only the report it may not have asked for is left.
  if ((await deps.store.getRun(request.runId))?.queued) {
    await deps.jobs.report(request.runId);
    return 'started';
  }
  const about = { pr: stored.pr, headSha: stored.headSha, mergeSha: request.mergeSha };
  if (planHasErrors(stored.plan)) {
    await postNotice(deps, octokit, stored.repo, { kind: 'plan-errors', ...about, errors: planErrorLines(stored.plan) }, log);
    return 'notice';
  }
  // Apply recomputes every change from the specs the plan carries: they must pass validate as the
  // YAML they came from would, with the checks of this version.
  const invalid = validateStoredPlan(stored.plan).map(formatSpecError);
  if (invalid.length > 0) {
    await postNotice(deps, octokit, stored.repo, { kind: 'invalid-specs', ...about, errors: invalid }, log);
    return 'notice';
  }
  const guests = stored.plan.guests.filter((guest) => APPLIED_ACTIONS.has(guest.action));
  // Items of other kinds that write (a pool, a guest's membership), in the order of their phases.
  const objects = byPhase((stored.plan.objects ?? []).filter(objectWrites));
  if (guests.length === 0 && objects.length === 0) {
    await postNotice(deps, octokit, stored.repo, { kind: 'no-changes', ...about }, log);
    return 'notice';
  }
  const run: ApplyRun = {
    id: request.runId,
    repo: stored.repo,
    pr: stored.pr,
    installationId: request.installationId,
    headSha: stored.headSha,
    mergeSha: request.mergeSha,
    trigger: request.trigger,
    ...(request.requestedBy !== undefined ? { requestedBy: request.requestedBy } : {}),
    ...(request.now ? { now: true } : {}),
    createdAt: new Date().toISOString(),
    order: request.order,
    guests: guests.map(itemKeyOf),
    ...(objects.length > 0 ? { objects: objects.map(itemKeyOf) } : {}),
  };
  // Idempotent throughout (a retried job makes the same run): the run is kept as first stored, a
  // ticket already in a FIFO stays where it is, a guest job already added is not added again.
  // One MULTI appends all of a run's tickets; the repository's lock only makes a merge's look at
  // the merges of its second and its append one step (`mergeOrder`).
  const plans = new Map<string, GuestPlan | ObjectPlan>([...guests, ...objects].map((item) => [itemKeyOf(item), item]));
  const append = async (): Promise<ApplyRun> => {
    if (run.trigger === 'merge') run.order = await mergeOrder(deps, octokit, run, runItems(run), log);
    const created = await deps.store.createRun(run, [...guests, ...objects]);
    // A run stored by an earlier attempt keeps its own items' plans: the tickets are made from those.
    const planOf = async (key: string, guest: boolean): Promise<GuestPlan | ObjectPlan> =>
      plans.get(key) ?? (guest ? await deps.store.guestPlan(created.id, key) : await deps.store.objectPlan(created.id, key));
    const tickets = new Map([
      ...(await Promise.all(created.guests.map(async (key) => [key, queued(await planOf(key, true))] as const))),
      ...(await Promise.all((created.objects ?? []).map(async (key) => [key, queued(await planOf(key, false))] as const))),
    ]);
    await deps.store.appendTickets(created, (key) => tickets.get(key) as ItemProgress);
    return created;
  };
  const created =
    run.trigger === 'merge'
      ? await withLock(deps.redis, deps.store.repoLockKey(run.repo.id), { ttlMs: deps.lockMs, waitMs: 120_000 }, append)
      : await append();
  deps.lost?.note(created);
  await deps.store.setLatestRun(created.repo.id, created.pr, created.id);
  await deps.jobs.addItems(created.id, runItems(created));
  await deps.store.markQueued(created.id);
  await deps.jobs.report(created.id);
  log.info(
    { run: created.id, guests: created.guests.length, objects: created.objects?.length ?? 0, trigger: created.trigger },
    'apply run started',
  );
  return 'started';
}

/**
 * Whether the merge or comment was carried out already (by any delivery, retried or replayed):
 * then nothing is started again, however long ago that was.
 */
async function alreadyCarriedOut(deps: ApplyRunDeps, repo: RepoRef, cause: ApplyCause, log: Logger): Promise<boolean> {
  const outcome = await deps.store.carriedOut(repo.id, cause);
  if (outcome === undefined) return false;
  log.info({ cause, carriedOut: outcome }, 'carried out already: nothing is started again');
  return true;
}

/**
 * Whether a plan's comment showed it before the merge, by GitHub's clock. `merged_at` has whole
 * seconds, so a comment written in the merge's second may have come after it: that is not before
 * (the safe side — the merge applies nothing, `/pve apply` after review does). Not known: not before.
 */
export function shownBeforeMerge(shownAt: string | undefined, mergedAt: string): boolean {
  if (shownAt === undefined) return false;
  const shown = Math.floor(Date.parse(shownAt) / 1000);
  const merged = Math.floor(Date.parse(mergedAt) / 1000);
  return shown < merged;
}

/**
 * `retried`: this job ran before (a failed attempt, or a worker that died). A merge marked
 * `no-plan` by it is finished here — planned and told — and never applied: the plan its first
 * attempt posted was never reviewed.
 */
async function onMerge(deps: ApplyRunDeps, data: MergeJobData, retried: boolean, log: Logger): Promise<void> {
  const cause: ApplyCause = { merge: data.mergeSha, pr: data.pr };
  const decided = await deps.store.carriedOut(data.repo.id, cause);
  const noticeLeft = retried && decided === 'no-plan';
  if (decided !== undefined && !noticeLeft) {
    log.info({ cause, carriedOut: decided }, 'carried out already: nothing is started again');
    return;
  }
  const runId = mergeRunId(data.repo.id, data.pr, data.mergeSha);
  const octokit = await deps.github(data.installationId);
  const posted = noticeLeft ? undefined : await deps.plans.getPostedPlan(data.repo.id, data.pr, data.headSha);
  // Planned against another branch (retargeted since), it does not show what this merge brings.
  const onBase = posted && posted.baseRef === data.baseRef ? posted : undefined;
  // Shown only after the merge (a plan job for the merged head that posted late, a merge pressed
  // while the comment showed no plan yet): nobody saw it when they merged.
  const shownLate = onBase !== undefined && !shownBeforeMerge(onBase.shownAt, data.mergedAt);
  const stored = shownLate ? undefined : onBase;
  if (!stored) {
    // Decided before anything is planned: a retry (the notice refused, a worker killed) finding
    // the plan made just now must not apply it unreviewed, nor must a replay.
    await deps.store.markCarriedOut(data.repo.id, cause, 'no-plan');
    log.info(
      { head: data.headSha, plannedOn: posted?.baseRef, shownAt: posted?.shownAt, mergedAt: data.mergedAt },
      'no posted plan for the merged head and base: planning it now, applying nothing',
    );
    const target: PlanTarget = {
      repo: data.repo,
      pr: data.pr,
      headSha: data.headSha,
      baseSha: data.baseSha,
      baseRef: data.baseRef,
      draft: false,
      reason: 'merged',
    };
    await deps.planNow(octokit, target, log);
    // Merged: its plan races with no open pull request any more.
    await deps.plans.removeTouched(data.repo.id, data.pr);
    const about = { pr: data.pr, headSha: data.headSha, mergeSha: data.mergeSha };
    const otherBase =
      posted && !onBase && data.baseRef !== undefined ? { plannedOn: posted.baseRef ?? 'another branch', mergedInto: data.baseRef } : {};
    const late = shownLate ? { shownAfterMerge: true } : {};
    await postNotice(deps, octokit, data.repo, { kind: 'no-plan', ...about, ...otherBase, ...late }, log);
    return;
  }
  const outcome = await startRun(
    deps,
    octokit,
    {
      runId,
      trigger: 'merge',
      installationId: data.installationId,
      stored,
      mergeSha: data.mergeSha,
      order: Date.parse(data.mergedAt) / 1000,
    },
    log,
  );
  await deps.store.markCarriedOut(data.repo.id, cause, outcome === 'started' ? runId : outcome);
}

/**
 * A merge job that failed for good (its last attempt, or stalled too often) before its run was
 * started — GitHub failing the compare of `mergeOrder`, say — applied nothing and marked nothing:
 * the pull request is told that the apply did not start, why, and that `/pve apply` starts it.
 * The merge is then marked carried out, so a delivery of it replayed later starts nothing beside
 * that `/pve apply`. A job with attempts left is retried and says nothing.
 */
export async function noticeFailedMerge(deps: ApplyRunDeps, job: Job, error: Error): Promise<void> {
  const parsed = ApplyRunJob.safeParse(job.data);
  if (!parsed.success || parsed.data.kind !== 'merge') return;
  if (job.attemptsMade < (job.opts.attempts ?? 1) && !/stalled/i.test(error.message)) return;
  const data = parsed.data;
  const cause: ApplyCause = { merge: data.mergeSha, pr: data.pr };
  const runId = mergeRunId(data.repo.id, data.pr, data.mergeSha);
  const decided = await deps.store.carriedOut(data.repo.id, cause);
  // Started after all (only its mark failed), or decided with its notice posted: said already.
  if ((await deps.store.getRun(runId))?.queued || (decided !== undefined && decided !== 'no-plan')) return;
  const log = deps.logger.child({ job: job.id, repo: `${data.repo.owner}/${data.repo.name}`, pr: data.pr });
  const octokit = await deps.github(data.installationId);
  const about = { pr: data.pr, headSha: data.headSha, mergeSha: data.mergeSha };
  const why = `${error.message} (after ${job.attemptsMade} attempts)`;
  await postNotice(deps, octokit, data.repo, { kind: 'not-started', ...about, why }, log);
  await deps.store.markCarriedOut(data.repo.id, cause, 'notice');
}

/** The reply to a `/pve apply` that would apply something the default branch no longer says (or cannot be read). */
function rollbackRefusal(who: string, branch: string, tip: string, changed: readonly string[] | undefined): string {
  const at = `\`${branch}\` (now at \`${tip.slice(0, 7)}\`)`;
  const why =
    changed === undefined
      ? `the specs on ${at} do not load, so what it says cannot be compared`
      : `${at} no longer says what this pull request's head says for ${changed.map((g) => `**${g}**`).join(', ')}: a later change on \`${branch}\` touched ${changed.length === 1 ? 'it' : 'them'}, and this plan would roll that back on the cluster without review`;
  return (
    `${who} nothing was applied: ${why}. ` +
    `\`/pve apply\` on a merged pull request applies its reviewed plan only where the default branch still describes every guest it changes as this pull request did. ` +
    `To change these guests now, open a pull request against \`${branch}\`: it is planned, reviewed and applied on merge.`
  );
}

/**
 * `/pve apply`: on a merged pull request, applies its posted plan — what its comment shows (after a conflict,
 * `/pve plan` stores a fresh one to review first) — only where the default branch's head still
 * describes every guest it changes as the pull request's head did (`default-branch-check.ts`):
 * otherwise an older pull request would roll a later merge back. Elsewhere it says why it does
 * nothing. The plan worker has checked the author's permission and reacted already; a comment
 * already carried out (its delivery replayed) does nothing.
 */
export function applyCommand(deps: ApplyRunDeps): CommandHandler {
  return async (job, ctx) => {
    // A comment is one request to apply: its delivery replayed (under any delivery id) asks nothing new.
    const cause: ApplyCause = { comment: job.commentId };
    if (await alreadyCarriedOut(deps, job.repo, cause, ctx.logger)) return;
    const runId = commandRunId(job.repo.id, job.commentId);
    const answered = async (body: string): Promise<void> => {
      await ctx.reply(body);
      await deps.store.markCarriedOut(job.repo.id, cause, 'reply');
    };
    const override = applyOverride(job.args, ctx.role, `@${job.author}`);
    if (override.refusal !== undefined) {
      await answered(override.refusal);
      return;
    }
    // The pull request's run still waiting (for its window, say) is let in now rather than queued behind.
    const waitingRun = override.now ? await letInNow(deps, job.repo.id, job.pr) : undefined;
    if (waitingRun !== undefined) {
      await ctx.reply(
        `@${job.author} the apply still waiting for this pull request goes ahead now, outside its apply windows (\`--now\`).`,
      );
      await deps.store.markCarriedOut(job.repo.id, cause, waitingRun);
      return;
    }
    const { data: pr } = await ctx.octokit.rest.pulls.get({ owner: job.repo.owner, repo: job.repo.name, pull_number: job.pr });
    const who = `@${job.author}`;
    if (pr.state === 'open') {
      await answered(
        `${who} pve-gitops applies a pull request when it is merged into the default branch, with the plan reviewed here; ` +
          '`/pve apply` is for a merged pull request (to run its apply again after a conflict or a failure). `/pve plan` shows what a merge would apply now.',
      );
      return;
    }
    if (pr.merged !== true || !pr.merge_commit_sha) {
      await answered(`${who} this pull request was closed without merging: nothing is applied.`);
      return;
    }
    const defaultBranch = pr.base.repo.default_branch;
    if (pr.base.ref !== defaultBranch) {
      await answered(
        `${who} this pull request was merged into \`${pr.base.ref}\`, not the default branch: only merges into the default branch are applied.`,
      );
      return;
    }
    const posted = await ctx.store.getPostedPlan(job.repo.id, job.pr);
    if (posted && posted.baseRef !== pr.base.ref) {
      await answered(
        `${who} the plan posted here was made against \`${posted.baseRef ?? 'another branch'}\`, not \`${pr.base.ref}\`, which this pull request was merged into: ` +
          'nothing is applied. Comment `/pve plan`, review the plan, then `/pve apply`.',
      );
      return;
    }
    // The plan of an earlier push (a re-plan's comment refused, the merge's job given up) would
    // leave out what the merged head changed since: only the merged head's own plan is applied.
    if (posted && posted.headSha !== pr.head.sha) {
      await answered(
        `${who} the plan posted here is for \`${posted.headSha.slice(0, 7)}\`, not \`${pr.head.sha.slice(0, 7)}\`, the head this pull request was merged with: ` +
          'nothing is applied, since that plan would leave out what the later commits change. Comment `/pve plan`, review the plan, then `/pve apply`.',
      );
      return;
    }
    const stored = posted;
    if (!stored) {
      await answered(`${who} no plan is stored for this pull request: comment \`/pve plan\`, review the plan, then \`/pve apply\`.`);
      return;
    }
    // Only what the default branch says is applied: a later merge may have changed these guests.
    const { data: branch } = await ctx.octokit.rest.repos.getBranch({ owner: job.repo.owner, repo: job.repo.name, branch: defaultBranch });
    const tip = branch.commit.sha;
    const now = await ctx.specs.base(ctx.octokit, job.repo, tip);
    const changed = now.loaded.errors.length > 0 ? undefined : guestsTheBranchChanged(stored, now.loaded.specs, APPLIED_ACTIONS);
    if (changed === undefined || changed.length > 0) {
      await answered(rollbackRefusal(who, defaultBranch, tip, changed));
      return;
    }
    const outcome = await startRun(
      deps,
      ctx.octokit,
      {
        runId,
        trigger: 'command',
        requestedBy: job.author,
        ...(override.now ? { now: true } : {}),
        installationId: job.installationId,
        stored,
        mergeSha: pr.merge_commit_sha,
        order: Date.now() / 1000,
      },
      ctx.logger,
    );
    await deps.store.markCarriedOut(job.repo.id, cause, outcome === 'started' ? runId : outcome);
  };
}

function toResult(progress: GuestProgress): GuestApplyResult {
  const { waiting: _waiting, attempts: _attempts, finishedAt: _finishedAt, inFlight: _inFlight, status, ...rest } = progress;
  return { ...rest, status: isFinal(status) ? status : 'failed' };
}

function toObjectResult(progress: ObjectProgress): ObjectApplyResult {
  const { waiting: _waiting, attempts: _attempts, finishedAt: _finishedAt, inFlight: _inFlight, status, ...rest } = progress;
  return { ...rest, status: isFinal(status) ? status : 'failed' };
}

/** The run as the comment shows it, from what Redis holds: its guests, then its other items in phase order. */
export function runView(run: ApplyRun, results: ReadonlyMap<string, ItemProgress>): ApplyRunView {
  const finished: GuestApplyResult[] = [];
  const inProgress: GuestInProgress[] = [];
  const objects: ObjectApplyResult[] = [];
  const objectsInProgress: ObjectInProgress[] = [];
  let finishedAt = run.createdAt;
  for (const key of run.objects ?? []) {
    const progress = results.get(key);
    if (!progress || isGuestProgress(progress)) continue;
    if (isFinal(progress.status)) {
      objects.push(toObjectResult(progress));
      if (progress.finishedAt !== undefined && progress.finishedAt > finishedAt) finishedAt = progress.finishedAt;
    } else {
      objectsInProgress.push({
        kind: progress.kind,
        key: progress.key,
        cluster: progress.cluster,
        name: progress.name,
        state: progress.status as ObjectInProgress['state'],
        ...(progress.waiting !== undefined ? { reason: progress.waiting } : {}),
        steps: progress.steps,
      });
    }
  }
  for (const guest of run.guests) {
    const progress = results.get(guest);
    if (!progress || !isGuestProgress(progress)) continue;
    if (isFinal(progress.status)) {
      finished.push(toResult(progress));
      if (progress.finishedAt !== undefined && progress.finishedAt > finishedAt) finishedAt = progress.finishedAt;
    } else {
      inProgress.push({
        cluster: progress.cluster,
        name: progress.name,
        vmid: progress.vmid,
        node: progress.node,
        state: progress.status as GuestInProgress['state'],
        ...(progress.waiting !== undefined ? { reason: progress.waiting } : {}),
        steps: progress.steps,
      });
    }
  }
  return {
    pr: run.pr,
    headSha: run.headSha,
    mergeSha: run.mergeSha,
    trigger: run.trigger,
    ...(run.requestedBy !== undefined ? { requestedBy: run.requestedBy } : {}),
    startedAt: run.createdAt,
    finishedAt,
    finished,
    inProgress,
    ...(run.objects !== undefined ? { objects, objectsInProgress } : {}),
  };
}

/** Items whose jobs ended without a result (a worker that died on the last attempt): recorded as failed. */
async function heal(deps: ApplyRunDeps, record: RunRecord, results: ReadonlyMap<string, ItemProgress>, log: Logger): Promise<void> {
  for (const guest of runItems(record.run)) {
    const progress = results.get(guest);
    if (!progress || isFinal(progress.status)) continue;
    const why = await lostJobReason(deps.store, deps.jobs, record.run.id, guest);
    if (why !== undefined && (await finishLost(deps.store, deps.jobs, record.run.id, guest, why))) {
      log.warn({ guest, why }, 'guest job ended without a result: recorded as failed');
    }
  }
}

/** Brings the run's check run and (for the pull request's latest run) the apply comment up to date. */
async function report(deps: ApplyRunDeps, runId: string, healing: boolean, log: Logger): Promise<void> {
  const first = await deps.store.getRun(runId);
  if (!first) return;
  const { repo, pr } = first.run;
  const complete = await withLock(
    deps.redis,
    deps.store.postLockKey(repo.id, pr),
    { ttlMs: deps.lockMs, waitMs: 120_000 },
    async (lock) => {
      // Read under the lock: whatever an earlier report posted, this one posts what is newer. Gone
      // now (Redis lost it since), the run is not reported from the stale copy — its results are
      // gone too and it would look finished; the lost-run watch reports it (`lost-runs.ts`).
      const record = await deps.store.getRun(runId);
      if (!record) return true;
      if (healing) await heal(deps, record, await deps.store.results(runId), log);
      const view = runView(record.run, await deps.store.results(runId));
      const check = applyCheckResult(view);
      const octokit = await deps.github(record.run.installationId);
      const target: CheckTarget = { owner: repo.owner, repo: repo.name, headSha: record.run.mergeSha };
      const hash = bodyHash(JSON.stringify(check));
      let checkRunId = record.checkRunId;
      if (!record.checkCompleted && hash !== record.checkHash) {
        await stillPosting(lock);
        let id = record.checkRunId;
        if (id === undefined && check.complete) {
          id = await createCompletedCheckRun(octokit, target, { name: APPLY_CHECK_NAME, externalId: runId }, check);
        } else {
          id ??= (
            await startCheckRun(octokit, target, { name: APPLY_CHECK_NAME, externalId: runId, title: check.title, summary: check.summary })
          ).id;
          if (check.complete) await completeCheckRun(octokit, target, id, check);
          else if (record.checkRunId !== undefined) await updateCheckRun(octokit, target, id, check);
        }
        await deps.store.setCheck(runId, { id, hash, completed: check.complete });
        checkRunId = id;
      }
      const deployments = deps.deployments ? await syncDeployments(deps.redis, deps.store, octokit, record.run, view, log) : undefined;
      const latest = (await deps.store.latestRun(repo.id, pr)) === runId;
      deps.lost?.note(record.run, {
        ...(checkRunId !== undefined ? { checkRunId } : {}),
        ...(deployments !== undefined ? { deployments } : {}),
        latest,
        view,
      });
      if (latest) {
        await stillPosting(lock);
        const comment = await ensureComment(octokit, {
          owner: repo.owner,
          repo: repo.name,
          issueNumber: pr,
          marker: APPLY_MARKER,
          body: renderApplyComment(view),
          known: await deps.store.getComment(repo.id, pr),
        });
        await deps.store.setComment(repo.id, pr, comment);
        deps.lost?.note(record.run, { comment: { id: comment.id, bodyHash: comment.bodyHash } });
        log.debug({ comment: comment.action, finished: view.finished.length, inProgress: view.inProgress.length }, 'apply reported');
      }
      if (check.complete) {
        await deps.store.expireRun(runId);
        deps.lost?.finished(runId);
      }
      return check.complete;
    },
  );
  // While guests are not finished, a report comes at least every watchdog interval, change or not:
  // waits show on the pull request, and guests whose jobs died are found.
  if (!complete) await deps.jobs.report(runId, { watchdog: true });
}

/** The processor BullMQ calls for each job of the apply-run queue. */
export function createRunProcessor(deps: ApplyRunDeps): (job: Job) => Promise<void> {
  return async (job) => {
    const data = ApplyRunJob.parse(job.data);
    if (data.kind === 'report') {
      await report(deps, data.runId, data.heal === true, deps.logger.child({ job: job.id, run: data.runId }));
      return;
    }
    const log = deps.logger.child({
      job: job.id,
      delivery: data.deliveryId,
      kind: data.kind,
      repo: `${data.repo.owner}/${data.repo.name}`,
      pr: data.pr,
    });
    await onMerge(deps, data, job.attemptsStarted > 1 || job.attemptsMade > 0, log);
  };
}
