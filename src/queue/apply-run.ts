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
import { bodyHash, ensureComment } from '../github/sticky-comment.js';
import type { GuestApplyResult } from '../core/apply-result.js';
import type { GuestPlan } from '../core/model.js';
import { planErrorLines, planHasErrors } from '../core/plan/plan-specs.js';
import { formatSpecError } from '../core/spec/errors.js';
import { validateStoredPlan } from '../core/spec/validate-stored-plan.js';
import { APPLY_MARKER, type GuestInProgress } from '../core/render/render-apply.js';
import { type ApplyNotice, type ApplyRunView, applyCheckResult, renderApplyComment, renderApplyNotice } from '../github/apply-comment.js';
import { APPLY_CHECK_NAME } from '../github/check-names.js';
import { type CheckTarget, completeCheckRun, createCompletedCheckRun, startCheckRun, updateCheckRun } from '../github/check-runs.js';
import { type ApplyJobs, runIdOf } from './apply-jobs.js';
import { type ApplyRun, type ApplyStore, type GuestProgress, isFinal, type RunRecord, type RunTrigger } from './apply-store.js';
import { finishLost, lostJobReason } from './apply-worker.js';
import type { PlanTarget } from './plan-pr.js';
import type { CommandHandler } from './plan-worker.js';
import type { PlanStore, StoredPlan } from './plan-store.js';
import { type HeldLock, withLock } from './redis-lock.js';
import { ApplyRunJob, type MergeJobData, type RepoRef } from './schema.js';

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
}

