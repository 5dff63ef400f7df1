/**
 * The plan of one pull request head: read the spec repository at the head and base commits (one
 * archive each, the base's cached), plan head against base with read-only clients, and post it —
 * the sticky comment and the `pve-gitops/plan` check run — unless a newer head of the pull request
 * arrived meanwhile; once the comment is written, the plan is stored as the one it shows. Posting for one pull request is serialised by a Redis lock,
 * and the newest head is checked again under it, so a plan for an older push never lands over a
 * newer one.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { ClusterConfigError } from '../../connections/cluster-connections.js';
import { type ConnectOptions, clusterNames, connectReadable } from '../../connections/connect.js';
import type { OpenClusters } from '../../connections/open-clusters.js';
import type { Plan } from '../../core/model.js';
import { guestKeyText, keyText, resourceKey } from '../../core/kinds/resource-key.js';
import { observePlan } from '../../engine/run-plan.js';
import { rehearsePlan } from '../../engine/rehearse/rehearse-plan.js';
import { type Rehearsal, withholdRehearsalLive } from '../../core/rehearse/outcome.js';
import { planHasChanges } from '../../core/plan/plan-specs.js';
import { openRehearsalSandbox } from '../../pve/rehearse/sandbox.js';
import { type RehearsalMode, withRehearsalCheck, withRehearsalSection } from '../../github/rehearsal-report.js';
import { PLAN_CHECK_NAME } from '../../github/check-names.js';
import { type CheckResult, type CheckTarget, completeCheckRun, startCheckRun, updateCheckRun } from '../../github/check-runs.js';
import {
  type ApplyingGuest,
  type Overlap,
  type PlannedCommits,
  planAnnotations,
  planCheckResult,
  problemsCheckResult,
  renderAwaitingCommandComment,
  renderPlanComment,
  renderProblemsComment,
  type SpecProblem,
} from '../../github/plan-comment.js';
import { ArchiveError } from '../../github/read-archive.js';
import { RepoConfigError } from '../../github/repo-config.js';
import { repoFilePath } from '../../github/spec-repo.js';
import { type EnsuredComment, ensureComment, type KnownComment } from '../../github/sticky-comment.js';
import { PLAN_MARKER } from '../../core/render/render-markdown.js';
import { withholdLiveValues } from '../../core/render/withhold-live.js';
import type { CommitSpecs, CommitSpecsCache } from '../commit-specs.js';
import type { NewestHeads } from '../newest-head.js';
import type { PlanStore, StoredPlan, TouchedGuest } from './plan-store.js';
import { type HeldLock, withLock } from '../redis-lock.js';
import { SpecLoadTimeout } from '../../spec-files/spec-load-thread.js';
import type { PlanReason, RepoRef } from '../schema.js';
import { errorMessage } from '../../util/error-message.js';

/** What planning a pull request needs; built by the worker for each job. */
export interface PlanContext {
  logger: Logger;
  /** The installation's client (Probot's throttling and retry plugins included). */
  octokit: ProbotOctokit;
  redis: Redis;
  heads: NewestHeads;
  store: PlanStore;
  specs: CommitSpecsCache;
  /** The server's cluster connections (never the repository's). */
  connections: Omit<ConnectOptions, 'warn' | 'logger'>;
  /**
   * Asks for the sticky comments of these other pull requests to be rendered again (their list of
   * racing pull requests changed); absent, they are brought up to date at their next plan.
   */
  refreshComments?: (prs: readonly number[]) => Promise<void>;
  /** Applies queued or running, by guest key (merge-to-apply's state); absent: none shown. */
  applies?: { inProgress(guests: readonly string[]): Promise<Map<string, { repo: RepoRef; pr: number }[]>> };
}

