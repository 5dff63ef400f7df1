/**
 * The worker role's side of start-up: its Redis connections, the spec load thread, the stores and
 * queues the jobs use, and the five workers (plan, drift, adopt, apply run, apply guest) with their
 * processors wired together. What each job does lives in `src/queue`; how a worker is started and
 * stopped is `workers.ts`; this file only says which pieces each processor gets.
 */
import type { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ApplyJobs } from '../queue/apply/apply-jobs.js';
import { type ApplyRunDeps, applyCommand, createRunProcessor, noticeFailedMerge } from '../queue/apply/apply-run.js';
import { ApplyStore } from '../queue/apply/apply-store.js';
import type { WindowClock } from '../queue/apply/apply-windows.js';
import { createGuestProcessor } from '../queue/apply/apply-worker.js';
import { ClusterWriters } from '../queue/apply/cluster-writers.js';
import { LostRuns } from '../queue/apply/lost-runs.js';
import { rollbackCommand } from '../queue/apply/rollback-command.js';
import { createAdoptProcessor } from '../queue/adopt/adopt-worker.js';
import { CommitSpecsCache } from '../queue/commit-specs.js';
import { DriftScheduler } from '../queue/drift/drift-schedule.js';
import { DriftStore } from '../queue/drift/drift-store.js';
import { createDriftProcessor } from '../queue/drift/drift-worker.js';
import { PlanQueueProducer } from '../queue/enqueue.js';
import { statePrefix } from '../queue/keys.js';
import { NewestHeads } from '../queue/newest-head.js';
import { type PlanTarget, planPullRequest } from '../queue/plan/plan-pr.js';
import { PlanStore } from '../queue/plan/plan-store.js';
import { type CommandHandler, completeFailedPlan, createPlanProcessor } from '../queue/plan/plan-worker.js';
import { RedisSlots } from '../queue/redis-slots.js';
import { type AdoptJobData, QUEUE_NAMES } from '../queue/schema.js';
import { DRIFT_JOB_OPTIONS } from '../queue/drift/drift-schedule.js';
import { SpecLoadThread, type SpecLoadThreadOptions } from '../spec-files/spec-load-thread.js';
import type { Closers } from './closers.js';
import { intervalWords, type ServerConfig } from './config.js';
import type { GitHubClients } from './github-clients.js';
import type { AppMetrics } from './metrics.js';
import { openQueue } from './queues.js';
import { openRedis } from './redis-connections.js';
import { RunningJobs, startWorker, stopWorkers } from './workers.js';

/** What {@link startWorkerRole} wires together. */
interface WorkerRoleOptions {
  config: ServerConfig;
  logger: Logger;
  metrics: AppMetrics;
  clients: GitHubClients;
  closers: Closers;
  /** The spec load thread's budget and its clock (tests run the budget out by hand). */
  specLoads?: Pick<SpecLoadThreadOptions, 'budgetMs' | 'startBudget'> | undefined;
  applyWindows?: ApplyWindowOptions | undefined;
}

/** The clock apply windows are judged by (default the wall clock), and the longest a parked guest waits before it looks again. */
export interface ApplyWindowOptions {
  clock?: WindowClock;
  recheckMs?: number;
}

/** Merge-to-apply's pieces, on connections of their own. */
interface Applies {
  redis: Redis;
  /** Hears apply slot releases. */
  subscriber: Redis;
  store: ApplyStore;
  jobs: ApplyJobs;
  writers: ClusterWriters;
  lost: LostRuns;
}

/** Specs are loaded and validated on a thread of their own, within a time budget: a costly repository must not hold up webhooks and the renewal of job locks. */
function openSpecs({ logger, closers, specLoads }: WorkerRoleOptions): CommitSpecsCache {
  const specLoader = new SpecLoadThread({
    ...specLoads,
    onWorkerFailure: (error) => logger.warn({ err: error }, 'loading specs in the main thread instead of a worker thread'),
  });
  closers.add('spec load thread', () => specLoader.close());
  return new CommitSpecsCache({ load: (files) => specLoader.load(files) });
}

