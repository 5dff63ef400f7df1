/**
 * The App's composition root: the one place that constructs Redis connections, the Probot
 * instance, queues, workers and the HTTP server, and closes them again. `role` decides what runs
 * in this process — `web` answers webhooks and enqueues, `worker` runs jobs, `all` both — so the
 * two scale out as separate replicas sharing one Redis.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AddressInfo } from 'node:net';
import { Queue, Worker } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { createNodeMiddleware, Probot } from 'probot';
import createApp from '../webhooks/app.js';
import { createLogger } from '../logger.js';
import { PlanQueueProducer } from '../queue/enqueue.js';
import { statePrefix } from '../queue/keys.js';
import { NewestHeads } from '../queue/newest-head.js';
import { CommitSpecsCache } from '../queue/commit-specs.js';
import { ApplyJobs, enqueueMerge } from '../queue/apply/apply-jobs.js';
import { LostRuns } from '../queue/apply/lost-runs.js';
import { applyCommand, createRunProcessor, noticeFailedMerge } from '../queue/apply/apply-run.js';
import { ApplyStore } from '../queue/apply/apply-store.js';
import { createGuestProcessor } from '../queue/apply/apply-worker.js';
import { ClusterWriters } from '../queue/apply/cluster-writers.js';
import { planPullRequest, type PlanTarget } from '../queue/plan/plan-pr.js';
import { completeFailedPlan, createPlanProcessor } from '../queue/plan/plan-worker.js';
import { PlanStore } from '../queue/plan/plan-store.js';
import { RedisSlots } from '../queue/redis-slots.js';
import { type MergeJobData, QUEUE_NAMES } from '../queue/schema.js';
import { DriftScheduler, type DriftProducer } from '../queue/drift/drift-schedule.js';
import { DriftStore } from '../queue/drift/drift-store.js';
import { createDriftProcessor } from '../queue/drift/drift-worker.js';
import { intervalWords, type ServerConfig, type ServerRole } from './config.js';
import { createHttpServer, type HttpRoute, type Readiness } from './http.js';
import { AppMetrics, createMetricsServer, eventLabel } from './metrics.js';
import { createWebhookGate } from './webhook-gate.js';
import { SpecLoadThread, type SpecLoadThreadOptions } from '../spec-files/spec-load-thread.js';

/** Options of {@link startServer}. */
export interface StartServerOptions {
  config: ServerConfig;
  role?: ServerRole;
  /** The process logger; default a JSON logger on stderr at the configured level. */
  logger?: Logger;
  /** More `GET` routes on the HTTP server (by path). */
  routes?: Readonly<Record<string, HttpRoute>>;
  /** The spec load thread's budget and its clock (tests run the budget out by hand). */
  specLoads?: Pick<SpecLoadThreadOptions, 'budgetMs' | 'startBudget'>;
}

/** A started App process. */
export interface RunningServer {
  /** `http://host:port` the process listens on. */
  url: string;
  role: ServerRole;
  logger: Logger;
  /** The process's metrics (the apply worker counts applies here). */
  metrics: AppMetrics;
  /** `http://host:port` of the metrics server when METRICS_PORT is set. */
  metricsUrl?: string | undefined;
  readiness(): Promise<Readiness>;
  /**
   * Stops taking webhooks (readiness fails at once), lets running jobs finish for up to the
   * configured shutdown timeout and hands back the rest (another worker picks them up), then
   * closes Redis. Idempotent; every step is attempted.
   */
  close(): Promise<void>;
}

/** The App could not start (Redis unreachable, port taken); the message says which and why. */
export class ServerStartError extends Error {
  override name = 'ServerStartError';
}

/** Redis options for connections whose commands must fail fast rather than queue while Redis is down. */
const FAIL_FAST: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  connectTimeout: 5000,
  lazyConnect: true,
};