/** The pull request head to plan. */
export interface PlanTarget {
  repo: RepoRef;
  pr: number;
  headSha: string;
  baseSha: string;
  /** The branch the pull request targets; stored with the plan (a plan of another base is never applied). */
  baseRef?: string | undefined;
  draft: boolean;
  reason: PlanReason;
  /** The head lives in another repository (a fork). */
  fork?: boolean | undefined;
  /**
   * The job and attempt this plan runs as. Attempts of one job share one check run: a retry takes
   * over the run an earlier attempt created (a worker killed, a GitHub error) instead of leaving
   * it in progress beside a new one, and only the last attempt completes it as a failure.
   */
  attempt?: { chain: string; number: number; final: boolean } | undefined;
}

/** What became of a plan job: `unchanged` — this head's plan against this base is posted already, nothing was planned. */
type PlanOutcome = 'posted' | 'superseded' | 'unchanged' | 'awaiting-command';

/**
 * Deliveries that plan only a head not yet posted: every action of a pull request sends one, and
 * an unchanged head against an unchanged base would plan to the same result (GitHub sends
 * `opened`, `reopened`, `ready_for_review` and `synchronize` for one head). Commands, "Re-run",
 * a merge and a change of base always plan.
 */
const PLAN_ONLY_NEW: ReadonlySet<PlanReason> = new Set(['opened', 'synchronize', 'reopened', 'ready_for_review']);

/**
 * Whether a fork's push waits for a writer: the base commit's config says `forks: on-command`. A
 * base that cannot be read says nothing here; planning reports it.
 */
async function forkWaitsForCommand(ctx: PlanContext, target: PlanTarget): Promise<boolean> {
  if (target.fork !== true || !PLAN_ONLY_NEW.has(target.reason)) return false;
  try {
    return (await ctx.specs.base(ctx.octokit, target.repo, target.baseSha)).config?.forks === 'on-command';
  } catch {
    return false;
  }
}

/**
 * Says on the pull request that this push of a fork is not planned until a writer asks. Nothing
 * of the head is read and no cluster is asked; no check run is made, so a required
 * `pve-gitops/plan` check keeps the pull request from merging until it is planned.
 */
async function postAwaitingCommand(ctx: PlanContext, target: PlanTarget, log: Logger): Promise<PlanOutcome> {
  const { repo } = target;
  return withLock(ctx.redis, ctx.store.postLockKey(repo.id, target.pr), { ttlMs: 30_000, waitMs: 120_000 }, async () => {
    const newest = await ctx.heads.get(repo.id, target.pr);
    if (newest !== undefined && newest !== target.headSha) return 'superseded';
    // The comment stops showing the plan posted before: that plan is no longer the one shown.
    await ctx.store.unmarkPosted(repo.id, target.pr);
    const comment = await ensureComment(ctx.octokit, {
      owner: repo.owner,
      repo: repo.name,
      issueNumber: target.pr,
      marker: PLAN_MARKER,
      body: renderAwaitingCommandComment({ headSha: target.headSha, baseSha: target.baseSha, draft: target.draft }),
      known: await ctx.store.getComment(repo.id, target.pr),
    });
    await ctx.store.setComment(repo.id, target.pr, comment);
    log.info({ comment: comment.action }, "a fork's push: not planned until a writer's /pve plan");
    return 'awaiting-command';
  });
}

/** Something that stops the plan before any cluster is read; posted as the plan's result. */
class PlanProblems extends Error {
  override name = 'PlanProblems';
  constructor(
    readonly headline: string,
    readonly problems: SpecProblem[],
  ) {
    super(headline);
  }
}

function short(sha: string): string {
  return sha.slice(0, 7);
}

