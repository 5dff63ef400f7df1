/**
 * The producer side of the queues: what webhook handlers call. Adding a job is the only slow-ish
 * thing a handler does (one Redis round trip); when Redis cannot take the job this throws, the
 * handler fails, Probot answers 500, and GitHub's redelivery can try again — never a 2xx for a lost
 * job. The Redis connection behind it fails fast (no offline queue, few retries): see `src/server`.
 */
import { Job, type JobJson, type JobsOptions, type Queue, type RedisQueueBackend } from 'bullmq';
import type { Redis } from 'ioredis';
import { deliveryJobId, type PlanJobData, type PlanQueueJob } from './schema.js';
import { NEWER_KNOWN, type NewestHeads, RECORDED } from './newest-head.js';

/** Completed and failed jobs are kept this long, so a delivery sent again within it is recognised. */
export const KEEP_JOBS_SECONDS = 24 * 3600;

/**
 * Options of every plan-queue job: kept a day after it ends (the delivery dedup window), retried
 * with backoff when a worker fails for a transient reason (GitHub 5xx after Octokit's own retries,
 * Redis hiccups). A failed plan of Proxmox is no failure: it is posted as the plan's result.
 */
export const PLAN_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: { age: KEEP_JOBS_SECONDS },
  removeOnFail: { age: 7 * KEEP_JOBS_SECONDS },
};

/** What webhook handlers may do with the queue; implemented by {@link PlanQueueProducer}. */
export interface JobProducer {
  /**
   * Adds the job once per delivery (or once per `jobId` while BullMQ keeps a job of that id);
   * resolves with its job id. Throws when Redis cannot take it.
   */
  enqueue(job: PlanQueueJob, options?: { jobId?: string }): Promise<string>;
  /** Records a pull request's head (see `NewestHeads.record`); false when a newer one is known. */
  recordHead(repoId: number, pr: number, sha: string, updatedAt: string): Promise<boolean>;
  /**
   * Records the plan job's head as of `updatedAt` and adds the job — unless a newer head of the
   * pull request is known: then resolves undefined and leaves no job of this delivery. Throws
   * when Redis cannot take it.
   */
  enqueueIfNewest(job: PlanJobData, updatedAt: string): Promise<string | undefined>;
}

/**
 * The job id of a refresh of a pull request's comment in refresh generation `generation` (see
 * `PlanStore.refreshGeneration`): every posting that asks for it while it waits asks for the same
 * job, so pull requests racing for one guest cost one refresh each per burst of postings, not one
 * per pair.
 */
export function refreshJobId(repoId: number, pr: number, generation: number): string {
  return `refresh-r${repoId}-pr${pr}-g${generation}`;
}

/** Connections corked until the end of this turn of the event loop. */
const corked = new WeakSet<Redis>();

/**
 * Holds `client`'s writes until the end of this turn of the event loop, then sends them in one
 * write. Under a burst each delivery sends two commands, and each was a system call of its own:
 * in a profile of 2,060 deliveries the writes to Redis took 345 ms of the web process's CPU,
 * corked 160 ms (README, issue 17's targets). Redis receives the commands in the same
 * order; a turn later at most.
 */
function corkForThisTurn(client: Redis): void {
  const stream = client.stream;
  if (corked.has(client) || !stream || typeof stream.cork !== 'function') return;
  corked.add(client);
  stream.cork();
  setImmediate(() => {
    corked.delete(client);
    stream.uncork();
  });
}

/** What every plan job of {@link PlanQueueProducer.enqueueIfNewest} stores but its id, data and time. */
interface PlanJobTemplate {
  json: Omit<JobJson, 'id' | 'data' | 'timestamp' | 'opts'>;
  opts: JobJson['opts'];
}

/**
 * A plan job as `new Job(…).asJSON()` makes it, with the options BullMQ normalises and validates
 * worked out once for the queue: per delivery only the id, data and time differ. The Job's
 * construction, the merge, normalising and checking of the same options and the JSON of its empty
 * fields took ~80 ms of CPU in a profile of 3,600 deliveries (bursts of 200), ~20 µs each.
 * `test/app/state.test.ts` holds the jobs it adds equal to `Queue.add`'s.
 */
