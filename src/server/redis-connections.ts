/**
 * The App's Redis connections, one per kind of user, each with the retry policy that user needs:
 * webhook handlers and readiness fail fast, BullMQ's blocking workers wait out any reconnect, jobs
 * ride out a short hiccup, applies ride out a Redis restart. Opening a connection registers its
 * close. What is stored in Redis, and under which keys, is the queue's business (`src/queue`).
 */
import { Redis, type RedisOptions } from 'ioredis';
import { within } from '../util/within.js';
import type { Closers } from './closers.js';
import { ServerStartError } from './start-error.js';

/** The connections the App opens: options, what the start error calls it, and the name its close is logged with. */
const CONNECTIONS = {
  // Handlers and readiness: fails fast, so a webhook arriving while Redis is down is answered 500
  // at once (GitHub redelivers) instead of waiting for a reconnect.
  state: {
    options: { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 5000 },
    what: 'the App state',
    closer: 'redis',
  },
  // BullMQ's workers block on Redis and need commands that wait out a reconnect.
  workers: { options: { maxRetriesPerRequest: null }, what: 'the workers', closer: 'worker redis' },
  // Jobs' own state reads and writes wait out a short Redis hiccup instead of failing the job.
  jobs: { options: { maxRetriesPerRequest: 3 }, what: 'the jobs', closer: 'job redis' },
  // Merge-to-apply waits out a Redis restart (AOF keeps every queued and running apply) instead of
  // failing a guest half-way through.
  applies: { options: { maxRetriesPerRequest: 50 }, what: 'the applies', closer: 'apply redis' },
  // Hears apply slot releases.
  applySlots: { options: { maxRetriesPerRequest: null }, what: 'apply slot releases', closer: 'apply subscriber' },
} satisfies Record<string, { options: RedisOptions; what: string; closer: string }>;

/** Which of the App's connections to open. */
type RedisConnection = keyof typeof CONNECTIONS;

/** Quits a live connection (bounded: a reply may never come) and drops it in every state. Idempotent. */
async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready')
    await within(
      redis.quit().catch(() => undefined),
      1000,
    );
  redis.disconnect();
}

/**
 * Connects `which` of the App's connections to `url` and registers its close; a Redis that cannot
 * be reached is a {@link ServerStartError} naming the connection.
 */
export async function openRedis(which: RedisConnection, url: string, closers: Closers): Promise<Redis> {
  const { options, what, closer } = CONNECTIONS[which];
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
  closers.add(closer, () => closeRedis(redis));
  return redis;
}
