/**
 * The plan queue's worker: runs the jobs webhook handlers enqueued — plans of pushes, `/pve`
 * commands, GitHub's "Re-run" button, closed pull requests. Job data is parsed back with the
 * queue's schemas first, so a malformed job fails with a clear error instead of half-running.
 * Each job gets the installation's own Octokit (Probot's, with its throttling and retry plugins).
 */
import { type Job, UnrecoverableError } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { helpText } from '../../github/chat-ops.js';
import { completeCheckRun } from '../../github/check-runs.js';
import type { CommandSpec } from '../../github/commands/command.js';
import { findCommand, type ProvidedCommandName } from '../../github/commands/registry.js';
import { commandPermission } from '../../github/permissions.js';
import type { CommitSpecsCache } from '../commit-specs.js';
import { refreshJobId } from '../enqueue.js';
import type { NewestHeads } from '../newest-head.js';
import { forgetClosed, type PlanContext, type PlanTarget, planPullRequest, refreshComment } from './plan-pr.js';
import type { PlanStore } from './plan-store.js';
import { type ClosedJobData, type CommandJobData, type PlanReason, PlanQueueJob, type RerunJobData } from '../schema.js';

/** What the plan worker needs; constructed by the worker role (`src/server/worker-role.ts`). */
interface PlanWorkerDeps {
  logger: Logger;
  redis: Redis;
  heads: NewestHeads;
  store: PlanStore;
  specs: CommitSpecsCache;
  /** The installation's Octokit (`probot.auth(installationId)`). */
  github: (installationId: number) => Promise<ProbotOctokit>;
  connections: PlanContext['connections'];
  /** Adds a job to the plan queue (refreshing other pull requests' comments); absent, nothing is refreshed. */
  enqueue?: (job: PlanQueueJob, options: { jobId: string }) => Promise<unknown>;
  /**
   * The handlers of the registry's `provided` commands, by name (merge-to-apply gives `apply`, the
   * drift report `drift`; `src/github/commands/registry.ts`). Called after the author's permission
   * was checked and the comment reacted to; a command without one is answered with the help.
   */
  commands?: Readonly<Partial<Record<ProvidedCommandName, CommandHandler>>>;
  /** Applies queued or running per guest, so a plan can say an apply is in progress for a guest it touches. */
  applies?: PlanContext['applies'];
}

/** Runs one accepted `/pve` command. */
export type CommandHandler = (job: CommandJobData, ctx: CommandContext) => Promise<void>;

/** What a command handler gets: the plan context and a way to answer on the pull request. */
interface CommandContext extends PlanContext {
  reply(body: string): Promise<void>;
  /** The author's role as GitHub reported it when the permission was checked (`admin`, `write`, …); undefined for a command anyone may run. */
  role?: string;
  /** Plans the pull request's current head again (what `/pve plan` does). */
  replan(reason: PlanReason): Promise<void>;
}

/** Reactions the App answers comments with. */
type Reaction = '+1' | 'eyes' | 'confused';

async function react(octokit: ProbotOctokit, job: CommandJobData, content: Reaction): Promise<void> {
  await octokit.rest.reactions.createForIssueComment({ owner: job.repo.owner, repo: job.repo.name, comment_id: job.commentId, content });
}

/**
 * Plans the pull request's current head as GitHub reports it now (for commands and re-runs, whose
 * payloads do not carry it): records it as the newest head, then plans it. A closed pull request
 * is not planned.
 */
async function planCurrentHead(
  ctx: PlanContext,
  job: CommandJobData | RerunJobData,
  reason: PlanReason,
  attempt?: PlanTarget['attempt'],
): Promise<'closed' | 'planned'> {
  const { data: pr } = await ctx.octokit.rest.pulls.get({ owner: job.repo.owner, repo: job.repo.name, pull_number: job.pr });
  // A merged pull request is planned again too: after a conflict, that plan is what `/pve apply` applies.
  if (pr.state !== 'open' && pr.merged !== true) return 'closed';
  await ctx.heads.record(job.repo.id, job.pr, pr.head.sha, pr.updated_at);
  const target: PlanTarget = {
    repo: job.repo,
    pr: job.pr,
    headSha: pr.head.sha,
    baseSha: pr.base.sha,
    baseRef: pr.base.ref,
    draft: pr.draft === true,
    reason,
    attempt,
  };
  await planPullRequest(ctx, target);
  // Merged, it races with no open pull request for its guests.
  if (pr.merged === true) await ctx.store.removeTouched(job.repo.id, job.pr);
  return 'planned';
}

async function runCommand(deps: PlanWorkerDeps, ctx: PlanContext, job: CommandJobData, attempt: PlanTarget['attempt']): Promise<void> {
  const reply = async (body: string): Promise<void> => {
    await ctx.octokit.rest.issues.createComment({ owner: job.repo.owner, repo: job.repo.name, issue_number: job.pr, body });
  };
  const command = findCommand(job.command);
  let role: string | undefined;
  if (command?.who !== 'anyone') {
    const permission = await commandPermission(ctx.octokit, job.repo, job.author);
    role = permission.role;
    if (!permission.allowed) {
      ctx.logger.info({ author: job.author, role: permission.role }, 'command refused: not a writer');
      await reply(
        `@${job.author} \`/pve ${job.command.replace(/[^\w-]/g, '')}\` was not run: pve-gitops commands need write, maintain or admin ` +
          `permission on this repository, and GitHub reports **${permission.role}** for you.`,
      );
      return;
    }
  }
  const handler = command && handlerOf(deps, command);
  if (!command || !handler) {
    await reply(helpText(job.command));
    return;
  }
  // Accepted: say so at once, before the work that may take a while (a command for anyone is answered at once).
  if (command.who !== 'anyone') await react(ctx.octokit, job, 'eyes');
  const commandContext: CommandContext = {
    ...ctx,
    reply,
    ...(role !== undefined ? { role } : {}),
    replan: async (reason) => {
      if ((await planCurrentHead(ctx, job, reason, attempt)) === 'closed')
        await reply('This pull request is closed: it is not planned any more.');
    },
  };
  await handler(job, commandContext);
}

