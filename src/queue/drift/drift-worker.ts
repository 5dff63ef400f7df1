/**
 * The drift queue's worker. A drift run reads the repository's default branch (one archive, shared
 * with plans of pull requests based on it), reads every owned guest of every cluster with
 * READ-ONLY clients, builds the report (allow-list applied, first-seen times kept in Redis) and
 * keeps the "Drift report" issue current. It never writes to Proxmox: it holds no writer.
 *
 * One run per repository at a time across every worker: a Redis lock. A scheduled run finding the
 * lock held is skipped (a run is under way); a `/pve drift` run waits for it, so the person who
 * asked gets a report read after they asked. The sync job keeps the schedules in line with the
 * installations.
 */
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { ClusterConfigError } from '../../connections/cluster-connections.js';
import { envPrefix } from '../../core/cluster-name.js';
import { type ConnectOptions, clusterNames, configuredConnections, connectReadable } from '../../connections/connect.js';
import type { OpenClusters } from '../../connections/open-clusters.js';
import {
  buildDriftReport,
  type DriftReport,
  driftedGuestsByCluster,
  driftReportHasFindings,
  problemReport,
} from '../../core/drift/drift-report.js';
import { driftMarker, renderDriftClosing, renderDriftReport } from '../../core/render/render-drift.js';
import { observeDrift } from '../../engine/run-plan.js';
import { driftContentHash, ensureDriftIssue } from '../../github/drift-issue.js';
import { ArchiveError } from '../../github/read-archive.js';
import { adoptEnabled, RepoConfigError } from '../../github/repo-config.js';
import { repoFilePath } from '../../github/spec-repo.js';
import type { CommitSpecs, CommitSpecsCache } from '../commit-specs.js';
import type { DriftScheduler, InstalledRepo } from './drift-schedule.js';
import type { DriftStore } from './drift-store.js';
import { acquireLock, type HeldLock } from '../redis-lock.js';
import { type DriftJobData, DriftQueueJob } from '../schema.js';

/** What the drift worker needs; constructed by the worker role (`src/server/worker-role.ts`). */
interface DriftWorkerDeps {
  logger: Logger;
  redis: Redis;
  store: DriftStore;
  specs: CommitSpecsCache;
  scheduler: DriftScheduler;
  /** The installation's Octokit (`probot.auth(installationId)`). */
  github: (installationId: number) => Promise<ProbotOctokit>;
  /** The App's own Octokit (JWT), for listing installations. */
  appGithub: () => Promise<ProbotOctokit>;
  /** The server's cluster connections (never the repository's). */
  connections: Omit<ConnectOptions, 'warn' | 'logger'>;
  /** How often scheduled runs come, in words for the report ("every hour"); undefined when off. */
  schedule?: string | undefined;
  /** How long `/pve drift` waits for a run under way in another worker (default 10 minutes). */
  commandWaitMs?: number;
  now?: () => Date;
}

/** What became of a drift job. */
type DriftOutcome =
  | 'created'
  | 'updated'
  | 'reopened'
  | 'closed'
  | 'unchanged'
  | 'none'
  | 'skipped-running'
  | 'skipped-no-specs'
  | 'synced';

/** Proxmox's side of the run could not start: named in the report like an unreadable cluster. */
class DriftProblems extends Error {
  override name = 'DriftProblems';
  constructor(
    readonly headline: string,
    readonly problems: DriftReport['problems'],
  ) {
    super(headline);
  }
}

function status(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null ? (error as { status?: number }).status : undefined;
}

/** The default branch's newest commit, or undefined for an empty repository (GitHub answers 409). */
async function defaultBranchHead(octokit: ProbotOctokit, data: DriftJobData): Promise<string | undefined> {
  try {
    // GitHub answers an empty repository 409, which Octokit's retry plugin would repeat with backoff:
    // here it is an answer. A transient failure fails the job, and BullMQ runs it again.
    const { data: commits } = await octokit.rest.repos.listCommits({
      owner: data.repo.owner,
      repo: data.repo.name,
      per_page: 1,
      request: { retries: 0 },
    });
    return commits[0]?.sha;
  } catch (error) {
    if (status(error) === 409) return undefined;
    throw error;
  }
}

/**
 * Read-only clients for the clusters the server has a connection for and lets this repository
 * use; the others are reported as not read (with why, when the server's mapping refused them).
 */
async function openReaders(
  deps: DriftWorkerDeps,
  repo: DriftJobData['repo'],
  names: string[],
  log: Logger,
): Promise<{ open: OpenClusters; refused: Record<string, string> }> {
  const options: ConnectOptions = {
    ...deps.connections,
    warn: (message) => log.warn({ warning: message }, 'cluster connection'),
    logger: log,
    repository: `${repo.owner}/${repo.name}`,
  };
  try {
    return await connectReadable(names, options);
  } catch (error) {
    if (error instanceof ClusterConfigError) {
      throw new DriftProblems("The server's cluster connections are misconfigured", [{ message: error.message }]);
    }
    throw error;
  }
}

