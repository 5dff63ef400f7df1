/**
 * Starts and stops the App for a test: configuration from an environment like an operator's
 * (through `loadServerConfig`, so the config path is exercised too), the GitHub test double as
 * GitHub Enterprise (GHE_HOST/GHE_PROTOCOL=http), the real Redis of the test run under a key
 * prefix of its own (so tests stand alone and in any order), logs captured in memory.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { type Job, Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/logger.js';
import { DRIFT_JOB_OPTIONS } from '../../src/queue/drift/drift-schedule.js';
import { type DriftJobData, deliveryJobId, type PlanQueueJob, QUEUE_NAMES } from '../../src/queue/schema.js';
import { loadServerConfig, type ServerConfig, type ServerRole } from '../../src/server/config.js';
import { type RunningServer, type StartServerOptions, startServer } from '../../src/server/serve.js';
import { type DeliverOptions, type DeliveryResult, deliver } from './deliveries.js';
import type { GitHubDouble } from './github-double.js';

/** Options of {@link startTestApp}. */
export interface TestAppOptions {
  github: GitHubDouble;
  /** The Redis of the test run: `inject('redisUrl')`. */
  redisUrl: string;
  role?: ServerRole;
  /** More environment (cluster connections, WORKER_CONCURRENCY…); `undefined` removes a default. */
  env?: Record<string, string | undefined>;
  /** Default debug, so a failing test's logs say everything. */
  logLevel?: string;
  /** The spec load thread's budget and clock. */
  specLoads?: StartServerOptions['specLoads'];
  /** The clock apply windows are judged by, and how often a parked guest looks again. */
  applyWindows?: StartServerOptions['applyWindows'];
}

/** A running App under test. */
export interface TestApp {
  url: string;
  config: ServerConfig;
  env: Record<string, string>;
  /** The Redis key prefix of this App (queues and state). */
  prefix: string;
  webhookSecret: string;
  server: RunningServer;
  /** Everything the App logged, as JSON lines. */
  logs(): string;
  /** Sends a delivery signed with the App's secret (unless `secret` says otherwise). */
  deliver(options: Omit<DeliverOptions, 'secret'> & { secret?: string | null }): Promise<DeliveryResult>;
  /** The plan-queue job of a delivery, if one was enqueued. */
  job(kind: PlanQueueJob['kind'], deliveryId: string): Promise<Job | undefined>;
  /** Every plan-queue job in any state. */
  jobs(): Promise<Job[]>;
  /** Resolves once the delivery's job completed (rejects when it failed for good). */
  jobDone(kind: PlanQueueJob['kind'], deliveryId: string): Promise<void>;
  /** Resolves once the plan-queue job `jobId` completed (rejects when it failed for good). */
  jobIdDone(jobId: string): Promise<void>;
  /** Every key under the App's prefix with its value (strings, hashes, lists, sets), for leak checks. */
  redisDump(): Promise<string>;
  /** The drift queue (schedulers, jobs). */
  driftQueue: Queue;
  /** Adds a drift run as the schedule or `/pve drift` would; resolves with its job id. */
  addDrift(data: Omit<DriftJobData, 'kind'>, jobId?: string): Promise<string>;
  /** Resolves with a drift-queue job's return value once it completed (rejects when it failed for good). */
  driftDone(jobId: string): Promise<unknown>;
  /**
   * Resolves with the first drift-queue job, past or future, that completed and matches `predicate`
   * (the queue's event stream is read from its start); rejects when a matching job failed for good.
   */
  driftCompleted(predicate: (job: Job) => boolean): Promise<Job>;
  close(): Promise<void>;
}

/** The environment an operator would set for the App against `github` (for spawned processes too). */
export function appEnvironment(
  github: GitHubDouble,
  redisUrl: string,
  extra: Record<string, string | undefined> = {},
): { env: Record<string, string>; prefix: string; webhookSecret: string } {
  const prefix = `t-${randomBytes(6).toString('hex')}`;
  const webhookSecret = `whsec-${randomBytes(16).toString('hex')}`;
  const env: Record<string, string | undefined> = {
    APP_ID: String(github.app.id),
    PRIVATE_KEY: github.app.privateKeyPem,
    WEBHOOK_SECRET: webhookSecret,
    GHE_HOST: github.host,
    GHE_PROTOCOL: 'http',
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'debug',
    SHUTDOWN_TIMEOUT: '10',
    // No drift schedules unless a test asks: listing installations would be a GitHub request every test must expect.
    DRIFT_INTERVAL: '0',
    ...extra,
  };
  const clean = Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return { env: clean, prefix: clean.REDIS_PREFIX ?? prefix, webhookSecret: clean.WEBHOOK_SECRET ?? webhookSecret };
}

