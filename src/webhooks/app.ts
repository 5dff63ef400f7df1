/**
 * The Probot app: thin webhook handlers that filter, record the pull request's newest head and
 * enqueue — in milliseconds, one Redis round trip. They never talk to Proxmox, never read
 * the specs and never write to GitHub; permission checks, planning and posting happen in the
 * worker (`src/queue/plan/plan-worker.ts`). A handler that cannot enqueue throws: Probot answers 500
 * and GitHub's redelivery can try again. Every other event the App receives is answered 200 and
 * ignored (Probot does that for events without a handler).
 */
import type { ApplicationFunction, Context, Probot } from 'probot';
import { type DriftProducer, type InstalledRepo, repoFromFullName } from '../queue/drift/drift-schedule.js';
import type { JobProducer } from '../queue/enqueue.js';
import type { MergeJobData, PlanReason, RepoRef } from '../queue/schema.js';
import { parseCommands } from '../github/chat-ops.js';
import { PLAN_CHECK_NAME } from '../github/check-names.js';
import { findCommand } from '../github/commands/registry.js';

/** What the handlers need: the producer, and the App's own id to recognise its check runs. */
interface AppDeps {
  producer: JobProducer;
  appId: number;
  /** The drift schedules, kept in line with the installations' repositories. */
  drift?: DriftProducer;
  /** Merge-to-apply's producer: a merge into the default branch enqueues its apply (`src/queue/apply/apply-run.ts`). */
  applies?: MergeProducer;
  /** Told of each delivery that added a job or changed the drift schedules (the deliveries metric's outcome). */
  enqueued?: (deliveryId: string) => void;
}

/** Adds the job that applies a merged pull request; throws when Redis cannot take it. */
interface MergeProducer {
  enqueueMerge(job: MergeJobData): Promise<string>;
}

interface PayloadRepo {
  id: number;
  name: string;
  owner: { login: string };
}

function repoRef(repository: PayloadRepo): RepoRef {
  return { id: repository.id, owner: repository.owner.login, name: repository.name };
}

/** Pull request events that plan the head (and `edited`, when the base changed). */
const PLAN_EVENTS = ['pull_request.opened', 'pull_request.synchronize', 'pull_request.reopened', 'pull_request.ready_for_review'] as const;

async function onPullRequest(deps: AppDeps, context: Context<(typeof PLAN_EVENTS)[number] | 'pull_request.edited'>): Promise<void> {
  const { payload } = context;
  // An edit plans only when it changed the base: a plan made against another branch is never applied.
  const retargeted = payload.action === 'edited' && payload.changes.base !== undefined;
  if (payload.action === 'edited' && !retargeted) return;
  const installationId = payload.installation?.id;
  if (installationId === undefined) return;
  const pr = payload.pull_request;
  const log = { pr: pr.number, head: pr.head.sha };
  // One Redis round trip records the head and adds the job (skipped when a newer head is known);
  // the job holds the few fields it needs, not the payload.
  const jobId = await deps.producer.enqueueIfNewest(
    {
      kind: 'plan',
      installationId,
      repo: repoRef(payload.repository),
      deliveryId: context.id,
      pr: pr.number,
      headSha: pr.head.sha,
      baseSha: pr.base.sha,
      baseRef: pr.base.ref,
      draft: pr.draft === true,
      reason: retargeted ? 'retargeted' : (payload.action as PlanReason),
      // A deleted fork leaves `head.repo` null: still not this repository.
      ...(pr.head.repo?.id !== payload.repository.id ? { fork: true } : {}),
    },
    pr.updated_at,
  );
  if (jobId === undefined) {
    context.log.info(log, 'a newer head of this pull request is known: not planned');
    return;
  }
  deps.enqueued?.(context.id);
  context.log.info({ ...log, jobId }, 'plan enqueued');
}

async function onPullRequestClosed(deps: AppDeps, context: Context<'pull_request.closed'>): Promise<void> {
  const { payload } = context;
  const installationId = payload.installation?.id;
  if (installationId === undefined) return;
  const pr = payload.pull_request;
  await deps.producer.enqueue({
    kind: 'closed',
    installationId,
    repo: repoRef(payload.repository),
    deliveryId: context.id,
    pr: pr.number,
    merged: pr.merged === true,
    headSha: pr.head.sha,
    ...(pr.merged === true && pr.merge_commit_sha ? { mergeSha: pr.merge_commit_sha } : {}),
  });
  deps.enqueued?.(context.id);
  // Only a merge into the default branch is applied: the specs on it are the desired state.
  if (!deps.applies || pr.merged !== true || !pr.merge_commit_sha || !pr.merged_at) return;
  if (pr.base.ref !== payload.repository.default_branch) return;
  const jobId = await deps.applies.enqueueMerge({
    kind: 'merge',
    installationId,
    repo: repoRef(payload.repository),
    deliveryId: context.id,
    pr: pr.number,
    headSha: pr.head.sha,
    baseSha: pr.base.sha,
    baseRef: pr.base.ref,
    mergeSha: pr.merge_commit_sha,
    mergedAt: pr.merged_at,
  });
  deps.enqueued?.(context.id);
  context.log.info({ pr: pr.number, merge: pr.merge_commit_sha, jobId }, 'apply of the merge enqueued');
}

