/**
 * GitHub deployments of an apply run (README "Deployments"; on unless `APPLY_DEPLOYMENTS=0`): one
 * deployment per cluster the run changes, environment = the cluster's name, on the merge commit,
 * and a status each time the cluster's state changes as its items finish — `in_progress` while
 * any is going, then `success` when every one applied or was unchanged, else `failure` — so the
 * repository's Environments page shows what was applied where and when. Called by the run's
 * report under its posting lock; what was created and posted is kept in Redis, so a report run
 * again creates nothing twice. A GitHub error here is logged and leaves the comment and check run alone.
 *
 * An installation that has not accepted `deployments: write` (the permission came after many
 * were installed) answers 403: that is said once, with what to do, and the installation's
 * deployments are not tried again for an hour — a mark in Redis with that expiry, so every worker
 * agrees and none sends a request GitHub will refuse on each report. A run Redis lost ends its
 * deployments in `error` (`lost-runs.ts`, {@link endDeployments}).
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import type { ApplyStatus } from '../../core/apply-result.js';
import { applyVerdict } from '../../core/render/render-apply.js';
import type { ApplyRunView } from '../../github/apply-comment.js';
import type { ApplyRun, ApplyStore } from './apply-store.js';

/** Kept as long as any run's state. */
const DEPLOYMENTS_TTL_S = 7 * 86_400;

/** How long an installation that refused deployments (403) is left alone. */
const DEPLOYMENTS_DENIED_TTL_S = 3600;

type DeploymentState = 'in_progress' | 'success' | 'failure';

/** Cluster name → deployment id: what a run created, remembered for a run Redis may lose. */
export type RunDeployments = Record<string, number>;

/** One cluster's deployment as kept: its id and the last state posted. */
interface KeptDeployment {
  id: number;
  state?: DeploymentState;
}

function deploymentsKey(store: ApplyStore, runId: string): string {
  return `${store.statePrefix}:apply:run:${runId}:deployments`;
}

/** The mark of an installation whose deployments GitHub refused (403), kept {@link DEPLOYMENTS_DENIED_TTL_S}. */
export function deploymentsDeniedKey(statePrefix: string, installationId: number): string {
  return `${statePrefix}:apply:deployments-denied:${installationId}`;
}

function isForbidden(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { status?: unknown }).status === 403;
}

/**
 * After a GitHub error on deployments: a 403 marks the installation for an hour and is logged at
 * warn by the one worker that set the mark; anything else is logged as it comes.
 */
async function onDeploymentError(redis: Redis, statePrefix: string, run: ApplyRun, error: unknown, log: Logger): Promise<void> {
  if (!isForbidden(error)) {
    log.warn({ err: error, run: run.id }, 'the deployments of the apply could not be brought up to date');
    return;
  }
  const mark = deploymentsDeniedKey(statePrefix, run.installationId);
  if ((await redis.set(mark, '1', 'EX', DEPLOYMENTS_DENIED_TTL_S, 'NX')) !== 'OK') return;
  log.warn(
    { installation: run.installationId, retryInS: DEPLOYMENTS_DENIED_TTL_S, status: 403 },
    "GitHub refused the apply's deployments: the installation has not granted deployments: write. Accept the permission in the installation's settings, or set APPLY_DEPLOYMENTS=0 on the App; not tried again for this installation for an hour",
  );
}

/** Whether the installation's deployments are left alone now (GitHub refused them within the hour). */
async function denied(redis: Redis, statePrefix: string, installationId: number): Promise<boolean> {
  return (await redis.exists(deploymentsDeniedKey(statePrefix, installationId))) === 1;
}

/** Every item of the view with its cluster: finished ones with their status, the others as going. */
function viewItems(view: ApplyRunView): { cluster: string; status?: ApplyStatus }[] {
  return [
    ...view.finished.map((g) => ({ cluster: g.cluster, status: g.status })),
    ...(view.objects ?? []).map((o) => ({ cluster: o.cluster, status: o.status })),
    ...view.inProgress.map((g) => ({ cluster: g.cluster })),
    ...(view.objectsInProgress ?? []).map((o) => ({ cluster: o.cluster })),
  ];
}

