/**
 * Apply runs Redis lost. Without the append-only file a Redis restart (or a FLUSHALL, or an
 * eviction under `maxmemory`) empties it: the run, its guest jobs and its report jobs are gone, and
 * nothing left in Redis knows the run existed. Its check run then says "Applying: 0 of 3 guests
 * done" and its comment "3 guests in progress" forever, although guests may have been written.
 *
 * So each worker process remembers, in its own memory, the runs it started or reported on and has
 * not seen finish — with what it last posted (the check run, the comment, the view). Now and then
 * it looks each one up: a run whose record is gone while it was unfinished can never finish
 * (finished runs are only let expire once complete), and the process says so on GitHub — the
 * check run completed as a failure, the comment marking the unfinished guests unknown and saying
 * what to do, and its deployments ended in `error`. One process does it (a mark in Redis, set
 * only once); the others forget the run.
 */
import { parseKeyText } from '../../core/kinds/resource-key.js';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { type ApplyRunView, renderLostApply } from '../../github/apply-comment.js';
import { APPLY_CHECK_NAME } from '../../github/check-names.js';
import { type CheckTarget, completeCheckRun, createCompletedCheckRun } from '../../github/check-runs.js';
import { APPLY_MARKER } from '../../core/render/render-apply.js';
import { ensureComment, type KnownComment } from '../../github/sticky-comment.js';
import type { ApplyRun, ApplyStore } from './apply-store.js';
import { endDeployments, findRunDeployments, type RunDeployments } from './deployments.js';

/** What a lost run's deployments say (GitHub keeps 140 characters). */
export const LOST_DEPLOYMENT = "the App's Redis lost this apply while it ran: what was written is unknown; /pve plan shows the cluster now";

/** What this process last knew of a run it has not seen finish. */
interface WatchedRun {
  run: ApplyRun;
  checkRunId?: number;
  /** The apply comment as this process last wrote it, when the run was the pull request's latest. */
  comment?: KnownComment;
  /** Whether the run's results were the pull request's comment at the last report. */
  latest: boolean;
  view?: ApplyRunView;
  /** The run's GitHub deployments as this process last knew them. */
  deployments?: RunDeployments;
  /** Looks that found the record gone. */
  misses: number;
}

/** What {@link LostRuns} needs. */
export interface LostRunsDeps {
  logger: Logger;
  redis: Redis;
  store: ApplyStore;
  github: (installationId: number) => Promise<ProbotOctokit>;
  /** The App's state prefix (the "reported lost" marks live beside the runs). */
  statePrefix: string;
  /** Whether runs have GitHub deployments (`APPLY_DEPLOYMENTS`): a lost run's are ended in `error`. */
  deployments?: boolean;
}

/** A view of a run no report has rendered yet: every item still queued. */
function queuedView(run: ApplyRun): ApplyRunView {
  return {
    pr: run.pr,
    headSha: run.headSha,
    mergeSha: run.mergeSha,
    trigger: run.trigger,
    ...(run.requestedBy !== undefined ? { requestedBy: run.requestedBy } : {}),
    startedAt: run.createdAt,
    finishedAt: run.createdAt,
    finished: [],
    inProgress: run.guests.map((guest) => {
      const [cluster = '', vmid = '0'] = guest.split('/');
      return { cluster, name: guest, vmid: Number(vmid), node: '', state: 'queued', steps: [] };
    }),
    ...(run.objects !== undefined
      ? {
          objects: [],
          objectsInProgress: run.objects.map((key) => {
            const parsed = parseKeyText(key);
            return {
              kind: parsed?.kind ?? '',
              key,
              cluster: parsed?.cluster ?? '',
              name: parsed?.id ?? key,
              state: 'queued' as const,
              steps: [],
            };
          }),
        }
      : {}),
  };
}

/** Runs this process started or reported on and has not seen finish; and what happens when Redis lost one. */
export class LostRuns {
  private readonly runs = new Map<string, WatchedRun>();

  constructor(private readonly deps: LostRunsDeps) {}

  /** Remembers a run (started here, or reported here) with what was last posted for it. */
  note(
    run: ApplyRun,
    posted: { checkRunId?: number; comment?: KnownComment; latest?: boolean; view?: ApplyRunView; deployments?: RunDeployments } = {},
  ): void {
    const known = this.runs.get(run.id);
    this.runs.set(run.id, {
      run,
      latest: posted.latest ?? known?.latest ?? true,
      misses: 0,
      ...((posted.checkRunId ?? known?.checkRunId) !== undefined ? { checkRunId: posted.checkRunId ?? known?.checkRunId } : {}),
      ...((posted.comment ?? known?.comment) !== undefined ? { comment: posted.comment ?? known?.comment } : {}),
      ...((posted.view ?? known?.view) !== undefined ? { view: posted.view ?? known?.view } : {}),
      ...((posted.deployments ?? known?.deployments) !== undefined ? { deployments: posted.deployments ?? known?.deployments } : {}),
    });
  }