/** Resolves `promise`, or undefined after `ms` (the timer does not hold the process). */
function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** Quits a live connection (bounded: a reply may never come) and drops it in every state. Idempotent. */
async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready')
    await within(
      redis.quit().catch(() => undefined),
      1000,
    );
  redis.disconnect();
}

async function connectRedis(url: string, options: RedisOptions, what: string): Promise<Redis> {
  const redis = new Redis(url, { ...options, lazyConnect: true });
  // ioredis reports connection trouble as events; readiness reports it, the log need not repeat it per retry.
  let lastError: Error | undefined;
  redis.on('error', (error: Error) => (lastError = error));
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    // ioredis messages name host and port, never the password of the URL.
    throw new ServerStartError(`cannot connect to Redis (REDIS_URL) for ${what}: ${(lastError ?? (error as Error)).message}`);
  }
  return redis;
}

/** `http://host:port` of a listening server, loopback for a wildcard address. */
function listeningUrl(address: AddressInfo): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host === '[::]' || host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`;
}

/** Starts the App in this process. */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config } = options;
  const role = options.role ?? 'all';
  const web = role !== 'worker';
  const worker = role !== 'web';
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  const prefix = config.redisPrefix;
  const closers: { what: string; close: () => Promise<unknown> }[] = [];
  let stopping = false;

  const closeAll = async (): Promise<void> => {
    for (const { what, close } of closers.reverse()) {
      try {
        await close();
      } catch (error) {
        logger.warn({ err: error, what }, 'closing failed');
      }
    }
    closers.length = 0;
  };

  try {
    // The connection handlers and readiness use: fails fast, so a webhook arriving while Redis is
    // down is answered 500 at once (GitHub redelivers) instead of waiting for a reconnect.
    const redis = await connectRedis(config.redisUrl, FAIL_FAST, 'the App state');
    closers.push({ what: 'redis', close: () => closeRedis(redis) });
    const heads = new NewestHeads(redis, statePrefix(prefix));
    const metrics = new AppMetrics();
    metrics.watchDrift(() => new DriftStore(redis, statePrefix(prefix)).drifted());

    const probot = new Probot({
      appId: config.appId,
      privateKey: config.privateKey,
      // A worker-only process receives no webhooks; Probot wants a secret all the same.
      secret: config.webhookSecret ?? 'worker-process-receives-no-webhooks',
      baseUrl: config.githubBaseUrl,
      log: logger,
    });
    // Every GitHub client the workers use reports the rate limit it has left.
    const github = async (installationId: number) => metrics.instrumentOctokit(await probot.auth(installationId), String(installationId));
    let appOctokit: Promise<Awaited<ReturnType<typeof probot.auth>>> | undefined;
    const appGithub = () => (appOctokit ??= probot.auth().then((octokit) => metrics.instrumentOctokit(octokit, 'app')));
    const connections = { ...config.connections, onResponse: metrics.pveResponse };

    const workers: Worker[] = [];
    // Jobs this process is running, counted here: a shutdown waits for them, and says so only when it handed some back.
    let runningJobs = 0;
    const idleWaiters: (() => void)[] = [];
    const jobsIdle = (): Promise<true> =>
      runningJobs === 0 ? Promise.resolve(true) : new Promise((resolve) => idleWaiters.push(() => resolve(true)));
    const counted =
      <A extends unknown[], R>(processor: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        runningJobs += 1;
        try {
          return await processor(...args);
        } finally {
          runningJobs -= 1;
          if (runningJobs === 0) for (const wake of idleWaiters.splice(0)) wake();
        }
      };
    const timed: typeof metrics.timed = (queue, processor) => counted(metrics.timed(queue, processor));
    if (worker) {
      // BullMQ's workers block on Redis and need commands that wait out a reconnect.
      const workerRedis = await connectRedis(config.redisUrl, { maxRetriesPerRequest: null }, 'the workers');
      closers.push({ what: 'worker redis', close: () => closeRedis(workerRedis) });
      // Jobs' own state reads and writes wait out a short Redis hiccup instead of failing the job.
      const jobRedis = await connectRedis(config.redisUrl, { maxRetriesPerRequest: 3 }, 'the jobs');
      closers.push({ what: 'job redis', close: () => closeRedis(jobRedis) });
      const state = statePrefix(prefix);
      // Specs are loaded and validated on a thread of their own, within a time budget: a costly
      // repository must not hold up webhooks and the renewal of job locks.
      const specLoader = new SpecLoadThread({
        ...options.specLoads,
        onWorkerFailure: (error) => logger.warn({ err: error }, 'loading specs in the main thread instead of a worker thread'),
      });
      closers.push({ what: 'spec load thread', close: () => specLoader.close() });
      const specs = new CommitSpecsCache({ load: (files) => specLoader.load(files) });
      const driftQueue = new Queue(QUEUE_NAMES.drift, { connection: jobRedis, prefix });
      driftQueue.on('error', (error) => logger.warn({ err: error }, 'queue connection error'));
      closers.push({ what: 'drift queue', close: () => driftQueue.close() });
      metrics.watchQueue(driftQueue);
      const driftStore = new DriftStore(jobRedis, state);
      const scheduler = new DriftScheduler(driftQueue, config.driftIntervalMs, (id) => driftStore.forget(id));
      // Workers add plan-queue jobs too: a plan asks for the comments of pull requests it races with to be refreshed.
      const planQueue = new Queue(QUEUE_NAMES.plan, { connection: jobRedis, prefix });
      planQueue.on('error', (error) => logger.warn({ err: error }, 'queue connection error'));
      closers.push({ what: 'plan queue (workers)', close: () => planQueue.close() });
      const heads = new NewestHeads(jobRedis, state);
      const producer = new PlanQueueProducer(planQueue, heads);
      const planStore = new PlanStore(jobRedis, state);

      // Merge-to-apply. Its own connection waits out a Redis restart (AOF keeps every queued and
      // running apply) instead of failing a guest half-way through; a subscriber hears slot releases.
      const applyRedis = await connectRedis(config.redisUrl, { maxRetriesPerRequest: 50 }, 'the applies');
      closers.push({ what: 'apply redis', close: () => closeRedis(applyRedis) });
      const subscriber = await connectRedis(config.redisUrl, { maxRetriesPerRequest: null }, 'apply slot releases');
      closers.push({ what: 'apply subscriber', close: () => closeRedis(subscriber) });
      const applyStore = new ApplyStore(applyRedis, state);
      const runQueue = new Queue(QUEUE_NAMES.applyRun, { connection: applyRedis, prefix });
      const guestQueue = new Queue(QUEUE_NAMES.applyGuest, { connection: applyRedis, prefix });
      for (const queue of [runQueue, guestQueue]) {
        queue.on('error', (error) => logger.warn({ err: error }, 'queue connection error'));
        closers.push({ what: 'apply queue', close: () => queue.close() });
        metrics.watchQueue(queue);
      }
      const applyJobs = new ApplyJobs(runQueue, guestQueue, {
        attempts: config.apply.attempts,
        backoffMs: config.apply.backoffMs,
        reportIntervalMs: config.apply.reportIntervalMs,
        watchdogMs: Math.max(config.apply.reportIntervalMs * 10, config.jobLockMs * 2),
      });
      const writers = new ClusterWriters({ ...connections, warn: (message) => logger.warn({ message }, 'cluster connection'), logger });
      closers.push({ what: 'cluster writers', close: () => writers.close() });
      // Runs this process saw unfinished, looked up as often as an unfinished run is reported:
      // one Redis lost (emptied without its append-only file) is reported as such.
      const lostRuns = new LostRuns({ logger, redis: applyRedis, store: applyStore, github, statePrefix: state });
      const stopLostRuns = lostRuns.start(applyJobs.settings.watchdogMs);
      closers.push({ what: 'lost apply watch', close: async () => stopLostRuns() });
      const runDeps = {
        logger,
        redis: applyRedis,
        store: applyStore,
        plans: planStore,
        jobs: applyJobs,
        github,
        lockMs: config.jobLockMs,
        lost: lostRuns,
        planNow: (octokit: Awaited<ReturnType<typeof github>>, target: PlanTarget, log: Logger) =>
          planPullRequest(
            { logger: log, octokit, redis: jobRedis, heads, store: planStore, specs, connections, applies: applyStore },
            target,
          ),
      };

      const processor = createPlanProcessor({
        logger,
        redis: jobRedis,
        enqueue: (job, options) => producer.enqueue(job, options),
        heads,
        store: planStore,
        specs,
        github,
        connections,
        applies: applyStore,
        commands: {
          apply: applyCommand(runDeps),
          // `/pve drift` from a writer (checked by the plan worker): a run now, answered where it was asked.
          drift: async (job, ctx) => {
            const jobId = await scheduler.runNow(
              {
                kind: 'drift',
                installationId: job.installationId,
                repo: job.repo,
                trigger: 'command',
                deliveryId: job.deliveryId,
                replyTo: job.pr,
              },
              job.deliveryId,
            );
            ctx.logger.info({ driftJob: jobId }, 'drift report enqueued');
          },
        },
      });
      // Every worker finds a job whose worker died (its lock expired) within these.
      const stall = { lockDuration: config.jobLockMs, stalledInterval: config.stalledIntervalMs };
      const planWorker = new Worker(QUEUE_NAMES.plan, timed(QUEUE_NAMES.plan, processor), {
        connection: workerRedis,
        prefix,
        concurrency: config.workerConcurrency,
        ...stall,
      });
      planWorker.on('failed', (job, error) => {
        logger.error({ err: error, job: job?.id, attempts: job?.attemptsMade }, 'job failed');
        if (job)
          completeFailedPlan({ store: planStore, github, logger }, job, error).catch((err: unknown) =>
            logger.warn({ err, job: job.id }, 'could not complete the check run of a failed plan'),
          );
      });
      planWorker.on('error', (error) => logger.error({ err: error }, 'worker error'));
      workers.push(planWorker);
      const driftWorker = new Worker(
        QUEUE_NAMES.drift,
        timed(
          QUEUE_NAMES.drift,
          createDriftProcessor({
            logger,
            redis: jobRedis,
            store: driftStore,
            specs,
            scheduler,
            github,
            appGithub,
            connections,
            schedule: config.driftIntervalMs > 0 ? intervalWords(config.driftIntervalMs) : undefined,
          }),
        ),
        { connection: workerRedis, prefix, concurrency: config.workerConcurrency, ...stall },
      );
      driftWorker.on('failed', (job, error) => logger.error({ err: error, job: job?.id, attempts: job?.attemptsMade }, 'job failed'));
      driftWorker.on('error', (error) => logger.error({ err: error }, 'worker error'));
      workers.push(driftWorker);
      const runWorker = new Worker(QUEUE_NAMES.applyRun, timed(QUEUE_NAMES.applyRun, createRunProcessor(runDeps)), {
        connection: workerRedis,
        prefix,
        // Merges and reports are short; enough that a slow GitHub holds back no other run's report.
        concurrency: 4,
        ...stall,
      });
      // Aborted when the process stops: guest applies hand their jobs back at once instead of
      // holding the shutdown while they wait out a Proxmox lock.
      const stoppingApplies = new AbortController();
      const guestWorker = new Worker(
        QUEUE_NAMES.applyGuest,
        timed(
          QUEUE_NAMES.applyGuest,
          createGuestProcessor({
            logger,
            redis: applyRedis,
            store: applyStore,
            jobs: applyJobs,
            slots: new RedisSlots(applyRedis, subscriber, {
              prefix: state,
              limits: { cluster: config.apply.clusterLimit, node: config.apply.nodeLimit },
              ttlMs: config.jobLockMs,
            }),
            writer: (cluster, repository) => writers.get(cluster, repository),
            settings: { lockMs: config.jobLockMs, lockWaitMs: config.apply.lockWaitMs, lockPollMs: config.apply.lockPollMs },
            stopping: stoppingApplies.signal,
            onResult: (status) => {
              if (status !== 'skipped') metrics.apply(status);
            },
          }),
        ),
        // A worker that died mid-apply is found by the stall check; running its job again is safe
        // (every step re-reads), so a job may stall twice before it counts as failed.
        { connection: workerRedis, prefix, concurrency: config.apply.concurrency, maxStalledCount: 2, ...stall },
      );
      // A merge whose job gave up before its run started applied nothing: the pull request hears why.
      runWorker.on('failed', (job, error) => {
        if (job)
          noticeFailedMerge(runDeps, job, error).catch((err: unknown) =>
            logger.warn({ err, job: job.id }, 'could not tell the pull request that a merge was not applied'),
          );
      });
      for (const w of [runWorker, guestWorker]) {
        w.on('failed', (job, error) => logger.error({ err: error, job: job?.id, attempts: job?.attemptsMade }, 'job failed'));
        w.on('error', (error) => logger.error({ err: error }, 'worker error'));
        workers.push(w);
      }
      // The schedules follow the installations: listed now (one job, however many workers start), then kept by events.
      await scheduler.requestSync();
      closers.push({
        what: 'workers',
        close: async () => {
          stoppingApplies.abort(new Error('the worker is stopping'));
          // Take no new job, and wait for the running ones here: BullMQ's graceful close waits on
          // its blocking connection, and with Redis gone that wait never ends (nor do its timers).
          await Promise.all(workers.map((w) => w.pause(true).catch(() => undefined)));
          const finished = await within(jobsIdle(), config.shutdownTimeoutMs);
          if (!finished) {
            logger.warn(
              { timeoutMs: config.shutdownTimeoutMs, jobs: runningJobs },
              'jobs still running at the shutdown timeout: handed back to the queue',
            );
          }
          // With Redis there, a graceful close records what the last jobs returned; without it there
          // is nothing to record, and only a forced close ends the connections' retries and timers.
          if (finished && workerRedis.status === 'ready') {
            const closed = await within(
              Promise.all(workers.map((w) => w.close())).then(() => true),
              config.shutdownTimeoutMs,
            );
            if (closed) return;
            logger.warn({ timeoutMs: config.shutdownTimeoutMs }, 'the workers did not close within the shutdown timeout');
          }
          // A close already under way is what `close(true)` returns too: do not wait on it for ever.
          await within(Promise.all(workers.map((w) => w.close(true))), 1000);
        },
      });
    }

    let webhooks: ((req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => Promise<boolean>) | undefined;
    if (web) {
      const queue = new Queue(QUEUE_NAMES.plan, { connection: redis, prefix });
      queue.on('error', (error) => logger.warn({ err: error }, 'queue connection error'));
      closers.push({ what: 'queue', close: () => queue.close() });
      metrics.watchQueue(queue);
      const driftQueue = new Queue(QUEUE_NAMES.drift, { connection: redis, prefix });
      driftQueue.on('error', (error) => logger.warn({ err: error }, 'queue connection error'));
      closers.push({ what: 'drift queue', close: () => driftQueue.close() });
      metrics.watchQueue(driftQueue);
      // Which delivery added a job or changed a schedule, for the deliveries metric's outcome.
      const delivery = new AsyncLocalStorage<{ enqueued: boolean }>();
      const enqueued = (): void => {
        const scope = delivery.getStore();
        if (scope) scope.enqueued = true;
      };
      queue.on('waiting', enqueued);
      const store = new DriftStore(redis, statePrefix(prefix));
      const scheduler = new DriftScheduler(driftQueue, config.driftIntervalMs, (id) => store.forget(id));
      const drift: DriftProducer = {
        schedule: (repos) => scheduler.schedule(repos).then(enqueued),
        unschedule: (ids) => scheduler.unschedule(ids).then(enqueued),
        unscheduleInstallation: (id) => scheduler.unscheduleInstallation(id).then(enqueued),
        requestSync: () => scheduler.requestSync().then(enqueued),
      };
      const producer = new PlanQueueProducer(queue, heads);
      const runQueue = new Queue(QUEUE_NAMES.applyRun, { connection: redis, prefix });
      runQueue.on('error', (error) => logger.warn({ err: error }, 'queue connection error'));
      runQueue.on('waiting', enqueued);
      closers.push({ what: 'apply queue', close: () => runQueue.close() });
      const applies = { enqueueMerge: (job: MergeJobData) => enqueueMerge(runQueue, job) };
      const middleware = await createNodeMiddleware(createApp({ producer, appId: config.appId, drift, applies }), {
        probot,
        webhooksPath: config.webhookPath,
      });
      // Refused before Probot's middleware reads a byte, and logged by size and reason, never by body.
      if (config.webhookSecret === undefined) throw new ServerStartError('WEBHOOK_SECRET is required to take webhooks');
      const gate = createWebhookGate({
        secret: config.webhookSecret,
        onRefused: (refusal) => logger.warn(refusal, 'webhook delivery refused'),
      });
      webhooks = (req, res) => {
        const scope = { enqueued: false };
        res.once('finish', () => {
          const outcome = res.statusCode >= 500 ? 'failed' : res.statusCode >= 400 ? 'rejected' : scope.enqueued ? 'enqueued' : 'ignored';
          metrics.delivery(eventLabel(req.headers['x-github-event']), outcome);
        });
        return delivery.run(scope, async () => ((await gate(req, res)) ? (middleware(req, res) as Promise<boolean>) : true));
      };
    }

    const readiness = async (): Promise<Readiness> => {
      const problems: string[] = [];
      if (stopping) problems.push('shutting down');
      const pong = await within(
        redis.ping().catch(() => undefined),
        1000,
      );
      if (pong !== 'PONG') problems.push('Redis unreachable');
      if (workers.some((w) => !w.isRunning())) problems.push('workers not running');
      return { ready: problems.length === 0, problems };
    };

    const server = createHttpServer({
      webhooks,
      webhookPath: config.webhookPath,
      readiness,
      routes: config.metricsPort === undefined ? { [config.metricsPath]: metrics.route(), ...options.routes } : options.routes,
      onError: (error) => logger.error({ err: error }, 'request failed'),
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) =>
        reject(new ServerStartError(`cannot listen on ${config.host ?? '*'}:${config.port}: ${error.message}`)),
      );
      server.listen(config.port, config.host, () => resolve());
    });
    // First to close: no new webhooks while the rest shuts down.
    closers.push({
      what: 'http',
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          logger.info('no longer taking webhooks: finishing running jobs');
        }),
    });
    const url = listeningUrl(server.address() as AddressInfo);
    let metricsUrl: string | undefined;
    if (config.metricsPort !== undefined) {
      const metricsServer = createMetricsServer(config.metricsPath, metrics);
      await new Promise<void>((resolve, reject) => {
        metricsServer.once('error', (error) =>
          reject(new ServerStartError(`cannot listen on ${config.host ?? '*'}:${config.metricsPort} (METRICS_PORT): ${error.message}`)),
        );
        metricsServer.listen(config.metricsPort, config.host, () => resolve());
      });
      closers.push({
        what: 'metrics http',
        close: () =>
          new Promise<void>((resolve) => {
            metricsServer.close(() => resolve());
            metricsServer.closeAllConnections();
          }),
      });
      metricsUrl = listeningUrl(metricsServer.address() as AddressInfo);
    }
    logger.info({ url, role, webhookPath: web ? config.webhookPath : undefined }, 'pve-gitops App serving');

    let closing: Promise<void> | undefined;
    return {
      url,
      role,
      logger,
      metrics,
      metricsUrl,
      readiness,
      close() {
        stopping = true;
        closing ??= closeAll().then(() => logger.info('pve-gitops App stopped'));
        return closing;
      },
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