/** The state and description of each cluster of the run's view. */
export function clusterStates(view: ApplyRunView): Map<string, { state: DeploymentState; description: string }> {
  const clusters = new Map<string, { going: number; statuses: ApplyStatus[] }>();
  const of = (cluster: string) => {
    let entry = clusters.get(cluster);
    if (!entry) clusters.set(cluster, (entry = { going: 0, statuses: [] }));
    return entry;
  };
  for (const item of viewItems(view)) {
    if (item.status === undefined) of(item.cluster).going++;
    else of(item.cluster).statuses.push(item.status);
  }
  const out = new Map<string, { state: DeploymentState; description: string }>();
  for (const [cluster, { going, statuses }] of clusters) {
    const counts = { applied: 0, unchanged: 0, conflict: 0, failed: 0, skipped: 0 };
    for (const status of statuses) counts[status]++;
    const done = applyVerdict(counts);
    if (going > 0) out.set(cluster, { state: 'in_progress', description: `${going} item(s) going; ${done}` });
    else out.set(cluster, { state: counts.conflict + counts.failed + counts.skipped > 0 ? 'failure' : 'success', description: done });
  }
  return out;
}

/**
 * Creates the run's deployments and posts the statuses that changed since the last report;
 * returns the run's deployments as now known (none while the installation refuses them).
 */
export async function syncDeployments(
  redis: Redis,
  store: ApplyStore,
  octokit: ProbotOctokit,
  run: ApplyRun,
  view: ApplyRunView,
  log: Logger,
): Promise<RunDeployments> {
  const key = deploymentsKey(store, run.id);
  const kept = new Map(Object.entries(await redis.hgetall(key)).map(([cluster, text]) => [cluster, JSON.parse(text) as KeptDeployment]));
  const known: RunDeployments = {};
  for (const [cluster, { id }] of kept) known[cluster] = id;
  if (await denied(redis, store.statePrefix, run.installationId)) return known;
  const owner = run.repo.owner;
  const repo = run.repo.name;
  try {
    for (const [cluster, { state, description }] of clusterStates(view)) {
      let deployment = kept.get(cluster);
      if (!deployment) {
        const { data } = await octokit.rest.repos.createDeployment({
          owner,
          repo,
          ref: run.mergeSha,
          environment: cluster,
          auto_merge: false,
          required_contexts: [],
          description: `pve-gitops: apply of #${run.pr} on ${cluster}`,
          payload: { run: run.id, pr: run.pr },
        });
        const id = (data as { id?: number }).id;
        if (typeof id !== 'number') throw new Error(`GitHub did not create the deployment of ${cluster}`);
        deployment = { id };
        known[cluster] = id;
        await redis.multi().hset(key, cluster, JSON.stringify(deployment)).expire(key, DEPLOYMENTS_TTL_S).exec();
      }
      if (deployment.state === state) continue;
      await octokit.rest.repos.createDeploymentStatus({
        owner,
        repo,
        deployment_id: deployment.id,
        state,
        description: description.slice(0, 140),
        environment: cluster,
        auto_inactive: state === 'success',
      });
      await redis
        .multi()
        .hset(key, cluster, JSON.stringify({ ...deployment, state }))
        .expire(key, DEPLOYMENTS_TTL_S)
        .exec();
    }
  } catch (error) {
    await onDeploymentError(redis, store.statePrefix, run, error, log);
  }
  return known;
}

/**
 * The deployments of `run` GitHub holds on its merge commit (their payload names the run): for a
 * process that must end a run's deployments it never created.
 */
export async function findRunDeployments(octokit: ProbotOctokit, run: ApplyRun): Promise<RunDeployments> {
  const { data } = await octokit.rest.repos.listDeployments({
    owner: run.repo.owner,
    repo: run.repo.name,
    sha: run.mergeSha,
    per_page: 100,
  });
  const found: RunDeployments = {};
  for (const deployment of data) {
    const payload = typeof deployment.payload === 'string' ? {} : deployment.payload;
    if ((payload as { run?: unknown }).run === run.id) found[deployment.environment] = deployment.id;
  }
  return found;
}

/**
 * Ends every deployment of a run that can no longer finish (Redis lost it) with state `error`
 * and `description` (GitHub keeps 140 characters). A refusal or error is logged; it never stops
 * the check run and comment of the lost run from being posted.
 */
export async function endDeployments(
  redis: Redis,
  statePrefix: string,
  octokit: ProbotOctokit,
  run: ApplyRun,
  deployments: RunDeployments,
  description: string,
  log: Logger,
): Promise<void> {
  try {
    for (const [cluster, id] of Object.entries(deployments)) {
      await octokit.rest.repos.createDeploymentStatus({
        owner: run.repo.owner,
        repo: run.repo.name,
        deployment_id: id,
        state: 'error',
        description: description.slice(0, 140),
        environment: cluster,
      });
    }
  } catch (error) {
    await onDeploymentError(redis, statePrefix, run, error, log);
  }
}
