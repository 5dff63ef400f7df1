/**
 * The web role's side of start-up: the queues a webhook may add to, the drift schedules it may
 * change, and the request handler that puts the webhook gate in front of Probot's middleware and
 * counts each delivery by outcome. The handlers themselves (which events enqueue what) live in
 * `src/webhooks`; this file only wires them to Redis and the metrics.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createNodeMiddleware, type Probot } from 'probot';
import { enqueueMerge } from '../queue/apply/apply-jobs.js';
import { DriftScheduler, type DriftProducer } from '../queue/drift/drift-schedule.js';
import { DriftStore } from '../queue/drift/drift-store.js';
import { PlanQueueProducer } from '../queue/enqueue.js';
import { statePrefix } from '../queue/keys.js';
import { NewestHeads } from '../queue/newest-head.js';
import { type MergeJobData, QUEUE_NAMES } from '../queue/schema.js';
import createApp from '../webhooks/app.js';
import type { Closers } from './closers.js';
import type { ServerConfig } from './config.js';
import { type AppMetrics, eventLabel } from './metrics.js';
import { openQueue } from './queues.js';
import { ServerStartError } from './start-error.js';
import { createWebhookGate } from './webhook-gate.js';

/** Answers a webhook request; resolves true when it answered. */
type WebhookHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** What {@link startWebRole} wires together. */
interface WebRoleOptions {
  config: ServerConfig;
  logger: Logger;
  metrics: AppMetrics;
  probot: Probot;
  /** The fail-fast connection: a delivery arriving while Redis is down is answered 500 at once. */
  redis: Redis;
  closers: Closers;
}

/** Opens the web role's queues and returns the webhook handler for the HTTP server. */
export async function startWebRole({ config, logger, metrics, probot, redis, closers }: WebRoleOptions): Promise<WebhookHandler> {
  const prefix = config.redisPrefix;
  const home = { connection: redis, prefix, logger, closers };
  const queue = openQueue(home, QUEUE_NAMES.plan, 'queue', metrics);
  const driftQueue = openQueue(home, QUEUE_NAMES.drift, 'drift queue', metrics);
  const runQueue = openQueue(home, QUEUE_NAMES.applyRun, 'apply queue');
  // Which delivery added a job or changed a schedule, for the deliveries metric's outcome.
  const delivery = new AsyncLocalStorage<{ enqueued: boolean }>();
  const enqueued = (): void => {
    const scope = delivery.getStore();
    if (scope) scope.enqueued = true;
  };
  queue.on('waiting', enqueued);
  runQueue.on('waiting', enqueued);
  const store = new DriftStore(redis, statePrefix(prefix));
  const scheduler = new DriftScheduler(driftQueue, config.driftIntervalMs, (id) => store.forget(id));
  const drift: DriftProducer = {
    schedule: (repos) => scheduler.schedule(repos).then(enqueued),
    unschedule: (ids) => scheduler.unschedule(ids).then(enqueued),
    unscheduleInstallation: (id) => scheduler.unscheduleInstallation(id).then(enqueued),
    requestSync: () => scheduler.requestSync().then(enqueued),
  };
  const producer = new PlanQueueProducer(queue, new NewestHeads(redis, statePrefix(prefix)));
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
  return (req, res) => {
    const scope = { enqueued: false };
    res.once('finish', () => {
      const outcome = res.statusCode >= 500 ? 'failed' : res.statusCode >= 400 ? 'rejected' : scope.enqueued ? 'enqueued' : 'ignored';
      metrics.delivery(eventLabel(req.headers['x-github-event']), outcome);
    });
    return delivery.run(scope, async () => ((await gate(req, res)) ? (middleware(req, res) as Promise<boolean>) : true));
  };
}