/** Opens merge-to-apply: its connections, queues, store, cluster writers and the watch for lost runs. */
async function openApplies({ config, logger, metrics, clients, closers }: WorkerRoleOptions): Promise<Applies> {
  const redis = await openRedis('applies', config.redisUrl, closers);
  const subscriber = await openRedis('applySlots', config.redisUrl, closers);
  const state = statePrefix(config.redisPrefix);
  const store = new ApplyStore(redis, state);
  const home = { connection: redis, prefix: config.redisPrefix, logger, closers };
  const runQueue: Queue = openQueue(home, QUEUE_NAMES.applyRun, 'apply queue', metrics);
  const guestQueue: Queue = openQueue(home, QUEUE_NAMES.applyGuest, 'apply queue', metrics);
  const jobs = new ApplyJobs(runQueue, guestQueue, {
    attempts: config.apply.attempts,
    backoffMs: config.apply.backoffMs,
    reportIntervalMs: config.apply.reportIntervalMs,
    watchdogMs: Math.max(config.apply.reportIntervalMs * 10, config.jobLockMs * 2),
  });
  const writers = new ClusterWriters({
    ...config.connections,
    onResponse: metrics.pveResponse,
    warn: (message) => logger.warn({ message }, 'cluster connection'),
    logger,
  });
  closers.add('cluster writers', () => writers.close());
  // Runs this process saw unfinished, looked up as often as an unfinished run is reported:
  // one Redis lost (emptied without its append-only file) is reported as such.
  const lost = new LostRuns({ logger, redis, store, github: clients.github, statePrefix: state, deployments: config.apply.deployments });
  const stopLostRuns = lost.start(jobs.settings.watchdogMs);
  closers.add('lost apply watch', async () => stopLostRuns());
  return { redis, subscriber, store, jobs, writers, lost };
}

