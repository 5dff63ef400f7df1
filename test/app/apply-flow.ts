/**
 * Merge-to-apply in App tests: the GitHub requests of an apply (its check run on the merge commit,
 * its sticky comment) as expectations on the test double that record every body sent — how many
 * edits a debounced comment gets depends on timing, what it finally says does not — plus a plan
 * stored for a pull request head exactly as the plan job stores it (planned against the simulator
 * by the same planner), and a merge delivery.
 */
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import type { SpecSet } from '../../src/core/model.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { statePrefix } from '../../src/queue/keys.js';
import { PlanStore } from '../../src/queue/plan/plan-store.js';
import { bodyHash } from '../../src/github/sticky-comment.js';
import { QUEUE_NAMES } from '../../src/queue/schema.js';
import { type CheckRunBody, expectArchive } from './plan-flow.js';
import { examplePayload, type Payload, pullRequestEvent, type TestRepo } from './deliveries.js';
import type { Expectation, GitHubDouble, RecordedRequest } from './github-double.js';
import type { RepoFiles } from './spec-repo.js';

const APPLY_MARKER = '<!-- pve-gitops:apply -->';

/** The default branch of the repository in the example payloads (what pull requests target unless a test says otherwise). */
export const EXAMPLE_DEFAULT_BRANCH: string = examplePayload('pull_request', 'synchronize').repository.default_branch;

/** Resolves when a recorded body satisfies a predicate. */
class Bodies<T> {
  readonly all: T[] = [];
  private waiters: { test: (body: T) => boolean; resolve: (body: T) => void }[] = [];

  add(body: T): void {
    this.all.push(body);
    this.waiters = this.waiters.filter((w) => {
      if (!w.test(body)) return true;
      w.resolve(body);
      return false;
    });
  }

  /** The first body (sent already or to come) for which `test` holds. */
  until(test: (body: T) => boolean): Promise<T> {
    const found = this.all.find(test);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve) => this.waiters.push({ test, resolve }));
  }

  last(): T | undefined {
    return this.all[this.all.length - 1];
  }
}

/** A deployment status the App posted (`POST …/deployments/{id}/statuses`). */
export interface DeploymentStatusBody {
  state: string;
  description?: string;
  environment?: string;
}

/** Deployment states that end a deployment as a run leaves it. */
const FINAL_DEPLOYMENT_STATES: ReadonlySet<string> = new Set(['success', 'failure', 'error']);

/** The `pve-gitops/apply` check run of one run: created on the merge commit, updated, completed. */
export interface ApplyCheckRun {
  bodies: Bodies<CheckRunBody>;
  /**
   * The body that completed it (created completed, or updated to completed), once every expected
   * deployment has its final status too (they follow the check run in the same report).
   */
  completed: Promise<CheckRunBody>;
  /** The statuses of each expected cluster's deployment, in the order posted. */
  deployments: Map<string, Bodies<DeploymentStatusBody>>;
}

/**
 * Expects one apply check run on `mergeSha` (answered with `id`) and any number of updates to it;
 * and, as every run that applies something has (README "Deployments"), one GitHub deployment per
 * cluster of `deployments` (default `lab`; `[]` for a notice, or an App without deployments) on
 * the merge commit, with any number of statuses. Deployment `i` is answered with id `id * 100 + i`.
 */
export function expectApplyCheckRun(
  github: GitHubDouble,
  repo: TestRepo,
  options: { mergeSha: string; id: number; deployments?: readonly string[] },
): ApplyCheckRun {
  const bodies = new Bodies<CheckRunBody>();
  const record = (request: RecordedRequest): void => bodies.add(request.body as CheckRunBody);
  github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/check-runs`,
    body: { head_sha: options.mergeSha, name: 'pve-gitops/apply' },
    reply: (request) => {
      record(request);
      return { status: 201, json: { id: options.id, html_url: `https://github.example/checks/${options.id}` } };
    },
  });
  github.expect({
    method: 'PATCH',
    path: `/repos/${repo.owner}/${repo.name}/check-runs/${options.id}`,
    times: 'any',
    reply: (request) => {
      record(request);
      return { json: { id: options.id } };
    },
  });
  const deployments = new Map<string, Bodies<DeploymentStatusBody>>();
  for (const [i, cluster] of (options.deployments ?? ['lab']).entries()) {
    const deploymentId = options.id * 100 + i;
    const statuses = new Bodies<DeploymentStatusBody>();
    deployments.set(cluster, statuses);
    github.expect({
      method: 'POST',
      path: `/repos/${repo.owner}/${repo.name}/deployments`,
      body: { ref: options.mergeSha, environment: cluster, auto_merge: false, required_contexts: [] },
      reply: { status: 201, json: { id: deploymentId } },
    });
    github.expect({
      method: 'POST',
      path: `/repos/${repo.owner}/${repo.name}/deployments/${deploymentId}/statuses`,
      body: { environment: cluster },
      times: 'any',
      reply: (request) => {
        statuses.add(request.body as DeploymentStatusBody);
        return { status: 201, json: { id: statuses.all.length } };
      },
    });
  }
  const ended = [...deployments.values()].map((statuses) => statuses.until((body) => FINAL_DEPLOYMENT_STATES.has(body.state)));
  const completed = bodies.until((body) => body.status === 'completed');
  return { bodies, completed: Promise.all([completed, ...ended]).then(([body]) => body), deployments };
}