/** The specs of head and base, or the problems that stop the plan. */
async function readSpecs(ctx: PlanContext, target: PlanTarget): Promise<{ head: CommitSpecs; base: CommitSpecs }> {
  let base: CommitSpecs;
  let head: CommitSpecs;
  try {
    base = await ctx.specs.base(ctx.octokit, target.repo, target.baseSha);
    head = await ctx.specs.head(ctx.octokit, target.repo, target.headSha, base.specRoot);
  } catch (error) {
    if (error instanceof RepoConfigError) {
      throw new PlanProblems('The App config at the base commit is invalid', [{ path: error.path, message: error.message }]);
    }
    if (error instanceof SpecLoadTimeout) {
      throw new PlanProblems('The specs took too long to validate', [{ message: error.message }]);
    }
    if (error instanceof ArchiveError) {
      throw new PlanProblems('The repository cannot be read safely', [
        { ...(error.path ? { path: error.path } : {}), message: error.message },
      ]);
    }
    throw error;
  }
  const where = (file: string): string => repoFilePath(head.specRoot, file);
  if (head.fileCount === 0) {
    throw new PlanProblems('No specs found', [
      {
        message: `no *.yaml or *.yml spec files under ${head.specRoot === '' ? 'the repository root' : `${head.specRoot}/`} at ${short(target.headSha)}`,
      },
    ]);
  }
  if (head.loaded.errors.length > 0) {
    throw new PlanProblems(
      'The specs are invalid',
      head.loaded.errors.map((error) => ({ path: where(error.file), line: error.line, col: error.col, message: error.message })),
    );
  }
  if (base.loaded.errors.length > 0) {
    // Lines of the base commit: named in the text, not annotated on the head's files.
    throw new PlanProblems(
      "The base branch's specs are invalid",
      base.loaded.errors.map((error) => ({
        message: `base ${short(target.baseSha)}: ${where(error.file)}:${error.line}:${error.col}: ${error.message}`,
      })),
    );
  }
  return { head, base };
}

/**
 * Opens read-only clients for the clusters the specs name that the server has a connection for
 * and lets this repository use. The others are left out: the plan says it could not read them and
 * why (no connection, or the server's repository mapping).
 */
async function openReaders(
  ctx: PlanContext,
  repo: RepoRef,
  names: string[],
  log: Logger,
): Promise<{ open: OpenClusters; refused: Record<string, string> }> {
  const options: ConnectOptions = {
    ...ctx.connections,
    // An insecure connection is recorded in the plan itself (and so in the comment); the log says it too.
    warn: (message) => log.warn({ warning: message }, 'insecure cluster connection'),
    progress: (message) => log.info({ progress: message }, 'a cluster is slow to answer'),
    logger: log,
    repository: `${repo.owner}/${repo.name}`,
  };
  try {
    return await connectReadable(names, options);
  } catch (error) {
    if (error instanceof ClusterConfigError) {
      throw new PlanProblems("The server's cluster connections are misconfigured", [{ message: error.message }]);
    }
    throw error;
  }
}

/** Guests a plan would change: what another pull request racing for them must know about. */
function touchedGuests(plan: Plan): TouchedGuest[] {
  return plan.guests
    .filter((guest) => guest.action === 'create' || guest.action === 'update' || guest.action === 'destroy')
    .map((guest) => ({ key: guestKeyText(guest.cluster, guest.vmid), name: `${guest.cluster}/${guest.name}` }));
}

/**
 * The plan's apply rehearsed on a simulated copy (docs/rehearsal.md), with the readers the plan
 * used; a rehearsal that cannot run is reported as not rehearsed, never as applied.
 */
async function rehearse(
  planned: Plan,
  observed: Parameters<typeof rehearsePlan>[0]['observed'],
  open: OpenClusters,
  log: Logger,
): Promise<Rehearsal> {
  try {
    const rehearsal = await rehearsePlan({
      plan: planned,
      observed,
      readers: open.clusters,
      openSandbox: openRehearsalSandbox,
      allowHostAccess: Object.fromEntries(Object.entries(open.access).map(([name, access]) => [name, access.allowHostAccess])),
    });
    log.info(
      { guests: rehearsal.guests.length, objects: rehearsal.objects?.length ?? 0, requests: rehearsal.requests, ms: rehearsal.ms },
      'rehearsed',
    );
    return withholdRehearsalLive(rehearsal, planned);
  } catch (error) {
    log.warn({ err: error }, 'rehearsal failed');
    return { version: 1, guests: [], skipped: { all: `the rehearsal could not run (${errorMessage(error)})` }, requests: 0, ms: 0 };
  }
}