  /** Forgets a run that finished (its last report completed the check run). */
  finished(runId: string): void {
    this.runs.delete(runId);
  }

  /** How many runs are remembered (for tests and metrics). */
  get size(): number {
    return this.runs.size;
  }

  /**
   * Looks up every remembered run; reports those whose record Redis no longer has. A Redis that
   * cannot be reached decides nothing: the next look tries again.
   */
  async check(): Promise<void> {
    for (const [runId, watched] of [...this.runs]) {
      let record: Awaited<ReturnType<ApplyStore['getRun']>>;
      try {
        record = await this.deps.store.getRun(runId);
      } catch (error) {
        this.deps.logger.debug({ err: error }, 'looking up unfinished applies failed: tried again later');
        return;
      }
      if (record) {
        // Completed by another process's report: kept 30 days, then let expire — not lost.
        if (record.checkCompleted) this.runs.delete(runId);
        continue;
      }
      watched.misses += 1;
      // A process that only started the run knows less than one that reported on it: it lets
      // that one go first, one look later.
      if (watched.view === undefined && watched.misses < 2) continue;
      try {
        await this.reportLost(watched);
        this.runs.delete(runId);
      } catch (error) {
        this.deps.logger.warn({ err: error, run: runId }, 'reporting a lost apply failed: tried again later');
      }
    }
  }

  private async reportLost(watched: WatchedRun): Promise<void> {
    const { run } = watched;
    const log = this.deps.logger.child({ run: run.id, repo: `${run.repo.owner}/${run.repo.name}`, pr: run.pr });
    // One process tells GitHub; the mark outlives every process's memory of the run.
    const mark = `${this.deps.statePrefix}:apply:lost:${run.id}`;
    if ((await this.deps.redis.set(mark, '1', 'EX', 30 * 24 * 3600, 'NX')) !== 'OK') {
      log.debug('a lost apply is reported by another process');
      return;
    }
    const view = watched.view ?? queuedView(run);
    const { body, check } = renderLostApply(view);
    const octokit = await this.deps.github(run.installationId);
    const target: CheckTarget = { owner: run.repo.owner, repo: run.repo.name, headSha: run.mergeSha };
    const checkRunId = watched.checkRunId ?? (await this.findCheckRun(octokit, run));
    if (checkRunId !== undefined) await completeCheckRun(octokit, target, checkRunId, check);
    else await createCompletedCheckRun(octokit, target, { name: APPLY_CHECK_NAME, externalId: run.id }, check);
    if (watched.latest) {
      await ensureComment(octokit, {
        owner: run.repo.owner,
        repo: run.repo.name,
        issueNumber: run.pr,
        marker: APPLY_MARKER,
        body,
        ...(watched.comment ? { known: watched.comment } : {}),
      });
    }
    if (this.deps.deployments) {
      // A process that never reported the run knows none of its deployments: GitHub does.
      const deployments = watched.deployments ?? (watched.view === undefined ? await findRunDeployments(octokit, run) : {});
      await endDeployments(this.deps.redis, this.deps.statePrefix, octokit, run, deployments, LOST_DEPLOYMENT, log);
    }
    log.warn({ unfinished: view.inProgress.length }, 'apply lost with Redis state: reported on the pull request');
  }

  /** The run's check run still in progress on the merge commit, when another process created it (its `external_id` is the run id). */
  private async findCheckRun(octokit: ProbotOctokit, run: ApplyRun): Promise<number | undefined> {
    const { data } = await octokit.rest.checks.listForRef({
      owner: run.repo.owner,
      repo: run.repo.name,
      ref: run.mergeSha,
      check_name: APPLY_CHECK_NAME,
      per_page: 100,
    });
    return data.check_runs.find((c) => c.external_id === run.id && c.status !== 'completed')?.id;
  }

  /** Looks every `everyMs` until the returned function is called (the timer keeps no process alive). */
  start(everyMs: number): () => void {
    let looking = false;
    const timer = setInterval(() => {
      if (looking) return;
      looking = true;
      void this.check().finally(() => {
        looking = false;
      });
    }, everyMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}
