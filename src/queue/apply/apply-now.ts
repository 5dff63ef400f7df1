/**
 * `/pve apply --now` (README "Apply windows"): the arguments `/pve apply` takes. `--now` starts a
 * run whose guests are let in outside their apply windows, and only an admin of the repository
 * may ask for it (the role GitHub's permission API reported when the command was accepted,
 * `src/github/permissions.ts`). Any other argument is refused rather than ignored. While the pull
 * request's latest run still has guests waiting, `--now` lets that run in instead of queueing a
 * second one behind it.
 */
import type { Redis } from 'ioredis';
import type { ApplyJobs } from './apply-jobs.js';
import { type ApplyStore, isFinal, type RunRecord, runItems } from './apply-store.js';

/** What the arguments ask for, or the reply that refuses them. */
export type ApplyOverride = { now: boolean; refusal?: undefined } | { now?: undefined; refusal: string };

/** Reads `/pve apply`'s arguments for `who` (`@login`), whose role is `role`. */
export function applyOverride(args: readonly string[], role: string | undefined, who: string): ApplyOverride {
  const unknown = args.filter((arg) => arg !== '--now');
  if (unknown.length > 0)
    return {
      refusal: `${who} nothing was applied: \`/pve apply\` takes no argument but \`--now\` (got \`${unknown.join(' ').replace(/`/g, '')}\`).`,
    };
  if (!args.includes('--now')) return { now: false };
  if (role !== 'admin')
    return {
      refusal:
        `${who} nothing was applied: \`/pve apply --now\` applies outside the apply windows, which only a repository admin may ask for, ` +
        `and GitHub reports **${role ?? 'none'}** for you. \`/pve apply\` without \`--now\` applies in the next window.`,
    };
  return { now: true };
}

/** `--now` marks outlive any run's report. */
const NOW_TTL_S = 7 * 86_400;

function nowKey(store: ApplyStore, runId: string): string {
  return `${store.statePrefix}:apply:run:${runId}:now`;
}

/** Whether the run was started with `--now` or let in by a later `/pve apply --now` ({@link letInNow}). */
export async function runLetInNow(store: ApplyStore, redis: Redis, record: RunRecord): Promise<boolean> {
  if (record.run.now === true) return true;
  return (await redis.exists(nowKey(store, record.run.id))) === 1;
}

/**
 * An admin's `/pve apply --now` while the pull request's latest run still has guests waiting (for
 * their window, say): that run is let in now — its parked guest jobs are woken and go ahead in
 * their order — rather than a second run queued behind it. Resolves the run let in, or undefined
 * when the latest run is finished (or gone) and a new run is started instead.
 */
export async function letInNow(
  deps: { store: ApplyStore; jobs: ApplyJobs; redis: Redis },
  repoId: number,
  pr: number,
): Promise<string | undefined> {
  const runId = await deps.store.latestRun(repoId, pr);
  const record = runId ? await deps.store.getRun(runId) : undefined;
  if (!runId || !record) return undefined;
  const results = await deps.store.results(runId);
  const open = runItems(record.run).filter((item) => {
    const status = results.get(item)?.status;
    return status === undefined || !isFinal(status);
  });
  if (open.length === 0) return undefined;
  await deps.redis.set(nowKey(deps.store, runId), '1', 'EX', NOW_TTL_S);
  for (const item of open) {
    const job = await deps.jobs.itemJob(runId, item);
    await job?.promote().catch(() => {});
  }
  await deps.jobs.report(runId);
  return runId;
}
