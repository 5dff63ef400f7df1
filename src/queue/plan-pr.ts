/**
 * The plan of one pull request head: read the spec repository at the head and base commits (one
 * archive each, the base's cached), plan head against base with read-only clients, store the plan,
 * and post it — the sticky comment and the `pve-gitops/plan` check run — unless a newer head of
 * the pull request arrived meanwhile. Posting for one pull request is serialised by a Redis lock,
 * and the newest head is checked again under it, so a plan for an older push never lands over a
 * newer one.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { ClusterConfigError } from '../connections/cluster-connections.js';
import { type ConnectOptions, clusterNames, connectClusters, MissingConnectionError } from '../connections/connect.js';
import type { OpenClusters } from '../connections/open-clusters.js';
import type { GuestSpec, Plan } from '../core/model.js';
import { guestKey } from '../core/plan/plan-specs.js';
import { runPlan } from '../engine/run-plan.js';
import { PLAN_CHECK_NAME } from '../github/check-names.js';
import { completeCheckRun, startCheckRun, type CheckTarget } from '../github/check-runs.js';
import {
  type ApplyingGuest,
  type Overlap,
  type PlannedCommits,
  planAnnotations,
  planCheckResult,
  problemsCheckResult,
  renderPlanComment,
  renderProblemsComment,
  type SpecProblem,
} from '../github/plan-comment.js';
import { ArchiveError } from '../github/read-archive.js';
import { RepoConfigError } from '../github/repo-config.js';
import { repoFilePath } from '../github/spec-repo.js';
import { ensureComment } from '../github/sticky-comment.js';
import { PLAN_MARKER } from '../core/render/render-markdown.js';
import type { CommitSpecs, CommitSpecsCache } from './commit-specs.js';
import type { NewestHeads } from './newest-head.js';
import type { PlanStore, TouchedGuest } from './plan-store.js';
import { withLock } from './redis-lock.js';
import { SpecLoadTimeout } from '../spec-files/spec-load-thread.js';
import type { PlanReason, RepoRef } from './schema.js';

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
  draft: boolean;
  reason: PlanReason;
}

/** What became of a plan job. */
export type PlanOutcome = 'posted' | 'superseded';

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
 * Opens read-only clients for the clusters the specs name that the server has a connection for.
 * A cluster without one is left out: the plan says it could not be read and why.
 */