/** The repository's rehearsal setting, read at the base commit. */
function rehearsalMode(base: CommitSpecs): RehearsalMode {
  return base.config?.rehearsal ?? 'fail';
}

async function plan(
  ctx: PlanContext,
  target: PlanTarget,
  log: Logger,
): Promise<{ plan: Plan; head: CommitSpecs; base: CommitSpecs; rehearsal?: Rehearsal }> {
  const { head, base } = await readSpecs(ctx, target);
  const { open, refused } = await openReaders(ctx, target.repo, clusterNames(head.loaded.specs, base.loaded.specs), log);
  try {
    const { plan: result, observed } = await observePlan({
      head: head.loaded.specs,
      base: base.loaded.specs,
      readers: open.clusters,
      unavailable: refused,
      access: open.access,
      ref: target.headSha,
      // Everything posted on a pull request is public to its readers (and to anyone, on a public repository).
      withholdUnowned: true,
    });
    const rehearsal = rehearsalMode(base) !== 'off' && planHasChanges(result) ? await rehearse(result, observed, open, log) : undefined;
    return { plan: result, head, base, ...(rehearsal ? { rehearsal } : {}) };
  } finally {
    await open.close();
  }
}

/** For each guest of `touched`, the other open pull requests whose latest plan touches it too. */
async function overlapsOf(ctx: PlanContext, repoId: number, pr: number, touched: readonly TouchedGuest[]): Promise<Overlap[]> {
  const byKey = await ctx.store.overlaps(repoId, pr, touched);
  return touched
    .filter((guest) => byKey.has(guest.key))
    .map((guest) => ({ guest: guest.name, vmid: Number(guest.key.split('/').pop()), prs: byKey.get(guest.key) ?? [] }));
}

/** The guests of the plan that an apply is queued or running for (another merge's, or this one's `/pve apply`). */
async function appliesInProgress(ctx: PlanContext, repo: RepoRef, touched: readonly TouchedGuest[]): Promise<ApplyingGuest[]> {
  if (!ctx.applies || touched.length === 0) return [];
  const found = await ctx.applies.inProgress(touched.map((guest) => guest.key));
  return touched
    .filter((guest) => found.has(guest.key))
    .map((guest) => ({
      guest: guest.name,
      vmid: Number(guest.key.split('/').pop()),
      applies: (found.get(guest.key) ?? []).map((a) => (a.repo.id === repo.id ? `#${a.pr}` : `${a.repo.owner}/${a.repo.name}#${a.pr}`)),
    }));
}

/** The other pull requests in `overlaps`, each once. */
function racingPrs(...lists: readonly Overlap[][]): number[] {
  return [...new Set(lists.flat().flatMap((o) => o.prs))].sort((a, b) => a - b);
}

/** The head specs a plan covers: stored with it, so the plan can be applied as reviewed. */
function specsOf(plan: Plan, head: CommitSpecs): StoredPlan['specs'] {
  const planned = new Set(plan.guests.map((g) => g.key));
  const items = new Set(plan.objects.map((o) => o.key));
  const objects = (head.loaded.specs.objects ?? []).filter((o) => items.has(keyText(resourceKey(o.cluster, o.kind, o.id))));
  return {
    clusters: head.loaded.specs.clusters,
    guests: head.loaded.specs.guests.filter((g) => planned.has(guestKeyText(g.cluster, g.vmid))),
    ...(objects.length > 0 ? { objects } : {}),
  };
}

/** True when GitHub answered a write with a refusal (4xx): the comment was not changed. */
function refused(error: unknown): boolean {
  const status = typeof error === 'object' && error !== null ? (error as { status?: unknown }).status : undefined;
  return typeof status === 'number' && status >= 400 && status < 500;
}

