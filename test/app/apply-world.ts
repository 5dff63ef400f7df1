/**
 * What a merge-to-apply test runs against: the GitHub test double, a `lab` simulator holding the
 * guests the test's specs own, and the App (in this process, or only its web role when workers run
 * as processes of their own), with settings that make waits short: stalled jobs found within
 * seconds, reports a fraction of a second apart, retries quick. Each world has its own Redis key
 * prefix, repository and installation (Probot's throttling groups requests by installation across
 * the process), so tests stand alone.
 */
import type { TestContext } from 'vitest';
import type { SimFixture } from '../../src/pve/sim/schema.js';
import type { ServerRole } from '../../src/server/config.js';
import { type ApplyCheckRun, type ApplyComment, expectApplyCheckRun, expectApplyComment, mergeEvent, storePlan } from './apply-flow.js';
import type { TestApp } from './harness.js';
import { type CheckRunBody, expectArchive, expectCheckRun, expectNewComment } from './plan-flow.js';
import { newSha, type RepoFiles } from './spec-repo.js';
import { openPullRequest, startWorld, type World, type WorldOptions } from './world.js';

/** Settings that keep apply tests short (see README "Merge to apply" for what each does). */
export const FAST_APPLY_ENV: Record<string, string> = {
  JOB_LOCK_MS: '2000',
  JOB_STALLED_INTERVAL_MS: '1000',
  APPLY_REPORT_INTERVAL_MS: '150',
  APPLY_BACKOFF_MS: '200',
  APPLY_ATTEMPTS: '3',
  APPLY_LOCK_POLL_MS: '50',
  APPLY_CONCURRENCY: '8',
  WORKER_CONCURRENCY: '2',
};

/** A fixture guest owned by the specs (owner tag), 2 GB and 2 cores, as `vmDoc` describes it. */
export function ownedGuest(vmid: number, name: string, node = 'pve-01', config: Record<string, string | number> = {}) {
  return {
    vmid,
    type: 'qemu',
    node,
    config: {
      name,
      memory: 2048,
      cores: 2,
      net0: `virtio=BC:24:11:00:${String(vmid % 100).padStart(2, '0')}:01,bridge=vmbr0`,
      tags: 'pve-gitops',
      ...config,
    },
  };
}

/** A started apply test world. */
export interface ApplyWorld extends World {
  redisUrl: string;
  /** Stores the plan of pull request `pr` at `headSha` as its plan job would (see {@link storePlan}). */
  storePlan(options: { pr: number; headSha: string; baseSha: string; head: RepoFiles; base: RepoFiles }): Promise<void>;
  /** Delivers the merge of pull request `number` into the default branch. */
  merge(options: Omit<Parameters<typeof mergeEvent>[0], 'installationId' | 'repo'>): ReturnType<TestApp['deliver']>;
}

/** Starts a world whose `lab` simulator holds `guests`. */
export async function startApplyWorld(options: {
  redisUrl: string;
  guests: SimFixture['guests'];
  /** Resource pools of the simulator (default: none configured, any name accepted). */
  pools?: SimFixture['pools'];
  role?: ServerRole;
  env?: Record<string, string | undefined>;
  taskMs?: number;
  /** The clock apply windows are judged by, and how often a parked guest looks again. */
  applyWindows?: WorldOptions['applyWindows'];
}): Promise<ApplyWorld> {
  const world = await startWorld({
    redisUrl: options.redisUrl,
    role: options.role,
    clusters: {
      lab: { fixture: { guests: options.guests, ...(options.pools ? { pools: options.pools } : {}) }, taskMs: options.taskMs ?? 20 },
    },
    env: { ...FAST_APPLY_ENV, ...options.env },
    ...(options.applyWindows ? { applyWindows: options.applyWindows } : {}),
  });
  const { app, clusters, repo, installationId } = world;
  return {
    ...world,
    redisUrl: options.redisUrl,
    storePlan: (plan) => storePlan({ redisUrl: options.redisUrl, prefix: app.prefix, sims: clusters.sims, repo, ...plan }),
    merge: (merge) => app.deliver({ event: 'pull_request', payload: mergeEvent({ installationId, repo, ...merge }) }),
  };
}

/**
 * For `afterEach`: when the test failed, prints the last 40 lines the world's App logged at warn
 * and above, the why of most failures.
 */
export function showAppWarningsOnFailure(context: TestContext, world: World | undefined): void {
  if (context.task.result?.state === 'fail' && world) {
    const lines = world.app
      .logs()
      .split('\n')
      .filter((line) => /"level":(40|50|60)/.test(line));
    console.error(lines.slice(-40).join('\n'));
  }
}

/** What {@link mergeReviewed} merged, and its apply's expectations. */
export interface ReviewedMerge {
  baseSha: string;
  headSha: string;
  mergeSha: string;
  check: ApplyCheckRun;
  comment: ApplyComment;
}

/**
 * A reviewed pull request merged: `head` against `base` stored as its posted plan, its apply's
 * check run (with one deployment per cluster of `deployments`, default `lab`) and comment
 * expected with ids `checkId` and `commentId`, `beforeMerge` run (an operator's edit between
 * review and merge), then the merge delivered. Resolves once the merge was delivered.
 */
export async function mergeReviewed(
  w: ApplyWorld,
  options: {
    pr: number;
    base: RepoFiles;
    head: RepoFiles;
    checkId: number;
    commentId: number;
    deployments?: readonly string[];
    beforeMerge?: () => void | Promise<void>;
  },
): Promise<ReviewedMerge> {
  const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
  await w.storePlan({ baseSha, base: options.base, pr: options.pr, headSha, head: options.head });
  await options.beforeMerge?.();
  const check = expectApplyCheckRun(w.github, w.repo, {
    mergeSha,
    id: options.checkId,
    ...(options.deployments !== undefined ? { deployments: options.deployments } : {}),
  });
  const comment = expectApplyComment(w.github, w.repo, { pr: options.pr, id: options.commentId });
  await w.merge({ number: options.pr, headSha, baseSha, mergeSha });
  return { baseSha, headSha, mergeSha, check, comment };
}

/**
 * Pull request `pr` opened and planned by the App: both commits' archives read, its plan check
 * run (`checkId`) and first plan comment (`commentId`) expected; resolves with the check run's
 * last body and the comment once the plan job is done.
 */
export async function planOpened(
  w: World,
  options: { pr: number; baseSha: string; base: RepoFiles; headSha: string; head: RepoFiles; checkId: number; commentId: number },
): Promise<{ check: CheckRunBody; comment: string }> {
  const { github, repo } = w;
  const { pr, baseSha, headSha } = options;
  await expectArchive(github, repo, baseSha, options.base);
  await expectArchive(github, repo, headSha, options.head);
  const planCheck = expectCheckRun(github, repo, { headSha, pr, id: options.checkId });
  const planComment = expectNewComment(github, repo, pr, options.commentId);
  await w.app.jobDone('plan', await openPullRequest(w, pr, headSha, baseSha));
  return { check: await planCheck.result(), comment: await planComment.body() };
}