/** Reads the default branch's specs, or the problems that stop the report. */
async function readSpecs(deps: DriftWorkerDeps, octokit: ProbotOctokit, data: DriftJobData, sha: string): Promise<CommitSpecs> {
  let specs: CommitSpecs;
  try {
    specs = await deps.specs.base(octokit, data.repo, sha);
  } catch (error) {
    if (error instanceof RepoConfigError) {
      throw new DriftProblems('The App config of the default branch is invalid', [{ path: error.path, message: error.message }]);
    }
    if (error instanceof ArchiveError) {
      throw new DriftProblems('The repository cannot be read safely', [
        { ...(error.path ? { path: error.path } : {}), message: error.message },
      ]);
    }
    throw error;
  }
  if (specs.loaded.errors.length > 0) {
    throw new DriftProblems(
      "The default branch's specs are invalid",
      specs.loaded.errors.map((e) => ({ path: repoFilePath(specs.specRoot, e.file), line: e.line, message: e.message })),
    );
  }
  return specs;
}

/** Reads the estate and builds the report (or a report of what stopped it). */
async function buildReport(
  deps: DriftWorkerDeps,
  octokit: ProbotOctokit,
  data: DriftJobData,
  sha: string,
  log: Logger,
): Promise<{ report: DriftReport; specRoot: string; adopt?: boolean } | 'no-specs'> {
  const now = deps.now?.() ?? new Date();
  const previousFirstSeen = await deps.store.firstSeen(data.repo.id);
  let specs: CommitSpecs;
  try {
    specs = await readSpecs(deps, octokit, data, sha);
    if (specs.fileCount === 0) return 'no-specs';
    const { open, refused } = await openReaders(deps, data.repo, clusterNames(specs.loaded.specs), log);
    try {
      const { plan, observed } = await observeDrift({
        head: specs.loaded.specs,
        readers: open.clusters,
        access: open.access,
        ref: sha,
        unavailable: refused,
      });
      const report = buildDriftReport({
        plan,
        observed,
        specs: specs.loaded.specs,
        allow: specs.config?.drift?.allow ?? [],
        previousFirstSeen,
        now,
        ref: sha,
      });
      return { report, specRoot: specs.specRoot, adopt: adoptEnabled(specs.config) };
    } finally {
      await open.close();
    }
  } catch (error) {
    if (!(error instanceof DriftProblems)) throw error;
    return {
      report: problemReport({ ref: sha, now, headline: error.headline, problems: error.problems, previousFirstSeen }),
      specRoot: '',
    };
  }
}

/** One line per finding a person may grep the logs for, each bound to its guest. */
function logFindings(report: DriftReport, log: Logger): void {
  for (const guest of report.guests) {
    log
      .child({ guest: `${guest.cluster}/${guest.name}`, vmid: guest.vmid })
      .info(
        { keys: guest.findings.map((f) => f.key) },
        guest.findings[0]?.kind === 'orphan' || guest.findings[0]?.kind === 'unowned' ? guest.findings[0].kind : 'drift',
      );
  }
  for (const guest of report.guestErrors) {
    log.child({ guest: `${guest.cluster}/${guest.name}`, vmid: guest.vmid }).warn({ messages: guest.messages }, 'guest not read');
  }
  for (const cluster of report.clusters) {
    if (cluster.unreadable !== undefined) log.warn({ cluster: cluster.name, why: cluster.unreadable }, 'cluster not read');
  }
}

function summaryLine(report: DriftReport): string {
  const sum = (key: 'drifted' | 'orphans' | 'unowned' | 'pending' | 'errors'): number => report.clusters.reduce((n, c) => n + c[key], 0);
  const unread = report.clusters.filter((c) => c.unreadable !== undefined).map((c) => `\`${c.name}\``);
  const parts = [
    `${sum('drifted')} drifted`,
    `${sum('orphans')} orphaned`,
    `${sum('unowned')} unowned in range`,
    `${sum('pending')} waiting for a restart`,
  ];
  return `${parts.join(', ')}${unread.length > 0 ? `; not read: ${unread.join(', ')}` : ''}`;
}