/** Throws when the posting lock was lost (a worker paused past its expiry): another job may have posted since. */
async function stillPosting(lock: HeldLock): Promise<void> {
  if (lock.lost.aborted || !(await lock.stillHeld())) throw new Error(`${lock.key}: the posting lock was lost; the plan is posted again`);
}

function sameGuests(a: readonly TouchedGuest[], b: readonly TouchedGuest[]): boolean {
  return a.length === b.length && a.every((guest, i) => guest.key === b[i]?.key && guest.name === b[i]?.name);
}

/**
 * Writes the sticky comment of a plan posted before (its head unchanged, or the pull requests
 * racing for its guests changed), rendered as every plan comment is: through
 * `withholdLiveValues`, so a re-render cannot show a live value the first posting withheld.
 */
async function showPostedPlan(
  ctx: PlanContext,
  repo: RepoRef,
  pr: number,
  stored: StoredPlan,
  shown: { touched: TouchedGuest[]; overlaps: Overlap[]; known: KnownComment | undefined },
): Promise<EnsuredComment> {
  const body = withRehearsalSection(
    renderPlanComment(
      withholdLiveValues(stored.plan),
      { headSha: stored.headSha, baseSha: stored.baseSha, draft: stored.draft },
      shown.overlaps,
      (file) => repoFilePath(stored.specRoot, file),
      await appliesInProgress(ctx, repo, shown.touched),
    ),
    stored.rehearsal,
  );
  return ensureComment(ctx.octokit, { owner: repo.owner, repo: repo.name, issueNumber: pr, marker: PLAN_MARKER, body, known: shown.known });
}

/**
 * A head whose plan against this base is posted already: the comment is rendered again from the
 * posted plan (a draft marked ready, a reopened pull request racing again) and nothing is planned.
 * Resolves false when that is no longer so under the posting lock (it must be planned after all).
 */
async function repostUnchanged(ctx: PlanContext, target: PlanTarget, log: Logger): Promise<boolean> {
  const { repo, pr } = target;
  const others = await withLock(ctx.redis, ctx.store.postLockKey(repo.id, pr), { ttlMs: 30_000, waitMs: 120_000 }, async (lock) => {
    const stored = await ctx.store.getPostedPlan(repo.id, pr, target.headSha);
    if (!stored || !sameBase(stored, target)) return undefined;
    const touched = touchedGuests(stored.plan);
    const previous = await ctx.store.getTouched(repo.id, pr);
    const before = await overlapsOf(ctx, repo.id, pr, previous);
    await ctx.store.setTouched(repo.id, pr, target.headSha, touched);
    const overlaps = await overlapsOf(ctx, repo.id, pr, touched);
    const known = await ctx.store.getComment(repo.id, pr);
    const comment = await showPostedPlan(ctx, repo, pr, { ...stored, draft: target.draft }, { touched, overlaps, known });
    await stillPosting(lock);
    // The same plan, shown since it was first posted: that time stands.
    if (comment.action !== 'unchanged' || stored.draft !== target.draft)
      await ctx.store.savePostedPlan({ ...stored, draft: target.draft, shownAt: stored.shownAt ?? comment.writtenAt }, comment.bodyHash);
    await ctx.store.setComment(repo.id, pr, comment);
    log.info({ comment: comment.action }, 'this head is planned and posted against this base already: not planned again');
    return sameGuests(previous, touched) ? [] : racingPrs(before, overlaps);
  });
  if (others === undefined) return false;
  if (others.length > 0) await ctx.refreshComments?.(others);
  return true;
}

/** True when a posted plan was made against the target's base: the same commit, and the same branch when the target names one. */
function sameBase(stored: StoredPlan, target: PlanTarget): boolean {
  return stored.baseSha === target.baseSha && (target.baseRef === undefined || stored.baseRef === target.baseRef);
}

