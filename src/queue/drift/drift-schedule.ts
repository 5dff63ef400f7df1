/**
 * The producer side of the drift queue: one BullMQ job scheduler per installed repository (a
 * repeatable drift run every configured interval), runs asked for by `/pve drift`, and the sync
 * job that makes the schedulers match the installations. Webhook handlers call it for
 * `installation` and `installation_repositories` events: each call is a Redis operation or two,
 * never a GitHub or Proxmox request.
 *
 * Upserting a scheduler that exists keeps its next run time (BullMQ keeps the slot when the
 * interval is unchanged), so restarts and repeated syncs do not move or add runs; a new one runs
 * at once, so a repository gets its first report soon after the App is installed on it.
 */
import type { JobsOptions, Queue } from 'bullmq';
import { KEEP_JOBS_SECONDS } from '../enqueue.js';
import type { DriftJobData, DriftQueueJob, RepoRef } from '../schema.js';

/** A repository the App is installed on, as the schedules need it. */
export interface InstalledRepo {
  installationId: number;
  repo: RepoRef;
}

/** What webhook handlers may do with the drift schedules; implemented by {@link DriftScheduler}. */
export interface DriftProducer {
  /** Schedules drift runs for these repositories (installation created, repositories added). */
  schedule(repos: readonly InstalledRepo[]): Promise<void>;
  /** Stops the drift runs of these repositories (repositories removed). */
  unschedule(repoIds: readonly number[]): Promise<void>;
  /** Stops every drift run of an installation (deleted or suspended). */
  unscheduleInstallation(installationId: number): Promise<void>;
  /** Asks for a sync of the schedules with the installations (at start, on unsuspend). */
  requestSync(): Promise<void>;
}

/** Options of every drift job: kept a day like plan jobs, retried once after a transient failure. */
export const DRIFT_JOB_OPTIONS: JobsOptions = {
  attempts: 2,
  backoff: { type: 'exponential', delay: 30_000 },
  removeOnComplete: { age: KEEP_JOBS_SECONDS },
  removeOnFail: { age: 7 * KEEP_JOBS_SECONDS },
};

const SCHEDULER_PREFIX = 'drift-repo-';

/** The scheduler id of a repository's drift runs. */
function driftSchedulerId(repoId: number): string {
  return `${SCHEDULER_PREFIX}${repoId}`;
}

/** Parses `owner/name` from an installation payload's repository (those carry no owner object). */
export function repoFromFullName(repo: { id: number; full_name: string }): RepoRef | undefined {
  const [owner, name, ...rest] = repo.full_name.split('/');
  if (!owner || !name || rest.length > 0) return undefined;
  return { id: repo.id, owner, name };
}

/** Keeps the drift schedules of a queue. */
export class DriftScheduler implements DriftProducer {
  /**
   * @param everyMs interval between scheduled runs of a repository; 0 turns scheduling off (and
   *   removes schedulers left from a configuration that had it on).
   * @param forget called for repositories whose schedule is removed (their figures leave `/metrics`).
   */
  constructor(
    private readonly queue: Queue,
    readonly everyMs: number,
    private readonly forget: (repoId: number) => Promise<void> = async () => {},
  ) {}

  async schedule(repos: readonly InstalledRepo[]): Promise<void> {
    if (this.everyMs <= 0) return;
    for (const { installationId, repo } of repos) {
      const data: DriftJobData = { kind: 'drift', installationId, repo, trigger: 'schedule' };
      await this.queue.upsertJobScheduler(
        driftSchedulerId(repo.id),
        { every: this.everyMs },
        { name: 'drift', data, opts: DRIFT_JOB_OPTIONS },
      );
    }
  }

  async unschedule(repoIds: readonly number[]): Promise<void> {
    for (const id of repoIds) {
      await this.queue.removeJobScheduler(driftSchedulerId(id));
      await this.forget(id);
    }
  }

  async unscheduleInstallation(installationId: number): Promise<void> {
    const scheduled = await this.scheduled();
    await this.unschedule(scheduled.filter((s) => s.installationId === installationId).map((s) => s.repo.id));
  }

  async requestSync(): Promise<void> {
    if (this.everyMs <= 0) {
      // Scheduling is off: schedules left from before must not keep firing.
      await this.unschedule((await this.scheduled()).map((s) => s.repo.id));
      return;
    }
    // One sync at a time however many workers start together: a second add while one waits or runs is dropped.
    const job: DriftQueueJob = { kind: 'sync' };
    await this.queue.add('sync', job, { ...DRIFT_JOB_OPTIONS, deduplication: { id: 'drift-sync' } });
  }

  /** Makes the schedules exactly `repos`: upserts them, removes the others. */
  async reconcile(repos: readonly InstalledRepo[]): Promise<{ scheduled: number; removed: number }> {
    const wanted = new Set(repos.map((r) => r.repo.id));
    const stale = (await this.scheduled()).filter((s) => !wanted.has(s.repo.id)).map((s) => s.repo.id);
    await this.schedule(repos);
    await this.unschedule(stale);
    return { scheduled: repos.length, removed: stale.length };
  }

  /** The repositories with a drift schedule now. */
  async scheduled(): Promise<InstalledRepo[]> {
    const schedulers = await this.queue.getJobSchedulers(0, -1);
    const found: InstalledRepo[] = [];
    for (const s of schedulers) {
      const id = s.key ?? s.id ?? '';
      const data = s.template?.data as Partial<DriftJobData> | undefined;
      if (!id.startsWith(SCHEDULER_PREFIX) || data?.repo === undefined || data.installationId === undefined) continue;
      found.push({ installationId: data.installationId, repo: data.repo });
    }
    return found;
  }

  /** Enqueues a drift run now (`/pve drift`); a retry of the same request adds nothing. */
  async runNow(data: DriftJobData, requestId: string): Promise<string> {
    const jobId = `drift-${requestId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    await this.queue.add('drift', data, { ...DRIFT_JOB_OPTIONS, jobId });
    return jobId;
  }
}
