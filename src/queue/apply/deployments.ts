/**
 * GitHub deployments of an apply run (README "Deployments"; on with `APPLY_DEPLOYMENTS=1`): one
 * deployment per cluster the run changes, environment = the cluster's name, on the merge commit,
 * and a status each time the cluster's state changes as its guests finish — `in_progress` while
 * any is going, then `success` when every one applied or was unchanged, else `failure` — so the
 * repository's Environments page shows what was applied where and when. Called by the run's
 * report under its posting lock; what was created and posted is kept in Redis, so a report run
 * again creates nothing twice. A GitHub error here is logged and leaves the comment and check run alone.
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

type DeploymentState = 'in_progress' | 'success' | 'failure';

/** One cluster's deployment as kept: its id and the last state posted. */
interface KeptDeployment {
  id: number;
  state?: DeploymentState;
}

function deploymentsKey(store: ApplyStore, runId: string): string {
  return `${store.statePrefix}:apply:run:${runId}:deployments`;
}

/** The state and description of each cluster of the run's view. */
export function clusterStates(view: ApplyRunView): Map<string, { state: DeploymentState; description: string }> {
  const clusters = new Map<string, { going: number; statuses: ApplyStatus[] }>();
  const of = (cluster: string) => {
    let entry = clusters.get(cluster);
    if (!entry) clusters.set(cluster, (entry = { going: 0, statuses: [] }));
    return entry;
  };
  for (const guest of view.finished) of(guest.cluster).statuses.push(guest.status);
  for (const guest of view.inProgress) of(guest.cluster).going++;
  const out = new Map<string, { state: DeploymentState; description: string }>();
  for (const [cluster, { going, statuses }] of clusters) {
    const counts = { applied: 0, unchanged: 0, conflict: 0, failed: 0, skipped: 0 };
    for (const status of statuses) counts[status]++;
    const done = applyVerdict(counts);
    if (going > 0) out.set(cluster, { state: 'in_progress', description: `${going} guest(s) going; ${done}` });
    else out.set(cluster, { state: counts.conflict + counts.failed + counts.skipped > 0 ? 'failure' : 'success', description: done });
  }
  return out;
}

/** Creates the run's deployments and posts the statuses that changed since the last report. */
export async function syncDeployments(
  redis: Redis,
  store: ApplyStore,
  octokit: ProbotOctokit,
  run: ApplyRun,
  view: ApplyRunView,
  log: Logger,
): Promise<void> {
  const key = deploymentsKey(store, run.id);
  const kept = await redis.hgetall(key);
  const owner = run.repo.owner;
  const repo = run.repo.name;
  try {
    for (const [cluster, { state, description }] of clusterStates(view)) {
      let deployment: KeptDeployment | undefined = kept[cluster] ? (JSON.parse(kept[cluster]) as KeptDeployment) : undefined;
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
    log.warn({ err: error, run: run.id }, 'the deployments of the apply could not be brought up to date');
  }
}
