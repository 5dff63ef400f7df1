/**
 * `dependsOn` in the App's queue (README "Order between guests: dependsOn"): a guest item whose
 * plan has `after` keys waits — parked, holding no worker, no ticket, no lock, no slot — until
 * each of those guests of its run has its result; it is held (recorded skipped and retryable,
 * never written) when one of them did not apply. A parked item puts itself in the waiters set of
 * each guest it waits for; the worker that records that guest's result wakes them
 * (`wakeDependents`). The delay is only the fallback for a worker that died before waking anyone.
 */
import { DelayedError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ApplyStatus } from '../../core/apply-result.js';
import type { GuestPlan } from '../../core/model.js';
import { heldGuestResult } from '../../engine/guest-order.js';
import type { ApplyJobs } from './apply-jobs.js';
import { type ApplyStore, type FinishOutcome, type GuestProgress, isFinal, runItems } from './apply-store.js';

/** Statuses after which a dependent may go ahead. */
const FOLLOWABLE: ReadonlySet<string> = new Set(['applied', 'unchanged']);

/** Waiters sets outlive any run's report. */
const WAITERS_TTL_S = 7 * 86_400;

/** What {@link awaitDependencies} needs of the job that runs the item. */
export interface DependencyJob {
  store: ApplyStore;
  jobs: ApplyJobs;
  redis: Redis;
  log: Logger;
  job: Job;
  token: string | undefined;
  runId: string;
  item: string;
  /** How long a parked job waits for a missed wake-up. */
  lockMs: number;
  /** Records a held item's result like any other (wakes the next run and phase). */
  finished: (outcome: FinishOutcome) => Promise<void>;
}

/**
 * Returns when the guest may go ahead; the held status when a guest it depends on did not apply
 * (recorded); otherwise parks the job (throws BullMQ's DelayedError).
 */
export async function awaitDependencies(run: DependencyJob, previous: GuestProgress): Promise<ApplyStatus | undefined> {
  const { store } = run;
  let plan: GuestPlan;
  try {
    plan = await store.guestPlan(run.runId, run.item);
  } catch {
    return undefined; // unreadable: the apply step says so and fails it for good
  }
  if (!plan.after || plan.after.length === 0) return undefined;
  const record = await store.getRun(run.runId);
  const inRun = new Set(record ? runItems(record.run) : []);
  const after = plan.after.filter((key) => inRun.has(key));
  const look = async (): Promise<{ blocker?: { key: string; status: ApplyStatus }; open: string[] }> => {
    const results = await store.resultsOf(run.runId, after);
    const open: string[] = [];
    for (const key of after) {
      const status = results.get(key)?.status;
      if (status === undefined || !isFinal(status)) open.push(key);
      else if (!FOLLOWABLE.has(status)) return { blocker: { key, status }, open };
    }
    return { open };
  };
  const first = await look();
  if (first.blocker) return hold(run, plan, previous, first.blocker);
  if (first.open.length === 0) return undefined;
  for (const key of first.open) {
    const waiters = store.waitersKey(run.runId, key);
    await run.redis.multi().sadd(waiters, run.item).expire(waiters, WAITERS_TTL_S).exec();
  }
  const waiting = `waiting for ${first.open.join(', ')} it depends on (dependsOn) to finish`;
  if (previous.status !== 'waiting' || previous.waiting !== waiting) {
    if ((await store.setProgress(run.runId, run.item, { ...previous, status: 'waiting', waiting })) === 'written')
      await run.jobs.report(run.runId);
  }
  run.log.debug({ waitingFor: first.open }, 'a guest it depends on has no result yet: parked');
  await run.job.moveToDelayed(Date.now() + run.lockMs, run.token);
  // A dependency may have finished between the look and the move, when no delayed job was there to wake.
  if ((await look()).open.length === 0) await run.job.promote().catch(() => {});
  throw new DelayedError();
}

async function hold(
  run: DependencyJob,
  plan: GuestPlan,
  previous: GuestProgress,
  blocker: { key: string; status: ApplyStatus },
): Promise<ApplyStatus> {
  const names = await run.store.guestPlan(run.runId, blocker.key).then(
    (p) => p.name,
    () => undefined,
  );
  const held = heldGuestResult(plan, blocker, names);
  const result: GuestProgress = { ...previous, ...held, finishedAt: new Date().toISOString() };
  delete result.waiting;
  const outcome = await run.store.finish(run.runId, run.item, result);
  run.log.info({ blocker: blocker.key, blockerStatus: blocker.status }, 'held: a guest it depends on did not apply');
  await run.finished(outcome);
  await run.jobs.report(run.runId);
  return held.status;
}

/** Wakes the items of the run parked until `item` finished. */
export async function wakeDependents(store: ApplyStore, jobs: ApplyJobs, redis: Redis, runId: string, item: string): Promise<void> {
  const waiters = await redis.smembers(store.waitersKey(runId, item));
  await Promise.all(
    waiters.map(async (key) => {
      const job = await jobs.itemJob(runId, key);
      await job?.promote().catch(() => {});
    }),
  );
}