/** The sticky apply comment of a pull request. */
export interface ApplyComment {
  bodies: Bodies<string>;
  /** The first body (sent or to come) matching. */
  until(test: (body: string) => boolean): Promise<string>;
  last(): string;
}

/**
 * Expects the apply comment of pull request `pr`: found missing and created, then edited any
 * number of times (later runs of the pull request edit the same comment: keep using this one).
 */
export function expectApplyComment(github: GitHubDouble, repo: TestRepo, options: { pr: number; id: number }): ApplyComment {
  const bodies = new Bodies<string>();
  const record = (request: RecordedRequest): void => bodies.add(String((request.body as { body?: string }).body));
  github.expect({ method: 'GET', path: `/repos/${repo.owner}/${repo.name}/issues/${options.pr}/comments`, reply: { json: [] } });
  github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/issues/${options.pr}/comments`,
    body: (body: { body?: string }) => body.body?.startsWith(APPLY_MARKER),
    reply: (request) => {
      record(request);
      return { status: 201, json: { id: options.id } };
    },
  });
  github.expect({
    method: 'PATCH',
    path: `/repos/${repo.owner}/${repo.name}/issues/comments/${options.id}`,
    body: (body: { body?: string }) => body.body?.startsWith(APPLY_MARKER),
    times: 'any',
    reply: (request) => {
      record(request);
      return { json: { id: options.id } };
    },
  });
  return { bodies, until: (test) => bodies.until(test), last: () => bodies.last() ?? '' };
}

/** A finished apply comment: no guest in progress any more. */
export function finishedComment(body: string): boolean {
  return !body.includes('in progress');
}

/** The specs of a repository's files, failing the test on any spec error. */
export function specSet(files: RepoFiles): SpecSet {
  const loaded = loadSpecs(
    Object.entries(files)
      .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
      .map(([path, text]) => ({ path, text })),
  );
  if (loaded.errors.length > 0) throw new Error(loaded.errors.map((e) => `${e.file}:${e.line}: ${e.message}`).join('\n'));
  return loaded.specs;
}

/**
 * Stores the plan of a pull request head as the plan job does once its comment was posted: head
 * against base, read from the simulators with their read-only tokens, kept with the head's specs
 * under the App's prefix as the pull request's posted plan, planned against `baseRef` (default: the
 * default branch of the example payloads, which {@link mergeEvent} merges into).
 */
export async function storePlan(options: {
  redisUrl: string;
  prefix: string;
  sims: Record<string, RunningSimulator>;
  repo: TestRepo;
  pr: number;
  headSha: string;
  baseSha: string;
  head: RepoFiles;
  base: RepoFiles;
  baseRef?: string;
  /** When its comment showed it, by GitHub's clock (default: before every merge a test makes). */
  shownAt?: string;
}): Promise<void> {
  const head = specSet(options.head);
  const base = specSet(options.base);
  const clients = Object.entries(options.sims).map(
    ([name, sim]) => [name, new PveClient({ cluster: name, url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 })] as const,
  );
  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 3 });
  try {
    const readers = Object.fromEntries(clients.map(([name, client]) => [name, new PveClusterAdapter(client)]));
    const plan = await runPlan({ head, base, readers, ref: options.headSha });
    const planned = new Set(plan.guests.map((g) => `${g.cluster}/${g.vmid}`));
    await new PlanStore(redis, statePrefix(options.prefix)).savePostedPlan(
      {
        repo: options.repo,
        pr: options.pr,
        headSha: options.headSha,
        baseSha: options.baseSha,
        baseRef: options.baseRef ?? EXAMPLE_DEFAULT_BRANCH,
        specRoot: '',
        draft: false,
        shownAt: options.shownAt ?? '2020-01-01T00:00:00Z',
        plan,
        specs: { clusters: head.clusters, guests: head.guests.filter((g) => planned.has(`${g.cluster}/${g.vmid}`)) },
      },
      bodyHash(`stored by a test for ${options.headSha}`),
    );
  } finally {
    redis.disconnect();
    await Promise.all(clients.map(([, client]) => client.close()));
  }
}

/** A `pull_request.closed` delivery of a merge into the default branch. */
export function mergeEvent(options: {
  installationId: number;
  repo: TestRepo;
  number: number;
  headSha: string;
  baseSha: string;
  mergeSha: string;
  /** ISO; default now. The order of merges. */
  mergedAt?: string;
}): Payload {
  const payload = pullRequestEvent({
    action: 'closed',
    installationId: options.installationId,
    repo: options.repo,
    number: options.number,
    headSha: options.headSha,
    baseSha: options.baseSha,
    merged: true,
    mergeSha: options.mergeSha,
  });
  payload.pull_request.merged_at = options.mergedAt ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  payload.pull_request.base.ref = payload.repository.default_branch;
  return payload;
}

/** The apply queues of an App, looked into by its Redis prefix. */
export interface ApplyQueues {
  /** Resolves once no merge job is waiting or running (each one there now has finished, completed or failed). */
  mergesSettled(): Promise<void>;
  /** Ids of every guest job in any state. */
  guestJobIds(): Promise<string[]>;
  /** Removes the completed merge jobs (what BullMQ does a day after they completed). */
  forgetCompletedMerges(): Promise<void>;
  /**
   * Starts hearing guest jobs moved to delayed (a retry's backoff, a park outside a window);
   * `next()` resolves with the id of each in turn, `promote` runs one now instead of at its time.
   */
  watchDelayedGuests(): Promise<{ next(): Promise<string>; promote(jobId: string): Promise<void> }>;
  close(): Promise<void>;
}

/** An {@link ApplyQueues} for the App with Redis prefix `prefix`. */
export function applyQueues(redisUrl: string, prefix: string): ApplyQueues {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const runQueue = new Queue(QUEUE_NAMES.applyRun, { connection, prefix });
  const guestQueue = new Queue(QUEUE_NAMES.applyGuest, { connection, prefix });
  let events: QueueEvents | undefined;
  let guestEvents: QueueEvents | undefined;
  return {
    async mergesSettled() {
      events ??= new QueueEvents(QUEUE_NAMES.applyRun, { connection: { url: redisUrl }, prefix });
      await events.waitUntilReady();
      const pending = (await runQueue.getJobs(['waiting', 'active', 'prioritized', 'delayed'])).filter((job) => job.name === 'merge');
      await Promise.all(pending.map((job) => job.waitUntilFinished(events!).catch(() => undefined)));
    },
    async guestJobIds() {
      const jobs = await guestQueue.getJobs(['active', 'waiting', 'delayed', 'completed', 'failed', 'prioritized']);
      return jobs.map((job) => String(job.id)).sort();
    },
    async forgetCompletedMerges() {
      for (const job of await runQueue.getJobs(['completed'])) if (job.name === 'merge') await job.remove();
    },
    async watchDelayedGuests() {
      guestEvents ??= new QueueEvents(QUEUE_NAMES.applyGuest, { connection: { url: redisUrl }, prefix });
      await guestEvents.waitUntilReady();
      const delayed = new Bodies<string>();
      guestEvents.on('delayed', ({ jobId }) => delayed.add(jobId));
      let taken = 0;
      return {
        next: () => {
          const index = taken++;
          return delayed.until(() => delayed.all.length > index).then(() => delayed.all[index]!);
        },
        async promote(jobId) {
          const job = await guestQueue.getJob(jobId);
          if (!job) throw new Error(`no guest job ${jobId}`);
          await job.promote();
        },
      };
    },
    async close() {
      await events?.close();
      await guestEvents?.close();
      await runQueue.close();
      await guestQueue.close();
      connection.disconnect();
    },
  };
}

/**
 * GitHub's answer to `GET /repos/{o}/{r}/pulls/{n}` for a merged (or open) pull request into
 * the examples' default branch; `times` as the double takes it (default once).
 */
export function pullAnswer(
  repo: TestRepo,
  pr: number,
  shas: { headSha: string; baseSha: string; mergeSha?: string },
  times?: Expectation['times'],
): Expectation {
  return {
    method: 'GET',
    path: `/repos/${repo.owner}/${repo.name}/pulls/${pr}`,
    ...(times !== undefined ? { times } : {}),
    reply: {
      json: {
        number: pr,
        state: shas.mergeSha ? 'closed' : 'open',
        merged: shas.mergeSha !== undefined,
        merge_commit_sha: shas.mergeSha ?? null,
        draft: false,
        updated_at: '2030-01-01T00:00:09Z',
        head: { sha: shas.headSha },
        base: { sha: shas.baseSha, ref: EXAMPLE_DEFAULT_BRANCH, repo: { default_branch: EXAMPLE_DEFAULT_BRANCH } },
      },
    },
  };
}

/**
 * Expects `/pve apply`'s look at the default branch: its head commit asked (answered `tip`)
 * and its archive read (`files`), unless this worker loaded that commit before.
 */
export async function expectDefaultBranch(github: GitHubDouble, repo: TestRepo, tip: string, files: RepoFiles): Promise<void> {
  github.expect({
    method: 'GET',
    path: `/repos/${repo.owner}/${repo.name}/branches/${EXAMPLE_DEFAULT_BRANCH}`,
    reply: { json: { name: EXAMPLE_DEFAULT_BRANCH, commit: { sha: tip }, protected: false } },
  });
  await expectArchive(github, repo, tip, files);
}