/** How the worker runs a command of the registry; undefined when the composition root gave it no handler. */
function handlerOf(deps: PlanWorkerDeps, command: CommandSpec): CommandHandler | undefined {
  switch (command.handler) {
    case 'help':
      return (_job, ctx) => ctx.reply(helpText());
    case 'replan':
      return (_job, ctx) => ctx.replan('command');
    case 'provided':
      return deps.commands?.[command.name as ProvidedCommandName];
  }
}

async function closed(ctx: PlanContext, job: ClosedJobData): Promise<void> {
  // A closed pull request no longer races with the others for its guests.
  await forgetClosed(ctx, job);
}

/**
 * The attempt a job runs as: its id names the chain of attempts, which share one check run. A
 * stalled job (its worker died) runs again without counting as a failed attempt; `attemptsStarted`
 * counts it.
 */
function attemptOf(job: Job): NonNullable<PlanTarget['attempt']> {
  return {
    chain: String(job.id),
    number: Math.max(job.attemptsStarted, job.attemptsMade + 1),
    final: job.attemptsMade + 1 >= (job.opts.attempts ?? 1),
  };
}

/**
 * For the worker's `failed` event: a plan job that failed for good without its processor saying
 * so — BullMQ fails a job that stalled more often than it allows (its workers died or froze) without
 * running it again — still completes the check run it left in progress, as a failure saying why.
 */
export async function completeFailedPlan(deps: Pick<PlanWorkerDeps, 'store' | 'github' | 'logger'>, job: Job, error: Error): Promise<void> {
  const parsed = PlanQueueJob.safeParse(job.data);
  if (!parsed.success || !['plan', 'command', 'rerun'].includes(parsed.data.kind)) return;
  if (job.attemptsMade < (job.opts.attempts ?? 1) && !/stalled/i.test(error.message)) return;
  const data = parsed.data;
  const run = await deps.store.getCheckRun(data.repo.id, data.pr, String(job.id));
  if (!run) return;
  const octokit = await deps.github(data.installationId);
  await completeCheckRun(octokit, { owner: data.repo.owner, repo: data.repo.name, headSha: run.headSha }, run.id, {
    conclusion: 'failure',
    title: 'pve-gitops could not finish the plan',
    summary: `The plan stopped: ${error.message}. \`/pve plan\` starts it again.`,
  });
  await deps.store.forgetCheckRun(data.repo.id, data.pr, String(job.id));
  deps.logger.warn({ job: job.id, checkRun: run.id }, 'plan job failed for good: its check run was completed as a failure');
}

/** The processor BullMQ calls for each plan-queue job. */
export function createPlanProcessor(deps: PlanWorkerDeps): (job: Job) => Promise<void> {
  return async (job) => {
    const parsed = PlanQueueJob.safeParse(job.data);
    // Retrying cannot fix a job this build cannot read: fail it at once, saying why.
    if (!parsed.success) throw new UnrecoverableError(`malformed ${job.name} job: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const data = parsed.data;
    const logger = deps.logger.child({
      job: job.id,
      delivery: data.deliveryId,
      kind: data.kind,
      repo: `${data.repo.owner}/${data.repo.name}`,
      pr: data.pr,
    });
    // Dropped without a GitHub client, unless an earlier attempt left a check run to complete (planPullRequest does).
    if (
      data.kind === 'plan' &&
      !(await deps.heads.isNewest(data.repo.id, data.pr, data.headSha)) &&
      (await deps.store.getCheckRun(data.repo.id, data.pr, String(job.id))) === undefined
    ) {
      logger.info({ head: data.headSha }, 'a newer head of this pull request is known: not planned');
      return;
    }
    const ctx: PlanContext = {
      logger,
      octokit: await deps.github(data.installationId),
      redis: deps.redis,
      heads: deps.heads,
      store: deps.store,
      specs: deps.specs,
      connections: deps.connections,
      ...(deps.enqueue
        ? {
            refreshComments: async (prs: readonly number[]) => {
              const enqueue = deps.enqueue!;
              for (const pr of prs) {
                // One waiting refresh per pull request, however many postings ask for it.
                const jobId = refreshJobId(data.repo.id, pr, await deps.store.refreshGeneration(data.repo.id, pr));
                await enqueue(
                  { kind: 'refresh', installationId: data.installationId, repo: data.repo, deliveryId: data.deliveryId, pr },
                  { jobId },
                );
              }
            },
          }
        : {}),
      ...(deps.applies ? { applies: deps.applies } : {}),
    };
    const attempt = attemptOf(job);
    switch (data.kind) {
      case 'plan':
        await planPullRequest(ctx, { ...data, attempt });
        return;
      case 'rerun':
        if ((await planCurrentHead(ctx, data, 'rerequested', attempt)) === 'closed')
          logger.info('re-run of a closed pull request: not planned');
        return;
      case 'command':
        await runCommand(deps, ctx, data, attempt);
        return;
      case 'closed':
        await closed(ctx, data);
        return;
      case 'refresh':
        logger.info({ outcome: await refreshComment(ctx, data) }, 'comment refreshed');
        return;
    }
  };
}