function planJobTemplate(queue: Queue): PlanJobTemplate {
  const sample = new Job(queue, 'plan', {}, { ...queue.defaultJobOptions, ...PLAN_JOB_OPTIONS, jobId: 'plan-template' }, 'plan-template');
  const json = sample.asJSON();
  // Throws for options BullMQ refuses, as the add of every job would.
  (sample as unknown as { validateOptions(json: JobJson): void }).validateOptions(json);
  const { id: _id, data: _data, timestamp: _timestamp, opts, ...rest } = json;
  return { json: rest, opts };
}

/** Adds plan-queue jobs, one per delivery. */
export class PlanQueueProducer implements JobProducer {
  private template: PlanJobTemplate | undefined;

  constructor(
    private readonly queue: Queue,
    private readonly heads: NewestHeads,
  ) {}

  async enqueue(job: PlanQueueJob, options: { jobId?: string } = {}): Promise<string> {
    const jobId = options.jobId ?? deliveryJobId(job.kind, job.deliveryId, job.kind === 'refresh' ? job.pr : undefined);
    await this.queue.add(job.kind, job, { ...PLAN_JOB_OPTIONS, jobId });
    return jobId;
  }

  recordHead(repoId: number, pr: number, sha: string, updatedAt: string): Promise<boolean> {
    return this.heads.record(repoId, pr, sha, updatedAt);
  }

  /**
   * One Redis round trip per delivery: the head's record and the job's add are sent together on
   * the queue's connection, which Redis answers in order, where `recordHead` then `enqueue` waited
   * for one answer before sending the next — under a burst of deliveries each round trip is one
   * more turn of the event loop with the delivery's payload alive. (Not an ioredis pipeline: with
   * BullMQ's scripts defined on the connection, making one costs more than the round trip it saves.)
   * The add cannot depend on the record, so when a newer head is known (an older push delivered
   * late: rare) the job the add just created is removed again before the delivery is answered; a
   * worker that took it meanwhile drops it (not the newest head). A job of this delivery that was
   * there before (GitHub sent it again) is left as it was.
   */
  async enqueueIfNewest(job: PlanJobData, updatedAt: string): Promise<string | undefined> {
    const jobId = deliveryJobId(job.kind, job.deliveryId);
    // The queue's own connection: Redis runs the record before the add, so the record's check of
    // the job's key sees whether the job was there before the add.
    const client = (await this.queue.getBackend().client) as unknown as Redis;
    corkForThisTurn(client);
    const recorded = this.heads.recordFor(
      client,
      { repoId: job.repo.id, pr: job.pr, sha: job.headSha, updatedAt },
      this.queue.toKey(jobId),
    );
    this.template ??= planJobTemplate(this.queue);
    const data: JobJson = {
      ...this.template.json,
      id: jobId,
      name: job.kind,
      data: JSON.stringify(job),
      opts: { ...this.template.opts, jobId },
      timestamp: Date.now(),
    };
    // What `Job.addJob` does with the job's JSON; both commands are written before either answer
    // is awaited (the add sends its script at once).
    const backend = this.queue.getBackend() as unknown as RedisQueueBackend;
    const add = backend.addJobToTransaction(client as unknown as Parameters<RedisQueueBackend['addJobToTransaction']>[0], data, jobId);
    const [outcome] = await Promise.all([recorded, add]);
    if (outcome === RECORDED) {
      // What `Queue.add` tells its listeners, when there are any (the Job is built for them only).
      if (this.queue.listenerCount('waiting') > 0) this.queue.emit('waiting', new Job(this.queue, job.kind, job, data.opts, jobId));
      return jobId;
    }
    if (outcome === NEWER_KNOWN) await this.queue.remove(jobId);
    return undefined;
  }
}
