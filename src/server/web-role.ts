/**
 * The web role's side of start-up: the queues a webhook may add to, the drift schedules it may
 * change, and the request handler that puts the webhook gate in front of Probot's handlers and
 * counts each delivery by outcome. The handlers themselves (which events enqueue what) live in
 * `src/webhooks`; this file only wires them to Redis and the metrics.
 */
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
import { type AdmittedDelivery, createWebhookGate } from './webhook-gate.js';

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
  const answering = new DeliveriesAnswering();
  const store = new DriftStore(redis, statePrefix(prefix));
  const scheduler = new DriftScheduler(driftQueue, config.driftIntervalMs, (id) => store.forget(id));
  const drift: DriftProducer = scheduler;
  const producer = new PlanQueueProducer(queue, new NewestHeads(redis, statePrefix(prefix)));
  const applies = { enqueueMerge: (job: MergeJobData) => enqueueMerge(runQueue, job) };
  const enqueued = (id: string): void => answering.enqueued(id);
  // Loads the App's handlers; the middleware itself answers only what is not a delivery (a GET).
  const middleware = await createNodeMiddleware(createApp({ producer, appId: config.appId, drift, applies, enqueued }), {
    probot,
    webhooksPath: config.webhookPath,
  });
  // Refused before Probot's middleware reads a byte, and logged by size and reason, never by body.
  if (config.webhookSecret === undefined) throw new ServerStartError('WEBHOOK_SECRET is required to take webhooks');
  const gate = createWebhookGate({
    secret: config.webhookSecret,
    onRefused: (refusal) => logger.warn(refusal, 'webhook delivery refused'),
  });
  return async (req, res) => {
    const id = req.headers['x-github-delivery'];
    const scope = typeof id === 'string' ? answering.open(id) : undefined;
    res.once('finish', () => {
      const outcome = res.statusCode >= 500 ? 'failed' : res.statusCode >= 400 ? 'rejected' : scope?.enqueued ? 'enqueued' : 'ignored';
      metrics.delivery(eventLabel(req.headers['x-github-event']), outcome);
    });
    // 'close' follows 'finish', and comes alone when the sender went away first.
    if (scope && typeof id === 'string') res.once('close', () => answering.close(id, scope));
    const admitted = await gate(req, res);
    if (admitted === 'answered') return true;
    if (admitted === 'not-a-delivery') return middleware(req, res) as Promise<boolean>;
    await receiveVerified(probot, admitted, res);
    return true;
  };
}

/** Whether a delivery being answered has added a job or changed a drift schedule. */
interface DeliveryScope {
  enqueued: boolean;
  /** Requests of this delivery id being answered (GitHub may send one again before the first is answered). */
  requests: number;
}

/**
 * The deliveries being answered, by delivery id, for the deliveries metric's outcome: the App's
 * handlers say which delivery enqueued. (This was an AsyncLocalStorage around each request; on
 * Node 20 that turns on promise hooks for every promise of the process, Probot's and BullMQ's
 * included: in a profile of 3,600 deliveries 135 ms of CPU, most of the head's record's 172 ms.)
 */
class DeliveriesAnswering {
  private readonly scopes = new Map<string, DeliveryScope>();

  open(id: string): DeliveryScope {
    const scope = this.scopes.get(id) ?? { enqueued: false, requests: 0 };
    scope.requests++;
    this.scopes.set(id, scope);
    return scope;
  }

  close(id: string, scope: DeliveryScope): void {
    if (--scope.requests === 0 && this.scopes.get(id) === scope) this.scopes.delete(id);
  }

  enqueued(id: string): void {
    const scope = this.scopes.get(id);
    if (scope) scope.enqueued = true;
  }
}

/** How long a delivery's handlers may take before it is answered 202, as Probot's middleware does (its default). */
const RECEIVE_TIMEOUT_MS = 9000;

const OK_BODY = 'ok\n';
const OK_HEADERS = { 'content-type': 'text/plain', accept: 'application/json', 'content-length': String(OK_BODY.length) };

function answer(res: ServerResponse, status: number, body: string, type: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': type, accept: 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
}

/**
 * What Probot's middleware does with a delivery once `verifyAndReceive` found its signature good,
 * for a delivery the gate has verified: the middleware would compute the same HMAC over the same
 * 20-odd kB again (a sixth of the CPU a delivery cost beyond bare Probot's). Answers as the
 * middleware does: `ok` (200) when the handlers are done; `still processing` (202) when they take
 * longer than its timeout; a body that is not JSON 400 `SyntaxError: Invalid JSON`; a handler's
 * error its `status` or 500, as JSON `{ error }`, the error logged by Probot's logger.
 */
async function receiveVerified(probot: Probot, delivery: AdmittedDelivery, res: ServerResponse): Promise<void> {
  probot.log.debug(`${delivery.name} event received (id: ${delivery.id})`);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    answer(res, 202, 'still processing\n', 'text/plain');
  }, RECEIVE_TIMEOUT_MS);
  try {
    let payload: unknown;
    try {
      payload = JSON.parse(delivery.body);
    } catch (error) {
      const invalid = Object.assign(error as Error, { message: 'Invalid JSON', status: 400 });
      throw new AggregateError([invalid], invalid.message);
    }
    await probot.webhooks.receive({ id: delivery.id, name: delivery.name, payload } as Parameters<Probot['webhooks']['receive']>[0]);
    clearTimeout(timer);
    if (!timedOut) res.writeHead(200, OK_HEADERS).end(OK_BODY);
  } catch (error) {
    clearTimeout(timer);
    if (timedOut) return;
    const first = ((error as AggregateError).errors?.[0] ?? error) as Error & { status?: number };
    const message = first.message ? `${first.name}: ${first.message}` : 'Error: An Unspecified error occurred';
    probot.log.error(error);
    answer(res, first.status ?? 500, JSON.stringify({ error: message }), 'application/json');
  }
}