/**
 * Plans one pull request head and posts the result. Resolves `superseded` when a newer head is
 * known (before planning, or right before posting), `unchanged` when this head's plan against this
 * base is posted already and the delivery did not ask for a new one; throws only for failures
 * worth a retry (GitHub or Redis unreachable) — invalid specs and unreadable clusters are results,
 * posted as such.
 *
 * The plan is kept in memory until its comment was written: it is stored as the pull request's
 * posted plan — the one merge-to-apply and `/pve apply` carry out — only then, under the posting
 * lock, after the newest head was checked. Until the comment write succeeds, no plan counts as
 * posted (the comment may show either), unless GitHub refused it and the comment still shows the
 * plan posted before.
 */
export async function planPullRequest(ctx: PlanContext, target: PlanTarget): Promise<PlanOutcome> {
  const log = ctx.logger.child({ pr: target.pr, head: target.headSha, base: target.baseSha });
  const { repo } = target;
  const check: CheckTarget = { owner: repo.owner, repo: repo.name, headSha: target.headSha };
  const attempt = target.attempt;
  if (!(await ctx.heads.isNewest(repo.id, target.pr, target.headSha))) {
    log.info('a newer head of this pull request is known: not planned');
    // An earlier attempt's run would stay in progress: this chain ends here.
    const earlier = attempt ? await ctx.store.getCheckRun(repo.id, target.pr, attempt.chain) : undefined;
    if (attempt && earlier) {
      const newest = (await ctx.heads.get(repo.id, target.pr)) ?? target.headSha;
      await completeCheckRun(ctx.octokit, { ...check, headSha: earlier.headSha }, earlier.id, {
        conclusion: 'skipped',
        title: `Superseded by ${short(newest)}`,
        summary: `A newer commit (${short(newest)}) was pushed before this plan could finish; its plan is the one posted.`,
      });
      await ctx.store.forgetCheckRun(repo.id, target.pr, attempt.chain);
    }
    return 'superseded';
  }
  if (PLAN_ONLY_NEW.has(target.reason)) {
    const posted = await ctx.store.getPostedPlan(repo.id, target.pr, target.headSha);
    if (posted && sameBase(posted, target) && (await repostUnchanged(ctx, target, log))) return 'unchanged';
  }
  if (await forkWaitsForCommand(ctx, target)) return postAwaitingCommand(ctx, target, log);
  const commits: PlannedCommits = { headSha: target.headSha, baseSha: target.baseSha, draft: target.draft };
  const planning = {
    title: 'Planning…',
    summary: `Planning ${short(target.headSha)} against base ${short(target.baseSha)} (${target.reason}).`,
  };
  // A retry takes over the check run of the attempt before it, which may have died with it "in progress".
  const earlier = attempt ? await ctx.store.getCheckRun(repo.id, target.pr, attempt.chain) : undefined;
  let runId: number;
  if (earlier !== undefined && earlier.headSha === target.headSha) {
    runId = earlier.id;
    await updateCheckRun(ctx.octokit, check, runId, {
      title: planning.title,
      summary: `${planning.summary} Attempt ${attempt?.number}: the one before it did not finish.`,
    });
  } else {
    if (earlier !== undefined) {
      // The attempt before planned another head (a command's retry found a newer one): that run is over.
      await completeCheckRun(ctx.octokit, { ...check, headSha: earlier.headSha }, earlier.id, {
        conclusion: 'skipped',
        title: `Superseded by ${short(target.headSha)}`,
        summary: `A retry of this plan found a newer commit (${short(target.headSha)}) and planned it instead.`,
      });
    }
    runId = (await startCheckRun(ctx.octokit, check, { name: PLAN_CHECK_NAME, externalId: String(target.pr), ...planning })).id;
    if (attempt) await ctx.store.setCheckRun(repo.id, target.pr, attempt.chain, { id: runId, headSha: target.headSha });
  }
  const checkRunId = runId;
  const complete = async (result: CheckResult): Promise<void> => {
    await completeCheckRun(ctx.octokit, check, checkRunId, result);
    if (attempt) await ctx.store.forgetCheckRun(repo.id, target.pr, attempt.chain);
  };
  try {
    let body: string;
    let result: ReturnType<typeof planCheckResult>;
    let touched: TouchedGuest[] = [];
    let overlaps: Overlap[] = [];
    let posting: StoredPlan | undefined;
    try {
      const planned = await plan(ctx, target, log);
      touched = touchedGuests(planned.plan);
      posting = {
        repo,
        pr: target.pr,
        headSha: target.headSha,
        baseSha: target.baseSha,
        baseRef: target.baseRef,
        specRoot: planned.head.specRoot,
        draft: target.draft,
        plan: planned.plan,
        specs: specsOf(planned.plan, planned.head),
        ...(planned.rehearsal ? { rehearsal: planned.rehearsal } : {}),
      };
      overlaps = await overlapsOf(ctx, repo.id, target.pr, touched);
      const applying = await appliesInProgress(ctx, repo, touched);
      const repoPath = (file: string): string => repoFilePath(planned.head.specRoot, file);
      const shown = withholdLiveValues(planned.plan);
      body = withRehearsalSection(renderPlanComment(shown, commits, overlaps, repoPath, applying), planned.rehearsal);
      const clusterSources = new Map(planned.head.loaded.specs.clusters.map((c) => [c.name, c.source]));
      const annotations = planAnnotations(shown, repoPath, clusterSources);
      result = withRehearsalCheck(
        planCheckResult(shown, commits, overlaps, annotations, applying),
        planned.rehearsal,
        rehearsalMode(planned.base),
        repoPath,
        planned.head.loaded.specs.guests,
      );
      log.info({ summary: planned.plan.summary, errors: planned.plan.errors.length, overlaps: overlaps.length }, 'planned');
    } catch (error) {
      if (!(error instanceof PlanProblems)) throw error;
      body = renderProblemsComment(error.headline, error.problems, commits);
      result = problemsCheckResult(error.headline, error.problems);
      log.info({ headline: error.headline, problems: error.problems.length }, 'not planned');
    }

    return await withLock(ctx.redis, ctx.store.postLockKey(repo.id, target.pr), { ttlMs: 30_000, waitMs: 120_000 }, async (lock) => {
      const newest = await ctx.heads.get(repo.id, target.pr);
      if (newest !== undefined && newest !== target.headSha) {
        log.info({ newest }, 'a newer head arrived while planning: not posted');
        await complete({
          conclusion: 'skipped',
          title: `Superseded by ${short(newest)}`,
          summary: `A newer commit (${short(newest)}) was pushed while this one was planned; its plan is the one posted.`,
        });
        return 'superseded';
      }
      // Pull requests that raced with this one's previous plan may not race with this one: they hear too.
      const before = await overlapsOf(ctx, repo.id, target.pr, await ctx.store.getTouched(repo.id, target.pr));
      await ctx.store.setTouched(repo.id, target.pr, target.headSha, touched);
      // Another pull request may have recorded its guests since this comment was rendered (both
      // rendered before either recorded): it is refreshed, and so is this comment, so neither misses the other.
      const now = await overlapsOf(ctx, repo.id, target.pr, touched);
      const shownRacing = new Set(racingPrs(overlaps));
      const missed = racingPrs(now).some((other) => !shownRacing.has(other));
      const known = await ctx.store.getComment(repo.id, target.pr);
      // From here until the write succeeded the comment may show either plan: neither may be applied.
      const shown = await ctx.store.unmarkPosted(repo.id, target.pr);
      let comment: EnsuredComment;
      try {
        comment = await ensureComment(ctx.octokit, {
          owner: repo.owner,
          repo: repo.name,
          issueNumber: target.pr,
          marker: PLAN_MARKER,
          body,
          known,
        });
      } catch (error) {
        // Refused, the comment still shows the plan posted before: that one stays the one to apply.
        if (shown !== undefined && refused(error)) await ctx.store.restorePosted(repo.id, target.pr, shown);
        throw error;
      }
      await stillPosting(lock);
      // Shown from the time GitHub says the comment got this body (an unchanged comment: its earlier write).
      if (posting) await ctx.store.savePostedPlan({ ...posting, shownAt: comment.writtenAt }, comment.bodyHash);
      await ctx.store.setComment(repo.id, target.pr, comment);
      await complete(result);
      log.info({ comment: comment.action, commentId: comment.id, conclusion: result.conclusion }, 'plan posted');
      const others = [...racingPrs(before, overlaps, now), ...(missed ? [target.pr] : [])];
      if (others.length > 0) await ctx.refreshComments?.(others);
      return 'posted';
    });
  } catch (error) {
    // The check run must not stay "in progress" forever: a retry takes it over, the last attempt completes it.
    const why = errorMessage(error);
    if (attempt && !attempt.final) {
      await updateCheckRun(ctx.octokit, check, checkRunId, {
        title: 'Planning… (retrying)',
        summary: `Attempt ${attempt.number} stopped: ${why}. It is retried.`,
      }).catch(() => {});
    } else {
      await complete({
        conclusion: 'failure',
        title: 'pve-gitops could not finish the plan',
        summary: `The plan stopped${attempt ? ` after ${attempt.number} attempts` : ''}: ${why}. \`/pve plan\` starts it again.`,
      }).catch(() => {});
    }
    throw error;
  }
}

