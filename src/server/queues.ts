/**
 * Opening one of the App's BullMQ queues as the App wants every queue: under the configured
 * prefix, its connection errors logged instead of thrown, its close registered, and — where the
 * process reports it — its depth watched by the metrics. Which queues exist and what their jobs
 * carry is the queue's business (`src/queue/schema.ts`); this file only opens them.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Closers } from './closers.js';
import type { AppMetrics } from './metrics.js';

/** Where a process's queues live and what looks after them. */
interface QueueHome {
  connection: Redis;
  prefix: string;
  logger: Logger;
  closers: Closers;
}

/**
 * Opens queue `name` on `home`, its close logged as `what`; with `metrics`, the queue's depth is
 * reported there.
 */
export function openQueue(home: QueueHome, name: string, what: string, metrics?: AppMetrics): Queue {
  const queue = new Queue(name, { connection: home.connection, prefix: home.prefix });
  queue.on('error', (error) => home.logger.warn({ err: error }, 'queue connection error'));
  home.closers.add(what, () => queue.close());
  metrics?.watchQueue(queue);
  return queue;
}