async function onIssueComment(deps: AppDeps, context: Context<'issue_comment.created'>): Promise<void> {
  const { payload } = context;
  const installationId = payload.installation?.id;
  // Comments by bots (the App's own replies included) are not commands; on issues only those the registry allows there are.
  if (installationId === undefined) return;
  if (payload.comment.user?.type === 'Bot' || payload.sender.type === 'Bot') return;
  const [command] = parseCommands(payload.comment.body ?? '');
  if (!command) return;
  // On a pull request every command is enqueued (an unknown one is answered with the help); the
  // worker, which reads GitHub's current state, tells open from merged.
  if (!payload.issue.pull_request && !findCommand(command.name)?.where.includes('issue')) return;
  const jobId = await deps.producer.enqueue({
    kind: 'command',
    installationId,
    repo: repoRef(payload.repository),
    deliveryId: context.id,
    pr: payload.issue.number,
    commentId: payload.comment.id,
    author: payload.comment.user?.login ?? payload.sender.login,
    command: command.name,
    args: command.args,
  });
  deps.enqueued?.(context.id);
  context.log.info({ pr: payload.issue.number, command: command.name, jobId }, 'command enqueued');
}

async function onCheckRunRerequested(deps: AppDeps, context: Context<'check_run.rerequested'>): Promise<void> {
  const { payload } = context;
  const installationId = payload.installation?.id;
  const run = payload.check_run;
  if (installationId === undefined || run.name !== PLAN_CHECK_NAME || run.app?.id !== deps.appId) return;
  // The App writes the pull request number into external_id: check runs of pull requests from
  // forks list no pull requests.
  const pr = Number.parseInt(run.external_id ?? '', 10) || run.pull_requests[0]?.number;
  if (pr === undefined || !(pr > 0)) return;
  await deps.producer.enqueue({
    kind: 'rerun',
    installationId,
    repo: repoRef(payload.repository),
    deliveryId: context.id,
    pr,
    checkRunId: run.id,
    headSha: run.head_sha,
  });
  deps.enqueued?.(context.id);
}

/** Repositories of an installation payload, as the drift schedules take them. */
function installedRepos(installationId: number, repos: readonly { id: number; full_name: string }[] | undefined): InstalledRepo[] {
  return (repos ?? []).flatMap((r) => {
    const repo = repoFromFullName(r);
    return repo ? [{ installationId, repo }] : [];
  });
}

/**
 * The App installed, removed, suspended or given other repositories: the drift schedules follow.
 * GitHub sends these events to every App without a subscription.
 */
async function onInstallation(deps: AppDeps, context: Context<'installation' | 'installation_repositories'>): Promise<void> {
  const drift = deps.drift;
  if (!drift) return;
  const { payload } = context;
  const id = payload.installation.id;
  if (context.name === 'installation_repositories') {
    const p = payload as Context<'installation_repositories'>['payload'];
    await drift.schedule(installedRepos(id, p.repositories_added));
    await drift.unschedule(p.repositories_removed.flatMap((r) => (r.id === undefined ? [] : [r.id])));
  } else {
    const p = payload as Context<'installation'>['payload'];
    if (p.action === 'created') await drift.schedule(installedRepos(id, p.repositories));
    else if (p.action === 'deleted' || p.action === 'suspend') await drift.unscheduleInstallation(id);
    else if (p.action === 'unsuspend') await drift.requestSync();
    else return;
  }
  deps.enqueued?.(context.id);
  context.log.info({ installation: id, action: payload.action }, 'drift schedules updated');
}

/** The App: registers its webhook handlers on a Probot instance. The one default export of the project. */
export default function createApp(deps: AppDeps): ApplicationFunction {
  return (app: Probot) => {
    app.on([...PLAN_EVENTS, 'pull_request.edited'], (context) => onPullRequest(deps, context));
    app.on('pull_request.closed', (context) => onPullRequestClosed(deps, context));
    app.on('issue_comment.created', (context) => onIssueComment(deps, context));
    app.on('check_run.rerequested', (context) => onCheckRunRerequested(deps, context));
    app.on(['installation', 'installation_repositories'], (context) => onInstallation(deps, context));
  };
}