/**
 * Renders a pull request's sticky comment again from its posted plan, with the open pull
 * requests that race for its guests now. Nothing is planned and no check run changes; the comment
 * is edited only when its text changed. Skipped when a newer head is on its way (its own plan will
 * say it), or when the pull request has no posted plan.
 */
export async function refreshComment(ctx: PlanContext, target: { repo: RepoRef; pr: number }): Promise<'edited' | 'unchanged' | 'skipped'> {
  const { repo, pr } = target;
  // Before anything is read: a change recorded from now on asks for a refresh of its own.
  await ctx.store.startRefresh(repo.id, pr);
  return withLock(ctx.redis, ctx.store.postLockKey(repo.id, pr), { ttlMs: 30_000, waitMs: 120_000 }, async (lock) => {
    const stored = await ctx.store.getPostedPlan(repo.id, pr);
    const known = await ctx.store.getComment(repo.id, pr);
    if (!stored || known === undefined || !(await ctx.heads.isNewest(repo.id, pr, stored.headSha))) return 'skipped';
    const touched = touchedGuests(stored.plan);
    const overlaps = await overlapsOf(ctx, repo.id, pr, touched);
    const comment = await showPostedPlan(ctx, repo, pr, stored, { touched, overlaps, known });
    await stillPosting(lock);
    // The same plan, shown with other neighbours: still the posted one, under its new body.
    if (comment.action !== 'unchanged')
      await ctx.store.savePostedPlan({ ...stored, shownAt: stored.shownAt ?? comment.writtenAt }, comment.bodyHash);
    await ctx.store.setComment(repo.id, pr, comment);
    return comment.action === 'unchanged' ? 'unchanged' : 'edited';
  });
}

/** The other open pull requests a closed one raced with: their comments should stop naming it. */
export async function forgetClosed(ctx: PlanContext, target: { repo: RepoRef; pr: number }): Promise<void> {
  const touched = await ctx.store.getTouched(target.repo.id, target.pr);
  const others = racingPrs(await overlapsOf(ctx, target.repo.id, target.pr, touched));
  await ctx.store.removeTouched(target.repo.id, target.pr);
  if (others.length > 0) await ctx.refreshComments?.(others);
}