async function openReaders(ctx: PlanContext, names: string[], log: Logger): Promise<OpenClusters> {
  const options: ConnectOptions = {
    ...ctx.connections,
    // An insecure connection is recorded in the plan itself (and so in the comment); the log says it too.
    warn: (message) => log.warn({ warning: message }, 'insecure cluster connection'),
    progress: (message) => log.info({ progress: message }, 'a cluster is slow to answer'),
    logger: log,
  };
  try {
    return await connectClusters(names, 'read', options);
  } catch (error) {
    if (error instanceof MissingConnectionError) {
      const configured = names.filter((name) => !error.clusters.includes(name));
      return connectClusters(configured, 'read', options);
    }
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
    .map((guest) => ({ key: guestKey(guest.cluster, guest.vmid), name: `${guest.cluster}/${guest.name}` }));
}

async function plan(ctx: PlanContext, target: PlanTarget, log: Logger): Promise<{ plan: Plan; head: CommitSpecs; base: CommitSpecs }> {
  const { head, base } = await readSpecs(ctx, target);
  const open = await openReaders(ctx, clusterNames(head.loaded.specs, base.loaded.specs), log);
  try {
    const result = await runPlan({
      head: head.loaded.specs,
      base: base.loaded.specs,
      readers: open.clusters,
      access: open.access,
      ref: target.headSha,
    });
    return { plan: result, head, base };
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
function specsOf(plan: Plan, head: CommitSpecs): { clusters: CommitSpecs['loaded']['specs']['clusters']; guests: GuestSpec[] } {
  const planned = new Set(plan.guests.map((g) => guestKey(g.cluster, g.vmid)));
  return {
    clusters: head.loaded.specs.clusters,
    guests: head.loaded.specs.guests.filter((g) => planned.has(guestKey(g.cluster, g.vmid))),
  };
}

/**
 * Plans one pull request head and posts the result. Resolves `superseded` when a newer head is
 * known (before planning, or right before posting); throws only for failures worth a retry (GitHub
 * or Redis unreachable) — invalid specs and unreadable clusters are results, posted as such.
 */
export async function planPullRequest(ctx: PlanContext, target: PlanTarget): Promise<PlanOutcome> {
  const log = ctx.logger.child({ pr: target.pr, head: target.headSha, base: target.baseSha });
  const { repo } = target;
  if (!(await ctx.heads.isNewest(repo.id, target.pr, target.headSha))) {
    log.info('a newer head of this pull request is known: not planned');
    return 'superseded';
  }
  const check: CheckTarget = { owner: repo.owner, repo: repo.name, headSha: target.headSha };
  const commits: PlannedCommits = { headSha: target.headSha, baseSha: target.baseSha, draft: target.draft };
  const run = await startCheckRun(ctx.octokit, check, {
    name: PLAN_CHECK_NAME,
    externalId: String(target.pr),
    title: 'Planning…',
    summary: `Planning ${short(target.headSha)} against base ${short(target.baseSha)} (${target.reason}).`,
  });
  try {
    let body: string;
    let result: ReturnType<typeof planCheckResult>;
    let touched: TouchedGuest[] = [];
    let overlaps: Overlap[] = [];
    try {
      const planned = await plan(ctx, target, log);
      touched = touchedGuests(planned.plan);
      await ctx.store.savePlan({
        repo,
        pr: target.pr,
        headSha: target.headSha,
        baseSha: target.baseSha,
        specRoot: planned.head.specRoot,
        draft: target.draft,
        plan: planned.plan,
        specs: specsOf(planned.plan, planned.head),
      });
      overlaps = await overlapsOf(ctx, repo.id, target.pr, touched);
      const applying = await appliesInProgress(ctx, repo, touched);
      const repoPath = (file: string): string => repoFilePath(planned.head.specRoot, file);
      body = renderPlanComment(planned.plan, commits, overlaps, repoPath, applying);
      const clusterSources = new Map(planned.head.loaded.specs.clusters.map((c) => [c.name, c.source]));
      const annotations = planAnnotations(planned.plan, repoPath, clusterSources);
      result = planCheckResult(planned.plan, commits, overlaps, annotations, applying);
      log.info({ summary: planned.plan.summary, errors: planned.plan.errors.length, overlaps: overlaps.length }, 'planned');
    } catch (error) {
      if (!(error instanceof PlanProblems)) throw error;
      body = renderProblemsComment(error.headline, error.problems, commits);
      result = problemsCheckResult(error.headline, error.problems);
      log.info({ headline: error.headline, problems: error.problems.length }, 'not planned');
    }

    return await withLock(ctx.redis, ctx.store.postLockKey(repo.id, target.pr), { ttlMs: 30_000, waitMs: 120_000 }, async () => {
      const newest = await ctx.heads.get(repo.id, target.pr);
      if (newest !== undefined && newest !== target.headSha) {
        log.info({ newest }, 'a newer head arrived while planning: not posted');
        await completeCheckRun(ctx.octokit, check, run.id, {
          conclusion: 'skipped',
          title: `Superseded by ${short(newest)}`,
          summary: `A newer commit (${short(newest)}) was pushed while this one was planned; its plan is the one posted.`,
        });
        return 'superseded';
      }
      // Pull requests that raced with this one's previous plan may not race with this one: they hear too.
      const before = await overlapsOf(ctx, repo.id, target.pr, await ctx.store.getTouched(repo.id, target.pr));
      await ctx.store.setTouched(repo.id, target.pr, target.headSha, touched);
      const known = await ctx.store.getComment(repo.id, target.pr);
      const comment = await ensureComment(ctx.octokit, {
        owner: repo.owner,
        repo: repo.name,
        issueNumber: target.pr,
        marker: PLAN_MARKER,
        body,
        known,
      });
      await ctx.store.setComment(repo.id, target.pr, comment);
      await completeCheckRun(ctx.octokit, check, run.id, result);
      log.info({ comment: comment.action, commentId: comment.id, conclusion: result.conclusion }, 'plan posted');
      const others = racingPrs(before, overlaps);
      if (others.length > 0) await ctx.refreshComments?.(others);
      return 'posted';
    });
  } catch (error) {
    // The check run must not stay "in progress" forever; the job is retried (a new run) or failed.
    await completeCheckRun(ctx.octokit, check, run.id, {
      conclusion: 'failure',
      title: 'pve-gitops could not finish the plan',
      summary: `The plan stopped: ${error instanceof Error ? error.message : String(error)}. It is retried; \`/pve plan\` starts it again.`,
    }).catch(() => {});
    throw error;
  }
}

/**
 * Renders a pull request's sticky comment again from its latest stored plan, with the open pull
 * requests that race for its guests now. Nothing is planned and no check run changes; the comment
 * is edited only when its text changed. Skipped when a newer head is on its way (its own plan will
 * say it), or when the pull request has no posted plan.
 */
export async function refreshComment(ctx: PlanContext, target: { repo: RepoRef; pr: number }): Promise<'edited' | 'unchanged' | 'skipped'> {
  const { repo, pr } = target;
  return withLock(ctx.redis, ctx.store.postLockKey(repo.id, pr), { ttlMs: 30_000, waitMs: 120_000 }, async () => {
    const sha = await ctx.store.latestPlanSha(repo.id, pr);
    const known = await ctx.store.getComment(repo.id, pr);
    if (sha === undefined || known === undefined || !(await ctx.heads.isNewest(repo.id, pr, sha))) return 'skipped';
    const stored = await ctx.store.getPlan(repo.id, pr, sha);
    if (!stored) return 'skipped';
    const touched = touchedGuests(stored.plan);
    const overlaps = await overlapsOf(ctx, repo.id, pr, touched);
    const body = renderPlanComment(
      stored.plan,
      { headSha: stored.headSha, baseSha: stored.baseSha, draft: stored.draft },
      overlaps,
      (file) => repoFilePath(stored.specRoot, file),
      await appliesInProgress(ctx, repo, touched),
    );
    const comment = await ensureComment(ctx.octokit, {
      owner: repo.owner,
      repo: repo.name,
      issueNumber: pr,
      marker: PLAN_MARKER,
      body,
      known,
    });
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
