/**
 * The producer side of the queues: what webhook handlers call. Adding a job is the only slow-ish
 * thing a handler does (one Redis round trip); when Redis cannot take the job this throws, the
 * handler fails, Probot answers 500, and GitHub's redelivery can try again — never a 2xx for a lost
 * job. The Redis connection behind it fails fast (no offline queue, few retries): see `src/server`.
 */
import type { JobsOptions, Queue } from 'bullmq';
import { deliveryJobId, type PlanQueueJob } from './schema.js';
import type { NewestHeads } from './newest-head.js';

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

/** Adds plan-queue jobs, one per delivery. */
export class PlanQueueProducer implements JobProducer {
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
}