function queued(plan: GuestPlan): GuestProgress {
  return { cluster: plan.cluster, name: plan.name, vmid: plan.vmid, node: plan.node, status: 'queued', steps: [] };
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

/**
 * Starts a run of a stored plan: resolves `started`, or `notice` when it applies nothing (the plan
 * has errors, or no changes) and the pull request was told why.
 */
async function startRun(deps: ApplyRunDeps, octokit: ProbotOctokit, request: RunRequest, log: Logger): Promise<'started' | 'notice'> {
  const { stored } = request;
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
  if (guests.length === 0) {
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
    createdAt: new Date().toISOString(),
    order: request.order,
    guests: guests.map((guest) => `${guest.cluster}/${guest.vmid}`),
  };
  // Idempotent throughout (a retried job makes the same run): the run is kept as first stored, a
  // ticket already in a FIFO stays where it is, a guest job already added is not added again.
  // No repository-wide lock is needed: one MULTI appends all of a run's tickets, and the order
  // in each FIFO comes from the run's order key, not from the moment of the append.
  const created = await deps.store.createRun(run, guests);
  const plans = new Map(guests.map((guest) => [`${guest.cluster}/${guest.vmid}`, guest]));
  await deps.store.appendTickets(created, (key) => queued(plans.get(key) as GuestPlan));
  await deps.store.setLatestRun(created.repo.id, created.pr, created.id);
  await deps.jobs.addGuests(created.id, created.guests);
  await deps.store.markQueued(created.id);
  await deps.jobs.report(created.id);
  log.info({ run: created.id, guests: created.guests.length, trigger: created.trigger }, 'apply run started');
  return 'started';
}

async function onMerge(deps: ApplyRunDeps, data: MergeJobData, log: Logger): Promise<void> {
  const octokit = await deps.github(data.installationId);
  const posted = await deps.plans.getPostedPlan(data.repo.id, data.pr, data.headSha);
  // Planned against another branch (retargeted since), it does not show what this merge brings.
  const stored = posted && posted.baseRef === data.baseRef ? posted : undefined;
  if (!stored) {
    log.info(
      { head: data.headSha, plannedOn: posted?.baseRef },
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
      posted && data.baseRef !== undefined ? { plannedOn: posted.baseRef ?? 'another branch', mergedInto: data.baseRef } : {};
    await postNotice(deps, octokit, data.repo, { kind: 'no-plan', ...about, ...otherBase }, log);
    return;
  }
  await startRun(
    deps,
    octokit,
    {
      runId: runIdOf('merge', data.deliveryId),
      trigger: 'merge',
      installationId: data.installationId,
      stored,
      mergeSha: data.mergeSha,
      order: Date.parse(data.mergedAt) / 1000,
    },
    log,
  );
}

/**
 * `/pve apply`: on a merged pull request, applies its posted plan (what its comment shows) (after a conflict,
 * `/pve plan` stores a fresh one to review first). Elsewhere it says why it does nothing. The
 * plan worker has checked the author's permission and reacted already.
 */
export function applyCommand(deps: ApplyRunDeps): CommandHandler {
  return async (job, ctx) => {
    const { data: pr } = await ctx.octokit.rest.pulls.get({ owner: job.repo.owner, repo: job.repo.name, pull_number: job.pr });
    const who = `@${job.author}`;
    if (pr.state === 'open') {
      await ctx.reply(
        `${who} pve-gitops applies a pull request when it is merged into the default branch, with the plan reviewed here; ` +
          '`/pve apply` is for a merged pull request (to run its apply again after a conflict or a failure). `/pve plan` shows what a merge would apply now.',
      );
      return;
    }
    if (pr.merged !== true || !pr.merge_commit_sha) {
      await ctx.reply(`${who} this pull request was closed without merging: nothing is applied.`);
      return;
    }
    const defaultBranch = pr.base.repo.default_branch;
    if (pr.base.ref !== defaultBranch) {
      await ctx.reply(
        `${who} this pull request was merged into \`${pr.base.ref}\`, not the default branch: only merges into the default branch are applied.`,
      );
      return;
    }
    const posted = await ctx.store.getPostedPlan(job.repo.id, job.pr);
    if (posted && posted.baseRef !== pr.base.ref) {
      await ctx.reply(
        `${who} the plan posted here was made against \`${posted.baseRef ?? 'another branch'}\`, not \`${pr.base.ref}\`, which this pull request was merged into: ` +
          'nothing is applied. Comment `/pve plan`, review the plan, then `/pve apply`.',
      );
      return;
    }
    const stored = posted;
    if (!stored) {
      await ctx.reply(`${who} no plan is stored for this pull request: comment \`/pve plan\`, review the plan, then \`/pve apply\`.`);
      return;
    }
    await startRun(
      deps,
      ctx.octokit,
      {
        runId: runIdOf('command', job.deliveryId),
        trigger: 'command',
        requestedBy: job.author,
        installationId: job.installationId,
        stored,
        mergeSha: pr.merge_commit_sha,
        order: Date.now() / 1000,
      },
      ctx.logger,
    );
  };
}

function toResult(progress: GuestProgress): GuestApplyResult {
  const { waiting: _waiting, attempts: _attempts, finishedAt: _finishedAt, status, ...rest } = progress;
  return { ...rest, status: isFinal(status) ? status : 'failed' };
}

/** The run as the comment shows it, from what Redis holds. */
export function runView(run: ApplyRun, results: ReadonlyMap<string, GuestProgress>): ApplyRunView {
  const finished: GuestApplyResult[] = [];
  const inProgress: GuestInProgress[] = [];
  let finishedAt = run.createdAt;
  for (const guest of run.guests) {
    const progress = results.get(guest);
    if (!progress) continue;
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
  };
}

/** Guests whose jobs ended without a result (a worker that died on the last attempt): recorded as failed. */
async function heal(deps: ApplyRunDeps, record: RunRecord, results: ReadonlyMap<string, GuestProgress>, log: Logger): Promise<void> {
  for (const guest of record.run.guests) {
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
      // Read under the lock: whatever an earlier report posted, this one posts what is newer.
      const record = (await deps.store.getRun(runId)) ?? first;
      if (healing) await heal(deps, record, await deps.store.results(runId), log);
      const view = runView(record.run, await deps.store.results(runId));
      const check = applyCheckResult(view);
      const octokit = await deps.github(record.run.installationId);
      const target: CheckTarget = { owner: repo.owner, repo: repo.name, headSha: record.run.mergeSha };
      const hash = bodyHash(JSON.stringify(check));
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
      }
      if ((await deps.store.latestRun(repo.id, pr)) === runId) {
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
        log.debug({ comment: comment.action, finished: view.finished.length, inProgress: view.inProgress.length }, 'apply reported');
      }
      if (check.complete) await deps.store.expireRun(runId);
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
    await onMerge(deps, data, log);
  };
}
