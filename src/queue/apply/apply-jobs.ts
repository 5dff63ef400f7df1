/**
 * The jobs of merge-to-apply and how they are added: job ids (deterministic, so a retried merge
 * job or a re-run item job adds nothing twice), retry options, and the report jobs that bring a
 * run's comment and check run up to date.
 *
 * Reports are debounced by time window rather than by BullMQ's deduplication: every change adds
 * a report job whose id names the current window (`report-<run>-<window>`), delayed to the
 * window's end. Changes within one window share one job (BullMQ ignores an add whose id exists);
 * a change made while that job runs falls into the next window and gets its own. So no change is
 * ever left unreported — which a "skip while a report is pending" flag could not promise without
 * a race — and a crashed report job is simply run again, like any job.
 */
import { createHash } from 'node:crypto';
import type { JobsOptions, Queue } from 'bullmq';
import { KEEP_JOBS_SECONDS } from '../enqueue.js';
import type { ItemJobData, MergeJobData, ReportJobData } from '../schema.js';
import { isGuestKey } from './apply-store.js';

/**
 * The id of the run a merge starts: named by the merge itself (repository id, pull request,
 * merge commit), never by the delivery. GitHub's signature covers the body and not
 * `X-GitHub-Delivery`, so a captured delivery posted again under a new id is still "signed": keyed
 * on the delivery, it would start a second run of an old plan (docs/github-app.md, "What an apply
 * is keyed on").
 */
export function mergeRunId(repoId: number, pr: number, mergeSha: string): string {
  return `m-${repoId}-${pr}-${mergeSha}`;
}

/** The id of the run a `/pve apply` comment starts: named by the comment, which a replayed delivery cannot change. */
export function commandRunId(repoId: number, commentId: number): string {
  return `c-${repoId}-${commentId}`;
}

/** The BullMQ job id of a merge's job: one per merge, whatever delivery brought it. */
export function mergeJobId(job: Pick<MergeJobData, 'repo' | 'pr' | 'mergeSha'>): string {
  return `merge-${job.repo.id}-${job.pr}-${job.mergeSha}`;
}

/** The BullMQ job id of an item's job in a run (a guest's keeps the id it had before other kinds). */
export function itemJobId(runId: string, item: string): string {
  return `g-${runId}-${createHash('sha256').update(item).digest('hex').slice(0, 16)}`;
}

/** An item's job data: a guest's in the form every version adds, another kind's item in its own. */
export function itemJobData(runId: string, item: string): ItemJobData {
  return isGuestKey(item) ? { kind: 'guest', runId, guest: item } : { kind: 'object', runId, item };
}

/** Options of the merge job: like a plan job's (kept a day for delivery dedup, retried on GitHub or Redis trouble). */
export const MERGE_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: { age: KEEP_JOBS_SECONDS },
  removeOnFail: { age: 7 * KEEP_JOBS_SECONDS },
};

/** Reports retry GitHub trouble for a while; the next change reports the newer state anyway. */
const REPORT_JOB_OPTIONS: JobsOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 2000 },
  // Kept past their window so a late add in the same window is recognised as a duplicate.
  removeOnComplete: { age: 3600 },
  removeOnFail: { age: 7 * KEEP_JOBS_SECONDS },
};

/**
 * Adds a merge's job to the apply-run queue once per merge (what the webhook handler calls);
 * resolves with its job id. Throws when Redis cannot take it.
 */
export async function enqueueMerge(runQueue: Queue, job: MergeJobData): Promise<string> {
  // Keyed on the merge: a delivery sent again, under its own id or a new one, adds nothing while
  // the job is kept; after that the merge's carried-out mark (apply-store.ts) stops it.
  const jobId = mergeJobId(job);
  await runQueue.add('merge', job, { ...MERGE_JOB_OPTIONS, jobId });
  return jobId;
}

/** What the apply queues need to know to add jobs. */
export interface ApplyJobSettings {
  /** Runs of a guest job when the cluster is unreachable (the first included). */
  attempts: number;
  /** First pause before a guest job runs again; doubles each time. */
  backoffMs: number;
  /** Reports of one run are at most this far apart (and this late). */
  reportIntervalMs: number;
  /** While a run has guests not finished, a report is made at least this often (it also heals lost jobs). */
  watchdogMs: number;
}

/** Adds merge-to-apply jobs. */
export class ApplyJobs {
  constructor(
    private readonly runQueue: Queue,
    private readonly guestQueue: Queue,
    readonly settings: ApplyJobSettings,
  ) {}

  enqueueMerge(job: MergeJobData): Promise<string> {
    return enqueueMerge(this.runQueue, job);
  }

  /** Adds the item jobs of a run, guests' and other kinds' (those already there are left as they are). */
  async addItems(runId: string, items: readonly string[]): Promise<void> {
    const options: JobsOptions = {
      attempts: this.settings.attempts,
      backoff: { type: 'exponential', delay: this.settings.backoffMs },
      removeOnComplete: { age: KEEP_JOBS_SECONDS },
      removeOnFail: { age: 7 * KEEP_JOBS_SECONDS },
    };
    // In chunks: one MULTI for 10,000 guests would hold Redis for a noticeable while.
    for (let i = 0; i < items.length; i += 500) {
      await this.guestQueue.addBulk(
        items.slice(i, i + 500).map((item) => {
          const data = itemJobData(runId, item);
          return { name: data.kind, data, opts: { ...options, jobId: itemJobId(runId, item) } };
        }),
      );
    }
  }

  /**
   * Asks for a report of the run at the end of the current window (`watchdog`: of the longer
   * window that keeps an unfinished run's report alive without any change).
   */
  async report(runId: string, options: { watchdog?: boolean } = {}): Promise<void> {
    const every = options.watchdog ? this.settings.watchdogMs : this.settings.reportIntervalMs;
    const now = Date.now();
    const window = Math.floor(now / every);
    const data: ReportJobData = options.watchdog ? { kind: 'report', runId, heal: true } : { kind: 'report', runId };
    await this.runQueue.add('report', data, {
      ...REPORT_JOB_OPTIONS,
      jobId: `report-${runId}-${options.watchdog ? 'w' : 'r'}${window}`,
      delay: (window + 1) * every - now,
    });
  }

  /** The job of `runId` for `item` (a guest's or another kind's), if it exists. */
  itemJob(runId: string, item: string) {
    return this.guestQueue.getJob(itemJobId(runId, item));
  }
}
