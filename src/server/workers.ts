/**
 * Starting and stopping the App's BullMQ workers: every worker logs its failed jobs and its
 * errors, every job it runs is counted (a shutdown waits for the running ones and hands the rest
 * back to the queue), and a shutdown stops taking jobs before anything else. What a job does is
 * its processor's business (`src/queue/plan`, `apply`, `drift`); which workers a process runs is
 * the worker role's (`worker-role.ts`).
 */
import { type Processor, Worker, type WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { within } from '../util/within.js';

/** The jobs this process is running, counted: a shutdown waits for them, and says so only when it handed some back. */
export class RunningJobs {
  #running = 0;
  readonly #idleWaiters: (() => void)[] = [];

  /** How many jobs are running now. */
  get count(): number {
    return this.#running;
  }

  /** `processor`, with each call counted while it runs. */
  counted<A extends unknown[], R>(processor: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
    return async (...args: A): Promise<R> => {
      this.#running += 1;
      try {
        return await processor(...args);
      } finally {
        this.#running -= 1;
        if (this.#running === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
      }
    };
  }

  /** Resolves once no job is running. */
  idle(): Promise<true> {
    return this.#running === 0 ? Promise.resolve(true) : new Promise((resolve) => this.#idleWaiters.push(() => resolve(true)));
  }
}

/** Starts a worker on queue `name` that logs each failed job and each worker error. */
export function startWorker(name: string, processor: Processor, options: WorkerOptions, logger: Logger): Worker {
  const worker: Worker = new Worker(name, processor, options);
  worker.on('failed', (job, error) => logger.error({ err: error, job: job?.id, attempts: job?.attemptsMade }, 'job failed'));
  worker.on('error', (error) => logger.error({ err: error }, 'worker error'));
  return worker;
}

/** What {@link stopWorkers} needs besides the workers. */
interface StopWorkersOptions {
  running: RunningJobs;
  /** The workers' blocking connection: without it there is nothing to record, and only a forced close ends. */
  redis: Redis;
  shutdownTimeoutMs: number;
  logger: Logger;
}

/**
 * Stops `workers`: no new job, running ones given up to the shutdown timeout, the rest handed
 * back to the queue (another worker picks them up).
 */
export async function stopWorkers(
  workers: readonly Worker[],
  { running, redis, shutdownTimeoutMs, logger }: StopWorkersOptions,
): Promise<void> {
  // Take no new job, and wait for the running ones here: BullMQ's graceful close waits on
  // its blocking connection, and with Redis gone that wait never ends (nor do its timers).
  await Promise.all(workers.map((w) => w.pause(true).catch(() => undefined)));
  const finished = await within(running.idle(), shutdownTimeoutMs);
  if (!finished) {
    logger.warn(
      { timeoutMs: shutdownTimeoutMs, jobs: running.count },
      'jobs still running at the shutdown timeout: handed back to the queue',
    );
  }
  // With Redis there, a graceful close records what the last jobs returned; without it there
  // is nothing to record, and only a forced close ends the connections' retries and timers.
  if (finished && redis.status === 'ready') {
    const closed = await within(
      Promise.all(workers.map((w) => w.close())).then(() => true),
      shutdownTimeoutMs,
    );
    if (closed) return;
    logger.warn({ timeoutMs: shutdownTimeoutMs }, 'the workers did not close within the shutdown timeout');
  }
  // A close already under way is what `close(true)` returns too: do not wait on it for ever.
  await within(Promise.all(workers.map((w) => w.close(true))), 1000);
}