/** Opens what the worker role needs and starts its workers; resolves once they run. */
export async function startWorkerRole(options: WorkerRoleOptions): Promise<Worker[]> {
  const { config, logger, metrics, closers } = options;
  const { github, appGithub } = options.clients;
  const prefix = config.redisPrefix;
  const state = statePrefix(prefix);
  const connections = { ...config.connections, onResponse: metrics.pveResponse };
  const workerRedis = await openRedis('workers', config.redisUrl, closers);
  const jobRedis = await openRedis('jobs', config.redisUrl, closers);
  const specs = openSpecs(options);
  const home = { connection: jobRedis, prefix, logger, closers };
  const driftStore = new DriftStore(jobRedis, state);
  const driftQueue = openQueue(home, QUEUE_NAMES.drift, 'drift queue', metrics);
  const scheduler = new DriftScheduler(driftQueue, config.driftIntervalMs, (id) => driftStore.forget(id));
  // Workers add plan-queue jobs too: a plan asks for the comments of pull requests it races with to be refreshed.
  const heads = new NewestHeads(jobRedis, state);
  const producer = new PlanQueueProducer(openQueue(home, QUEUE_NAMES.plan, 'plan queue (workers)'), heads);
  const planStore = new PlanStore(jobRedis, state);
  const applies = await openApplies(options);
  const runDeps: ApplyRunDeps = {
    logger,
    redis: applies.redis,
    store: applies.store,
    plans: planStore,
    jobs: applies.jobs,
    github,
    lockMs: config.jobLockMs,
    lost: applies.lost,
    deployments: config.apply.deployments,
    planNow: (octokit, target: PlanTarget, log) =>
      planPullRequest(
        { logger: log, octokit, redis: jobRedis, heads, store: planStore, specs, connections, applies: applies.store },
        target,
      ),
  };
  // `/pve drift` from a writer (checked by the plan worker): a run now, answered where it was asked.
  const driftCommand: CommandHandler = async (job, ctx) => {
    const driftJob = {
      kind: 'drift',
      installationId: job.installationId,
      repo: job.repo,
      trigger: 'command',
      deliveryId: job.deliveryId,
      replyTo: job.pr,
    } as const;
    const jobId = await scheduler.runNow(driftJob, job.deliveryId);
    ctx.logger.info({ driftJob: jobId }, 'drift report enqueued');
  };
  // `/pve adopt` from a writer (checked by the plan worker): the pull request is made in the adopt queue's job.
  const adoptQueue = openQueue(home, QUEUE_NAMES.adopt, 'adopt queue', metrics);
  const adoptCommand: CommandHandler = async (job, ctx) => {
    const adoptJob: AdoptJobData = {
      kind: 'adopt',
      installationId: job.installationId,
      repo: job.repo,
      deliveryId: job.deliveryId,
      issue: job.pr,
      commentId: job.commentId,
      author: job.author,
      args: job.args,
    };
    const jobId = `adopt-${job.deliveryId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    // Retried once after a transient failure: a second attempt moves its own branch and finds its own pull request.
    await adoptQueue.add('adopt', adoptJob, { ...DRIFT_JOB_OPTIONS, backoff: { type: 'fixed', delay: 10_000 }, jobId });
    ctx.logger.info({ adoptJob: jobId }, 'adopt enqueued');
  };

  const running = new RunningJobs();
  const timed: typeof metrics.timed = (queue, processor) => running.counted(metrics.timed(queue, processor));
  // Every worker finds a job whose worker died (its lock expired) within these.
  const base = { connection: workerRedis, prefix, lockDuration: config.jobLockMs, stalledInterval: config.stalledIntervalMs };
  const planProcessor = createPlanProcessor({
    logger,
    redis: jobRedis,
    enqueue: (job, options) => producer.enqueue(job, options),
    heads,
    store: planStore,
    specs,
    github,
    connections,
    applies: applies.store,
    commands: {
      apply: applyCommand(runDeps),
      drift: driftCommand,
      adopt: adoptCommand,
      rollback: rollbackCommand({
        store: applies.store,
        logger,
        writer: (cluster, repository) => applies.writers.get(cluster, repository),
      }),
    },
  });
  const planWorker = startWorker(
    QUEUE_NAMES.plan,
    timed(QUEUE_NAMES.plan, planProcessor),
    { ...base, concurrency: config.workerConcurrency },
    logger,
  );
  planWorker.on('failed', (job, error) => {
    if (job)
      completeFailedPlan({ store: planStore, github, logger }, job, error).catch((err: unknown) =>
        logger.warn({ err, job: job.id }, 'could not complete the check run of a failed plan'),
      );
  });
  const driftProcessor = createDriftProcessor({
    logger,
    redis: jobRedis,
    store: driftStore,
    specs,
    scheduler,
    github,
    appGithub,
    connections,
    schedule: config.driftIntervalMs > 0 ? intervalWords(config.driftIntervalMs) : undefined,
  });
  const driftWorker = startWorker(
    QUEUE_NAMES.drift,
    timed(QUEUE_NAMES.drift, driftProcessor),
    { ...base, concurrency: config.workerConcurrency },
    logger,
  );
  const adoptWorker = startWorker(
    QUEUE_NAMES.adopt,
    timed(QUEUE_NAMES.adopt, createAdoptProcessor({ logger, github, connections })),
    { ...base, concurrency: config.workerConcurrency },
    logger,
  );
  // Merges and reports are short; enough that a slow GitHub holds back no other run's report.
  const runWorker = startWorker(
    QUEUE_NAMES.applyRun,
    timed(QUEUE_NAMES.applyRun, createRunProcessor(runDeps)),
    { ...base, concurrency: 4 },
    logger,
  );
  // A merge whose job gave up before its run started applied nothing: the pull request hears why.
  runWorker.on('failed', (job, error) => {
    if (job)
      noticeFailedMerge(runDeps, job, error).catch((err: unknown) =>
        logger.warn({ err, job: job.id }, 'could not tell the pull request that a merge was not applied'),
      );
  });
  // Aborted when the process stops: guest applies hand their jobs back at once instead of
  // holding the shutdown while they wait out a Proxmox lock.
  const stoppingApplies = new AbortController();
  const guestProcessor = createGuestProcessor({
    logger,
    redis: applies.redis,
    store: applies.store,
    jobs: applies.jobs,
    slots: new RedisSlots(applies.redis, applies.subscriber, {
      prefix: state,
      limits: { cluster: config.apply.clusterLimit, node: config.apply.nodeLimit },
      ttlMs: config.jobLockMs,
    }),
    writer: (cluster, repository) => applies.writers.get(cluster, repository),
    settings: { lockMs: config.jobLockMs, lockWaitMs: config.apply.lockWaitMs, lockPollMs: config.apply.lockPollMs },
    stopping: stoppingApplies.signal,
    ...(options.applyWindows?.clock ? { clock: options.applyWindows.clock } : {}),
    ...(options.applyWindows?.recheckMs !== undefined ? { windowRecheckMs: options.applyWindows.recheckMs } : {}),
    onResult: (status) => {
      if (status !== 'skipped') metrics.apply(status);
    },
  });
  // A worker that died mid-apply is found by the stall check; running its job again is safe
  // (every step re-reads), so a job may stall twice before it counts as failed.
  const guestOptions = { ...base, concurrency: config.apply.concurrency, maxStalledCount: 2 };
  const guestWorker = startWorker(QUEUE_NAMES.applyGuest, timed(QUEUE_NAMES.applyGuest, guestProcessor), guestOptions, logger);
  const workers: Worker[] = [planWorker, driftWorker, adoptWorker, runWorker, guestWorker];

  // The schedules follow the installations: listed now (one job, however many workers start), then kept by events.
  await scheduler.requestSync();
  closers.add('workers', async () => {
    stoppingApplies.abort(new Error('the worker is stopping'));
    await stopWorkers(workers, { running, redis: workerRedis, shutdownTimeoutMs: config.shutdownTimeoutMs, logger });
  });
  return workers;
}