/** The drift run itself, under the repository's lock. */
async function runDriftReport(deps: DriftWorkerDeps, data: DriftJobData, lock: HeldLock, log: Logger): Promise<DriftOutcome> {
  const octokit = await deps.github(data.installationId);
  const sha = await defaultBranchHead(octokit, data);
  if (sha === undefined) {
    log.info('the repository is empty: no drift report');
    return 'skipped-no-specs';
  }
  const built = await buildReport(deps, octokit, data, sha, log.child({ ref: sha }));
  if (built === 'no-specs') {
    log.info({ ref: sha }, 'no specs on the default branch: no drift report');
    return 'skipped-no-specs';
  }
  const { report, specRoot, adopt } = built;
  logFindings(report, log);
  const findings = driftReportHasFindings(report);
  const contentHash = driftContentHash(report);
  const body = renderDriftReport(report, {
    marker: driftMarker(contentHash),
    repoPath: (file) => repoFilePath(specRoot, file),
    schedule: deps.schedule,
    adopt: adopt === true,
  });
  // A holder that lost its lock (paused past its expiry) must not write over a newer run.
  if (lock.lost.aborted) throw new Error('the drift lock of this repository was lost during the run; it runs again');
  const known = await deps.store.issue(data.repo.id);
  const { action, issue } = await ensureDriftIssue(octokit, {
    owner: data.repo.owner,
    repo: data.repo.name,
    known,
    findings,
    contentHash,
    body,
    closingComment: renderDriftClosing(report),
  });
  await deps.store.setIssue(data.repo.id, issue);
  await deps.store.setFirstSeen(data.repo.id, report.firstSeen);
  await deps.store.setDrifted(data.repo.id, `${data.repo.owner}/${data.repo.name}`, driftedGuestsByCluster(report));
  log.info({ ref: sha, issue: issue.number, action, findings, summary: summaryLine(report) }, 'drift report done');

  if (data.replyTo !== undefined) {
    const where = issue.number !== 0 ? ` The drift report is #${issue.number}.` : '';
    const text = findings
      ? `Drift checked against the default branch at \`${sha.slice(0, 7)}\`: ${summaryLine(report)}.${where}`
      : `Drift checked against the default branch at \`${sha.slice(0, 7)}\`: no drift, every owned guest matches.${where}`;
    await octokit.rest.issues.createComment({ owner: data.repo.owner, repo: data.repo.name, issue_number: data.replyTo, body: text });
  }
  return action;
}

/** Lists every installation's repositories and makes the schedules match. */
async function sync(deps: DriftWorkerDeps, log: Logger): Promise<DriftOutcome> {
  const app = await deps.appGithub();
  const installations = await app.paginate(app.rest.apps.listInstallations, { per_page: 100 });
  const repos: InstalledRepo[] = [];
  for (const installation of installations) {
    if (installation.suspended_at) continue;
    const octokit = await deps.github(installation.id);
    const accessible = await octokit.paginate(octokit.rest.apps.listReposAccessibleToInstallation, { per_page: 100 });
    for (const repo of accessible) {
      // An archived repository cannot take an issue, and nothing applies to it any more.
      if (repo.archived) continue;
      repos.push({ installationId: installation.id, repo: { id: repo.id, owner: repo.owner.login, name: repo.name } });
    }
  }
  const result = await deps.scheduler.reconcile(repos);
  log.info({ installations: installations.length, ...result }, 'drift schedules synced');
  if (repos.length > 1) await warnUnmapped(deps, repos.length, log);
  return 'synced';
}

/**
 * With more than one repository installed, a connection without a repository mapping lets every
 * one of them plan and apply on its cluster: the default suits one spec repository, so say so
 * (docs/github-app.md, "Which repositories may use which clusters").
 */
async function warnUnmapped(deps: DriftWorkerDeps, repositories: number, log: Logger): Promise<void> {
  let connections: Awaited<ReturnType<typeof configuredConnections>>;
  try {
    connections = await configuredConnections(deps.connections);
  } catch {
    return; // A malformed connection is reported where it is used.
  }
  for (const connection of connections) {
    if (connection.repositories !== undefined) continue;
    log.warn(
      { cluster: connection.name, repositories, setting: `${envPrefix(connection.name)}REPOSITORIES` },
      'every installed repository may plan and apply on this cluster: name the ones that may in the setting',
    );
  }
}

/** The processor BullMQ calls for each drift-queue job. */
export function createDriftProcessor(deps: DriftWorkerDeps): (job: Job) => Promise<DriftOutcome> {
  return async (job) => {
    const data = DriftQueueJob.parse(job.data);
    if (data.kind === 'sync') return sync(deps, deps.logger.child({ job: job.id, kind: 'sync' }));
    const log = deps.logger.child({
      job: job.id,
      kind: 'drift',
      trigger: data.trigger,
      repo: `${data.repo.owner}/${data.repo.name}`,
      ...(data.deliveryId ? { delivery: data.deliveryId } : {}),
      ...(data.replyTo !== undefined ? { pr: data.replyTo } : {}),
    });
    const waitMs = data.trigger === 'schedule' ? 0 : (deps.commandWaitMs ?? 600_000);
    const lock = await acquireLock(deps.redis, deps.store.lockKey(data.repo.id), { ttlMs: 60_000, waitMs });
    if (!lock) {
      if (data.trigger === 'schedule') {
        log.info('a drift run of this repository is under way in another worker: this scheduled one is skipped');
        return 'skipped-running';
      }
      throw new Error(`a drift run of ${data.repo.owner}/${data.repo.name} held the lock for over ${waitMs} ms`);
    }
    log.debug({ fence: lock.token }, 'drift lock taken');
    try {
      return await runDriftReport(deps, data, lock, log);
    } finally {
      await lock.release();
    }
  };
}