/** Starts the App in this process with the given role (default `all`). */
export async function startTestApp(options: TestAppOptions): Promise<TestApp> {
  const role = options.role ?? 'all';
  const { env, prefix, webhookSecret } = appEnvironment(options.github, options.redisUrl, {
    LOG_LEVEL: options.logLevel ?? 'debug',
    ...options.env,
  });
  const loaded = await loadServerConfig(env, { cwd: process.cwd(), role });
  if (!loaded.ok) throw new Error(`test App configuration:\n${loaded.problems.join('\n')}`);
  let logText = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logText += chunk.toString();
      callback();
    },
  });
  const logger = createLogger({ level: loaded.config.logLevel, stream });
  const server = await startServer({
    config: loaded.config,
    role,
    logger,
    ...(options.specLoads ? { specLoads: options.specLoads } : {}),
    ...(options.applyWindows ? { applyWindows: options.applyWindows } : {}),
  });

  const inspector = inspectQueue(options.redisUrl, prefix);

  return {
    ...inspector,
    url: server.url,
    config: loaded.config,
    env,
    prefix,
    webhookSecret,
    server,
    logs: () => logText,
    deliver: (delivery) => deliver(server.url, { ...delivery, secret: delivery.secret === undefined ? webhookSecret : delivery.secret }),
    async close() {
      await server.close();
      await inspector.close();
    },
  };
}

/** Looks into the queues and state of an App (in this process or another) by its Redis prefix. */
export type QueueInspector = Pick<
  TestApp,
  'job' | 'jobs' | 'jobDone' | 'jobIdDone' | 'redisDump' | 'driftQueue' | 'addDrift' | 'driftDone' | 'driftCompleted'
> & {
  close(): Promise<void>;
};

/** A {@link QueueInspector} for the App with Redis prefix `prefix`. */
export function inspectQueue(redisUrl: string, prefix: string): QueueInspector {
  const inspect = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const queue = new Queue(QUEUE_NAMES.plan, { connection: inspect, prefix });
  let events: QueueEvents | undefined;
  const queueEvents = async (): Promise<QueueEvents> => {
    if (!events) {
      events = new QueueEvents(QUEUE_NAMES.plan, { connection: { url: redisUrl }, prefix });
      await events.waitUntilReady();
    }
    return events;
  };

  const driftQueue = new Queue(QUEUE_NAMES.drift, { connection: inspect, prefix });
  let driftEvents: QueueEvents | undefined;
  const driftQueueEvents = async (): Promise<QueueEvents> => {
    if (!driftEvents) {
      // From the stream's start: a job that finished before the test asked is found too.
      driftEvents = new QueueEvents(QUEUE_NAMES.drift, { connection: { url: redisUrl }, prefix, lastEventId: '0-0' });
      await driftEvents.waitUntilReady();
    }
    return driftEvents;
  };
  let driftJobs = 0;

  return {
    job: async (kind, deliveryId) => (await queue.getJob(deliveryJobId(kind, deliveryId))) ?? undefined,
    jobs: () => queue.getJobs(['active', 'waiting', 'delayed', 'completed', 'failed', 'prioritized', 'waiting-children']),
    async jobDone(kind, deliveryId) {
      const events = await queueEvents();
      const job = await queue.getJob(deliveryJobId(kind, deliveryId));
      if (!job) throw new Error(`no ${kind} job for delivery ${deliveryId}`);
      await job.waitUntilFinished(events);
    },
    async jobIdDone(jobId) {
      const events = await queueEvents();
      const job = await queue.getJob(jobId);
      if (!job) throw new Error(`no plan-queue job ${jobId}`);
      await job.waitUntilFinished(events);
    },
    async redisDump() {
      const keys = await inspect.keys(`${prefix}:*`);
      const parts: string[] = [];
      for (const key of keys.sort()) {
        const type = await inspect.type(key);
        let value: unknown;
        if (type === 'string') value = await inspect.get(key);
        else if (type === 'hash') value = await inspect.hgetall(key);
        else if (type === 'list') value = await inspect.lrange(key, 0, -1);
        else if (type === 'set') value = await inspect.smembers(key);
        else if (type === 'zset') value = await inspect.zrange(key, 0, -1);
        else if (type === 'stream') value = await inspect.xrange(key, '-', '+');
        parts.push(`${key} ${JSON.stringify(value)}`);
      }
      return parts.join('\n');
    },
    driftQueue,
    async addDrift(data, jobId) {
      driftJobs += 1;
      const id = jobId ?? `drift-test-${driftJobs}-${randomBytes(4).toString('hex')}`;
      await driftQueue.add('drift', { kind: 'drift', ...data }, { ...DRIFT_JOB_OPTIONS, attempts: 1, jobId: id });
      return id;
    },
    async driftDone(jobId) {
      const events = await driftQueueEvents();
      const job = await driftQueue.getJob(jobId);
      if (!job) throw new Error(`no drift job ${jobId}`);
      return job.waitUntilFinished(events);
    },
    async driftCompleted(predicate) {
      const events = await driftQueueEvents();
      return new Promise<Job>((resolve, reject) => {
        const check = async (jobId: string, failed?: string): Promise<void> => {
          const job = await driftQueue.getJob(jobId);
          if (!job || !predicate(job)) return;
          if (failed !== undefined && job.attemptsMade >= (job.opts.attempts ?? 1))
            reject(new Error(`drift job ${jobId} failed: ${failed}`));
          else if (failed === undefined) resolve(job);
        };
        events.on('completed', ({ jobId }) => void check(jobId));
        events.on('failed', ({ jobId, failedReason }) => void check(jobId, failedReason));
      });
    },
    async close() {
      await events?.close();
      await driftEvents?.close();
      await queue.close();
      await driftQueue.close();
      inspect.disconnect();
    },
  };
}

/** A fresh delivery id, as GitHub makes them. */
export function newDeliveryId(): string {
  return randomUUID();
}
