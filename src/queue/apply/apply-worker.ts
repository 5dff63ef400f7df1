/**
 * The item job: applies one item of an apply run — a guest, or an item of another kind (a pool, a
 * guest's pool membership) — in merge order, alone. The steps below are a guest's; an item of
 * another kind goes through the same ticket and lock under its own key (opaque here), then its
 * kind's executor (`applyObjectUnderLock`).
 *
 * 1. An item that already has its result (the job ran to its end before, then its worker died)
 *    only makes sure the next run in line, and the run's next phase, is woken.
 *    Then, in a run with items of other kinds, an item of a later phase waits (parked) until every
 *    item of earlier phases of its run on its cluster has its result: the worker that records the
 *    last of them wakes it (`openNextPhases`). An item whose `after` item did not apply is held:
 *    recorded skipped and retryable, never written.
 * 2. The job runs only while its run's ticket heads the guest's FIFO (`apply-store.ts`). Otherwise
 *    it parks: BullMQ's `moveToDelayed` + `DelayedError`, so a waiting guest holds no worker
 *    concurrency. The head wakes the next ticket's job (`promote`) when it finishes; the delay is
 *    only the fallback for a head whose worker died before waking anyone. A head whose job failed
 *    for good or vanished is taken out of the FIFO by the first waiter that finds it.
 * 3. It takes the guest's Redis lock (fencing token, expiry, renewed while held): two instances of
 *    one job — BullMQ runs a job again when its worker looks dead, which a paused worker may not
 *    be — never apply the guest at once. A dead worker's lock expires after one lock duration.
 * 4. `applyGuest` (the engine) re-reads before every write and compares with the reviewed change.
 *    Before every step it takes a slot of the per-cluster and per-node limits shared by all
 *    workers (`src/queue/redis-slots.ts`); a guest waiting out a Proxmox lock holds no slot and keeps its
 *    place in the FIFO.
 * 5. Steps are recorded as they happen, and every write is recorded before its request is sent —
 *    fenced by the guest lock, so a job that lost the lock sends nothing. A run of the job after a
 *    crash thus reports the writes of the one before (the engine finds them done: `unchanged`
 *    becomes `applied`). The result is recorded, the ticket removed and the next run woken in one
 *    fenced step.
 *
 * Failures: a result marked `retryable` (the cluster unreachable, a timeout) is thrown so BullMQ
 * runs the job again with backoff, keeping its ticket (so later merges still wait); on the last
 * attempt it is recorded as failed, saying `/pve apply` runs it again. Conflicts, refusals,
 * permission and validation errors are results, recorded at once and never retried.
 */
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ClusterConfigError } from '../../connections/cluster-connections.js';
import { MissingConnectionError, RepositoryNotAllowedError } from '../../connections/connect.js';
import { type ApplyStatus, type ApplyStep, isWritingStep, type ObjectApplyResult } from '../../core/apply-result.js';
import { phaseRank } from '../../core/kinds/kind.js';
import { kindHasNode } from '../../core/kinds/registry.js';
import type { GuestPlan, ObjectPlan } from '../../core/model.js';
import type { ClusterWriter, WriteResult } from '../../core/ports.js';
import { type ApplyEvent, applyGuest } from '../../engine/apply-guest.js';
import { applyObject, heldResult } from '../../engine/apply-object.js';
import type { ApplyJobs } from './apply-jobs.js';
import {
  type ApplyStore,
  type Fence,
  type FinishOutcome,
  GuestPlanMissingError,
  type GuestProgress,
  type ItemProgress,
  isFinal,
  isGuestProgress,
  type ObjectProgress,
  phaseOfKey,
  runItems,
  StoredItemRefusedError,
} from './apply-store.js';
import { acquireLock, type HeldLock } from '../redis-lock.js';
import { awaitDependencies, type DependencyJob, wakeDependents } from './depends-on.js';
import { type AcquireRestart, redisRestartSlots } from './restart-slots.js';
import { restartInterrupted } from '../../engine/restart-guest.js';
import { runLetInNow } from './apply-now.js';
import { fencedSnapshots, runSnapshotName } from './fenced-snapshots.js';
import { awaitWindow, DEFAULT_WINDOW_RECHECK_MS, type WindowClock, type WindowJob, wallClock, windowOpen } from './apply-windows.js';
import type { OpenWriter } from './cluster-writers.js';
import type { RedisSlots } from '../redis-slots.js';
import { ItemJobData, itemKeyOfJob, type RepoRef } from '../schema.js';
import { z } from 'zod';
import { errorMessage } from '../../util/error-message.js';

/** What the guest worker needs; constructed by the composition root (`src/server/serve.ts`). */
export interface GuestWorkerDeps {
  logger: Logger;
  redis: Redis;
  store: ApplyStore;
  jobs: ApplyJobs;
  slots: RedisSlots;
  /** The writing client of a cluster and the server's host-access policy for it (`ClusterWriters.get`). */
  /** The writer of a cluster for the specs of a repository (`owner/name`; the server may not let it use the cluster). */
  writer: (cluster: string, repository: string) => Promise<OpenWriter>;
  settings: {
    /** Expiry of the guest lock (renewed while held), and how long a parked job waits for a missed wake-up. */
    lockMs: number;
    /** How long a Proxmox lock is waited out before the guest is reported. */
    lockWaitMs: number;
    /** First pause while a Proxmox lock is waited out (the engine doubles it up to 15 s). */
    lockPollMs?: number;
  };
  /** Aborted when the worker process stops: running applies hand their jobs back to the queue. */
  stopping?: AbortSignal;
  /** The restarts in flight per cluster (default: Redis slots under the store's prefix, `restart-slots.ts`). */
  restarts?: AcquireRestart;
  /** Told every guest result this process records (the applies metric). */
  onResult?: (status: ApplyStatus) => void;
  /** The time apply windows are judged by (default: the wall clock; tests move their own). */
  clock?: WindowClock;
  /** The longest a guest parked outside its apply window waits before it looks again (default 5 minutes). */
  windowRecheckMs?: number;
}

/** Whether steps of an earlier run of the job changed the guest (a task, or a write that did not fail). */
function wrote(steps: readonly ApplyStep[]): boolean {
  return steps.some((s) => isWritingStep(s) && (s.upid !== undefined || !s.detail?.endsWith(': failed')));
}

/** The worker process is stopping: the job goes back to the queue for another worker. */
class StoppingError extends Error {
  override name = 'StoppingError';
}

/** A job that started applying too late to be allowed in: a newer holder has the guest's lock. */
class LockLostError extends Error {
  override name = 'LockLostError';
}

/** A head whose merge job may still be adding its guest jobs is left alone this long. */
const STARTING_GRACE_MS = 10 * 60_000;

/**
 * Why a guest's job can no longer finish it — failed for good (its worker died on the last
 * attempt, say) or gone — or undefined while it still can (waiting, parked, running, retrying).
 * A job not found right after its run was created may still be on its way: its merge job adds
 * the guest jobs after the tickets.
 */
export async function lostJobReason(store: ApplyStore, jobs: ApplyJobs, runId: string, item: string): Promise<string | undefined> {
  const job = await jobs.itemJob(runId, item);
  if (!job) {
    const record = await store.getRun(runId);
    if (record && !record.queued && Date.now() - Date.parse(record.run.createdAt) < STARTING_GRACE_MS) return undefined;
    return 'its job is gone';
  }
  const state = await job.getState();
  if (state === 'failed') return `its job failed: ${job.failedReason}`;
  if (state === 'completed' || state === 'unknown') return 'its job ended without recording a result';
  return undefined;
}

/**
 * Records a guest whose job can no longer finish it as failed (`/pve apply` runs it again), takes
 * its ticket out of the FIFO and wakes the next run in line. False when nothing was done (with
 * `onlyIfHead`, the run was not the head any more).
 */
export async function finishLost(
  store: ApplyStore,
  jobs: ApplyJobs,
  runId: string,
  item: string,
  why: string,
  options: { onlyIfHead?: boolean } = {},
): Promise<boolean> {
  const before = await store.result(runId, item);
  if (!before || isFinal(before.status)) return false;
  const outcome = await store.finish(
    runId,
    item,
    {
      ...before,
      status: 'failed',
      retryable: true,
      error: `the apply of this guest could not finish (${why}); /pve apply runs it again`,
      finishedAt: new Date().toISOString(),
    },
    options,
  );
  if (outcome.state === 'not-head') return false;
  const next = outcome.next ? await jobs.itemJob(outcome.next, item) : undefined;
  await next?.promote().catch(() => {});
  if (outcome.phaseDone) await openNextPhases(store, jobs, runId, item);
  await jobs.report(runId);
  return true;
}

/**
 * The last item of a phase on its cluster has its result (`FinishOutcome.phaseDone`): wakes the
 * run's items of later phases on that cluster, parked until now (`waitForPhase`). Waking one that
 * is not parked, or whose own earlier phase is still going, does nothing: it parks again.
 */
export async function openNextPhases(store: ApplyStore, jobs: ApplyJobs, runId: string, item: string): Promise<void> {
  const record = await store.getRun(runId);
  if (!record) return;
  const { phase, cluster } = phaseOfKey(item);
  const later = runItems(record.run).filter((key) => {
    const of = phaseOfKey(key);
    return of.cluster === cluster && phaseRank(of.phase) > phaseRank(phase);
  });
  for (let i = 0; i < later.length; i += 100) {
    await Promise.all(
      later.slice(i, i + 100).map(async (key) => {
        const job = await jobs.itemJob(runId, key);
        await job?.promote().catch(() => {});
      }),
    );
  }
}

/**
 * The cluster's writer, with `before(op)` awaited before every write request: the job records
 * the write it is about to send — fenced by the guest lock, so a job that lost the lock throws
 * here and sends nothing.
 */
function fencedWriter(writer: ClusterWriter, before: (op: string) => Promise<void>): ClusterWriter {
  const write =
    <A extends unknown[]>(op: string, send: (...args: A) => Promise<WriteResult>) =>
    async (...args: A): Promise<WriteResult> => {
      await before(op);
      return send(...args);
    };
  return {
    cluster: writer.cluster,
    listGuests: () => writer.listGuests(),
    listNodes: () => writer.listNodes(),
    readGuest: (listed, options) => writer.readGuest(listed, options),
    vmidExists: (vmid) => writer.vmidExists(vmid),
    readGuestForApply: (ref) => writer.readGuestForApply(ref),
    activeTasks: (ref) => writer.activeTasks(ref),
    create: write('create', (ref, params, context) => writer.create(ref, params, context)),
    updateConfig: write('config', (ref, set, remove, digest, context) => writer.updateConfig(ref, set, remove, digest, context)),
    resize: write('resize', (ref, disk, size, digest, context) => writer.resize(ref, disk, size, digest, context)),
    moveDisk: write('move-disk', (ref, disk, storage, digest, context) => writer.moveDisk(ref, disk, storage, digest, context)),
    start: write('start', (ref, context) => writer.start(ref, context)),
    shutdown: write('shutdown', (ref, context, options) => writer.shutdown(ref, context, options)),
    stop: write('stop', (ref, context) => writer.stop(ref, context)),
    destroy: write('destroy', (ref, context) => writer.destroy(ref, context)),
    ...cloneWrites(writer, write),
    ...fencedSnapshots(writer, before),
  };
}

/** The clone and template writes of the writer, fenced like the others, where it has them. */
function cloneWrites(
  writer: ClusterWriter,
  write: <A extends unknown[]>(op: string, send: (...args: A) => Promise<WriteResult>) => (...args: A) => Promise<WriteResult>,
): Pick<ClusterWriter, 'clone' | 'activeCloneTo' | 'convertToTemplate' | 'regenerateCloudinit'> {
  const { clone, activeCloneTo, convertToTemplate, regenerateCloudinit } = writer;
  return {
    ...(clone ? { clone: write('clone', clone.bind(writer)) } : {}),
    ...(activeCloneTo ? { activeCloneTo: activeCloneTo.bind(writer) } : {}),
    ...(convertToTemplate ? { convertToTemplate: write('template', convertToTemplate.bind(writer)) } : {}),
    ...(regenerateCloudinit ? { regenerateCloudinit: write('cloudinit', regenerateCloudinit.bind(writer)) } : {}),
  };
}

/** One guest job as it runs: what every step of the processor below needs. */
interface GuestJobRun {
  deps: GuestWorkerDeps;
  job: Job;
  token: string | undefined;
  runId: string;
  item: string;
  log: Logger;
}

/**
 * The processor BullMQ calls for each item job — a guest's, or an item of another kind (a pool,
 * a guest's membership) — the steps of the opening comment, in order. An item of a later phase
 * first waits for its run's earlier phases on its cluster (`waitForPhase`), and an item whose
 * `after` item did not apply is held (`holdIfBlocked`); then both kinds take the item's ticket and
 * lock alike.
 */
export function createGuestProcessor(deps: GuestWorkerDeps): (job: Job, token?: string) => Promise<string> {
  return async (job, token) => {
    const data = ItemJobData.parse(job.data);
    const { runId } = data;
    const item = itemKeyOfJob(data);
    if (deps.stopping?.aborted) return handBack(job, token);
    const context = data.kind === 'guest' ? { guest: item } : { item };
    const run: GuestJobRun = { deps, job, token, runId, item, log: deps.logger.child({ job: job.id, run: runId, ...context }) };
    const { repo, previous, phased, now } = await readGuestOfRun(run);
    if (isFinal(previous.status)) return wakeNextAfterFinished(run, previous);
    if (phased) await waitForPhase(run, previous);
    if (!isGuestProgress(previous)) {
      const held = await holdIfBlocked(run, previous);
      if (held !== undefined) return held;
    } else {
      const held = await awaitDependencies(dependencyJob(run), previous);
      if (held !== undefined) return held;
    }
    if ((await takeTicket(run, previous)) === 'finished')
      return wakeNextAfterFinished(run, (await deps.store.result(runId, item)) ?? previous);
    // Its turn: inside an apply window (or a `--now` run), else parked with its ticket until one opens.
    await awaitWindow(windowJob(run), previous, now ? undefined : await windowsOf(run, isGuestProgress(previous)), now);
    const lock = await takeLock(run);
    try {
      if (isGuestProgress(previous)) return await applyUnderLock(run, previous, lock, repo);
      // Another instance of this job may have finished the item while this one waited for the lock.
      const now = await deps.store.result(runId, item);
      if (now && isFinal(now.status)) return await wakeNextAfterFinished(run, now);
      return await applyObjectUnderLock(run, now && !isGuestProgress(now) ? now : previous, lock, repo);
    } finally {
      await lock.release().catch(() => {});
    }
  };
}

/**
 * Returns once every item of the run in an earlier phase on the item's cluster has its result;
 * otherwise parks the job, to be woken by the worker that finishes the last of them
 * (`openNextPhases`). The delay is only the fallback for a worker that died before waking it.
 */
async function waitForPhase(run: GuestJobRun, previous: ItemProgress): Promise<void> {
  const { store, jobs, settings } = run.deps;
  if (await store.phaseOpen(run.runId, run.item)) return;
  const waiting = 'waiting for the items this apply changes first (an earlier phase) to finish';
  if (previous.status !== 'waiting' || previous.waiting !== waiting) {
    if ((await store.setProgress(run.runId, run.item, { ...previous, status: 'waiting', waiting })) === 'written')
      await jobs.report(run.runId);
  }
  run.log.debug('an earlier phase of the run is not finished: parked');
  await run.job.moveToDelayed(Date.now() + settings.lockMs, run.token);
  // The phase may have closed between the look and the move, when there was no delayed job to wake.
  if (await store.phaseOpen(run.runId, run.item)) await run.job.promote().catch(() => {});
  throw new DelayedError();
}

/** Statuses of an item after which an item that follows it may go ahead. */
const FOLLOWABLE: ReadonlySet<string> = new Set(['applied', 'unchanged']);

/**
 * An item whose `after` item (a pool member's guest) ended otherwise than applied or unchanged is
 * held: recorded skipped and retryable, never written — nor does it take its lock or slot. Resolves
 * its status when held, undefined when it may go ahead.
 */
async function holdIfBlocked(run: GuestJobRun, previous: ObjectProgress): Promise<string | undefined> {
  const { store, jobs } = run.deps;
  let plan: ObjectPlan;
  try {
    plan = await store.objectPlan(run.runId, run.item);
  } catch {
    // Unreadable: the apply step says so and fails it for good.
    return undefined;
  }
  const after = plan.after ?? [];
  const results = await store.resultsOf(run.runId, after);
  const blocker = after.find((key) => {
    const status = results.get(key)?.status;
    return status !== undefined && isFinal(status) && !FOLLOWABLE.has(status);
  });
  if (blocker === undefined) return undefined;
  const status = results.get(blocker)?.status as ApplyStatus;
  const { kind: _kind, key: _key, ...held } = heldResult(plan, blocker, status);
  const result: ObjectProgress = { ...previous, ...held, kind: plan.kind, key: plan.key, finishedAt: new Date().toISOString() };
  delete result.waiting;
  const outcome = await store.finish(run.runId, run.item, result);
  run.log.info({ blocker, blockerStatus: status }, 'held: an item it follows did not apply');
  await afterFinish(run.deps, run.runId, run.item, outcome);
  await jobs.report(run.runId);
  return result.status;
}

/** After an item's result is recorded: wakes the next run in its FIFO, the guests waiting for it (`dependsOn`) and, when its phase is done, the run's next phase. */
async function afterFinish(deps: GuestWorkerDeps, runId: string, item: string, outcome: FinishOutcome): Promise<void> {
  await wake(deps.jobs, item, outcome.next);
  await wakeDependents(deps.store, deps.jobs, deps.redis, runId, item);
  if (outcome.phaseDone) await openNextPhases(deps.store, deps.jobs, runId, item);
}

const RESTART_SLOTS = new WeakMap<GuestWorkerDeps, AcquireRestart>();

/** The worker's restart slots: its own, else kept in Redis beside the store's state. */
function restartsOf(deps: GuestWorkerDeps): AcquireRestart {
  let slots = deps.restarts ?? RESTART_SLOTS.get(deps);
  if (!slots) RESTART_SLOTS.set(deps, (slots = redisRestartSlots(deps.redis, deps.store.statePrefix, deps.settings.lockMs)));
  return slots;
}

/** The job as `depends-on.ts` needs it. */
function dependencyJob(run: GuestJobRun): DependencyJob {
  const { deps } = run;
  return {
    store: deps.store,
    jobs: deps.jobs,
    redis: deps.redis,
    log: run.log,
    job: run.job,
    token: run.token,
    runId: run.runId,
    item: run.item,
    lockMs: deps.settings.lockMs,
    finished: (outcome) => afterFinish(deps, run.runId, run.item, outcome),
  };
}

/** The job as `apply-windows.ts` needs it. */
function windowJob(run: GuestJobRun): WindowJob {
  const { deps } = run;
  return {
    store: deps.store,
    jobs: deps.jobs,
    log: run.log,
    job: run.job,
    token: run.token,
    runId: run.runId,
    item: run.item,
    clock: deps.clock ?? wallClock,
    recheckMs: deps.windowRecheckMs ?? DEFAULT_WINDOW_RECHECK_MS,
  };
}

/**
 * The apply windows of the item's stored plan (a guest's, or an object's: its cluster's); none
 * when it cannot be read (the apply step fails it for good).
 */
async function windowsOf({ deps, runId, item }: GuestJobRun, guest: boolean): Promise<string[] | undefined> {
  return (guest ? deps.store.guestPlan(runId, item) : deps.store.objectPlan(runId, item)).then(
    (plan) => plan.windows,
    () => undefined,
  );
}

/** The run's repository and what the run recorded for the item so far; a run or item gone is unrecoverable. */
async function readGuestOfRun({
  deps,
  runId,
  item,
}: GuestJobRun): Promise<{ repo: RepoRef; previous: ItemProgress; phased: boolean; now: boolean }> {
  const record = await deps.store.getRun(runId);
  if (!record) throw new UnrecoverableError(`apply run ${runId} is gone (expired or never created)`);
  const previous = await deps.store.result(runId, item);
  if (!previous) throw new UnrecoverableError(`apply run ${runId} has no place for item ${item}`);
  // A run of guests alone (every run stored before other kinds) has one phase: nothing to wait for.
  const now = await runLetInNow(deps.store, deps.redis, record);
  return { repo: record.run.repo, previous, phased: (record.run.objects?.length ?? 0) > 0, now };
}

/** Step 1: an item finished before only makes sure its ticket is out and the next run (and the run's next phase) is woken. */
async function wakeNextAfterFinished(run: GuestJobRun, previous: ItemProgress): Promise<string> {
  // Taking the ticket out again is a no-op unless the worker died right after.
  const outcome = await run.deps.store.finish(run.runId, run.item, previous);
  await afterFinish(run.deps, run.runId, run.item, outcome);
  return previous.status;
}

/** Wakes the job of the run now heading the guest's FIFO (it is parked as delayed). */
async function wake(jobs: ApplyJobs, item: string, next: string | undefined): Promise<void> {
  if (!next) return;
  const job = await jobs.itemJob(next, item);
  // Not delayed (already woken, running, retrying with backoff): nothing to do.
  await job?.promote().catch(() => {});
}

/**
 * Step 2: returns once the run's ticket heads the guest's FIFO; otherwise parks the job (throws).
 * A ticket gone from the FIFO fails the guest for good; a stale head is removed once.
 */
async function takeTicket(run: GuestJobRun, previous: ItemProgress): Promise<'head' | 'finished'> {
  const { store, jobs } = run.deps;
  for (let look = 0; ; look++) {
    const claim = await store.claim(run.item, run.runId);
    if (claim.state === 'head') return 'head';
    if (claim.state === 'gone') {
      // Another instance of this job finished the item since this one read it: nothing was lost.
      if (!isGuestProgress(previous)) {
        const now = await store.result(run.runId, run.item);
        if (now && isFinal(now.status)) return 'finished';
      }
      const failed: ItemProgress = {
        ...previous,
        status: 'failed',
        retryable: true,
        error: "this apply lost its place in the guest's queue; /pve apply runs it again",
        finishedAt: new Date().toISOString(),
      };
      await store.finish(run.runId, run.item, failed);
      await jobs.report(run.runId);
      throw new UnrecoverableError(failed.error);
    }
    if (look === 0 && claim.head && (await removeIfStale(run, claim.head))) continue;
    await noteBehind(run, claim.head, previous);
    run.log.debug({ head: claim.head }, 'behind another apply of this guest: parked');
    await park(run);
  }
}

/** Parks the job until the head wakes it, or a lock duration passed. */
async function park({ deps, job, token, item, runId }: GuestJobRun): Promise<never> {
  await job.moveToDelayed(Date.now() + deps.settings.lockMs, token);
  // The head may have finished between our look and the move, when there was no delayed job to
  // wake: look again now that the job can be woken.
  if ((await deps.store.head(item)) === runId) await job.promote().catch(() => {});
  throw new DelayedError();
}

/** Takes a head out of the FIFO when its job can no longer finish it. True when it was removed. */
async function removeIfStale({ deps, item, log }: GuestJobRun, head: string): Promise<boolean> {
  const why = await lostJobReason(deps.store, deps.jobs, head, item);
  if (why === undefined) return false;
  if (!(await finishLost(deps.store, deps.jobs, head, item, why, { onlyIfHead: true }))) return false;
  log.warn({ head, why }, 'removed a stale apply from the head of the guest queue');
  return true;
}

/** Records the guest as waiting behind `head` (once: an unchanged note writes nothing). */
async function noteBehind({ deps, runId, item }: GuestJobRun, head: string | undefined, previous: ItemProgress): Promise<void> {
  const { store, jobs } = deps;
  const other = head ? await store.getRun(head) : undefined;
  const record = await store.getRun(runId);
  const who =
    other && record
      ? other.run.repo.id === record.run.repo.id
        ? `#${other.run.pr}`
        : `${other.run.repo.owner}/${other.run.repo.name}#${other.run.pr}`
      : 'another pull request';
  const waiting = `waiting for the apply of ${who} to finish with this guest (merged earlier)`;
  if (previous.status === 'waiting' && previous.waiting === waiting) return;
  if ((await store.setProgress(runId, item, { ...previous, status: 'waiting', waiting })) === 'written') await jobs.report(runId);
}

/** Hands the job back to the queue at once (the process stops): no attempt is used up. */
async function handBack(job: Job, token: string | undefined): Promise<never> {
  await job.moveToDelayed(Date.now(), token);
  throw new DelayedError();
}

/** Step 3: the guest's Redis lock; held by another instance of this very job (or a dead one, until it expires), the job parks. */
async function takeLock(run: GuestJobRun): Promise<HeldLock> {
  const { deps } = run;
  const lock = await acquireLock(deps.redis, deps.store.guestLockKey(run.item), {
    ttlMs: deps.settings.lockMs,
    waitMs: deps.settings.lockMs,
  });
  if (lock) return lock;
  run.log.info('the guest lock is held by another run of this job: parked');
  return park(run);
}

/** Steps 4 and 5, under the guest lock: open the writer, apply, record the result, report it and wake the next run. */
async function applyUnderLock(run: GuestJobRun, previous: GuestProgress, lock: HeldLock, repo: RepoRef): Promise<string> {
  const fence: Fence = { key: lock.key, token: lock.token };
  const attempts = (previous.attempts ?? 0) + 1;
  const priorSteps = stepsOfEarlierRuns(previous);
  const { plan, writer } = await openWriter(run, previous, attempts, fence, repo, (id, key) => run.deps.store.guestPlan(id, key));
  const stop = stopWhenLockLostOrStopping(run, lock);
  const recorder = recordProgress(run, { ...previous, status: 'running', attempts }, priorSteps, fence, stop.controller);
  let result: Awaited<ReturnType<typeof applyGuest>>;
  try {
    result = await applyPlanOfGuest(run, plan, writer, recorder, stop.controller, `${run.job.id}#${lock.token}`, priorSteps);
  } finally {
    // Also when applyGuest throws: the worker-wide signal must not collect one listener per job.
    stop.detach();
  }
  await recorder.settled();
  if (stop.controller.signal.aborted) return handOverInterrupted(run, stop.controller.signal.reason, result);
  const merged = resultOfAttempt(result, priorSteps, attempts);
  if (result.retryable) await retryOrGiveUp(run, merged, result, attempts, fence);
  return recordAndReport(run, merged, fence);
}

/**
 * The steps recorded so far, and a write the run before sent without living to see it confirmed:
 * what this run finds done may be its work, so it counts as written.
 */
function stepsOfEarlierRuns(previous: ItemProgress): ApplyStep[] {
  return previous.inFlight !== undefined
    ? [...previous.steps, { op: previous.inFlight, detail: 'sent by an earlier run of this job, which stopped before it was confirmed' }]
    : previous.steps;
}

/** The item's stored plan and its cluster's writer; a wrong configuration or stored run fails the item for good. */
async function openWriter<P extends GuestPlan | ObjectPlan>(
  { deps, runId, item }: GuestJobRun,
  previous: ItemProgress,
  attempts: number,
  fence: Fence,
  repo: RepoRef,
  load: (runId: string, item: string) => Promise<P>,
): Promise<{ plan: P; writer: OpenWriter }> {
  try {
    const plan = await load(runId, item);
    const writer = await deps.writer(plan.cluster, `${repo.owner}/${repo.name}`);
    return { plan, writer };
  } catch (error) {
    const permanent =
      error instanceof MissingConnectionError ||
      error instanceof RepositoryNotAllowedError ||
      error instanceof ClusterConfigError ||
      error instanceof SyntaxError ||
      error instanceof z.ZodError ||
      error instanceof GuestPlanMissingError ||
      error instanceof StoredItemRefusedError;
    if (!permanent) throw error;
    // Not worth a retry: the server's configuration or the stored run is wrong.
    const failed: ItemProgress = {
      ...previous,
      status: 'failed',
      attempts,
      error: errorMessage(error),
      finishedAt: new Date().toISOString(),
    };
    await deps.store.finish(runId, item, failed, { fence });
    await deps.jobs.report(runId);
    throw new UnrecoverableError(failed.error);
  }
}

/** Stops the engine when the lock is lost (found on renewal or before a step), Redis fails, or the worker stops. */
function stopWhenLockLostOrStopping({ deps }: GuestJobRun, lock: HeldLock): { controller: AbortController; detach: () => void } {
  const controller = new AbortController();
  lock.lost.addEventListener('abort', () => controller.abort(new LockLostError(`guest lock lost: ${errorMessage(lock.lost.reason)}`)), {
    once: true,
  });
  const onStopping = (): void => controller.abort(new StoppingError('the worker is stopping'));
  if (deps.stopping?.aborted) onStopping();
  deps.stopping?.addEventListener('abort', onStopping, { once: true });
  return { controller, detach: () => deps.stopping?.removeEventListener('abort', onStopping) };
}

/** Records the guest's progress in order, fenced by the guest lock. */
interface ProgressRecorder {
  /** Told every event of the engine (or a step of another kind's executor): steps and waits are recorded as they happen. */
  onEvent(event: ApplyEvent | { type: 'step'; step: ApplyStep }): void;
  /** Awaited before every write request: the write is recorded before it is sent, or refused. */
  beforeWrite(op: string): Promise<void>;
  /** Resolves when everything recorded so far is written. */
  settled(): Promise<unknown>;
}

function recordProgress(
  { deps, runId, item, log }: GuestJobRun,
  running: ItemProgress,
  priorSteps: readonly ApplyStep[],
  fence: Fence,
  stop: AbortController,
): ProgressRecorder {
  const { store, jobs } = deps;
  let progress: ItemProgress = { ...running };
  delete progress.waiting;
  delete progress.inFlight;
  const steps: ApplyStep[] = [...priorSteps];
  let saving: Promise<unknown> = store.setProgress(runId, item, { ...progress, steps }, fence).catch(() => undefined);
  const save = (next: ItemProgress, report: boolean): void => {
    progress = next;
    const snapshot = { ...next, steps: [...steps] };
    saving = saving
      .then(() => store.setProgress(runId, item, snapshot, fence))
      .then((outcome) => (report && outcome === 'written' ? jobs.report(runId) : undefined))
      .catch((error: unknown) => log.warn({ err: error }, 'recording apply progress failed'));
  };
  return {
    onEvent: (event) => {
      if (event.type === 'step') {
        steps.push(event.step);
        const { waiting: _waiting, inFlight: _inFlight, ...rest } = progress;
        save({ ...rest, status: 'running' }, false);
        log.info({ op: event.step.op, detail: event.step.detail, upid: event.step.upid }, 'apply step');
      } else if (event.type === 'waiting') {
        if (progress.status !== 'waiting' || progress.waiting !== event.reason)
          save({ ...progress, status: 'waiting', waiting: event.reason }, true);
      }
    },
    beforeWrite: async (op) => {
      progress = { ...progress, inFlight: op };
      const snapshot = { ...progress, steps: [...steps] };
      // In order after the progress saved so far; refused (0) only when the lock is no longer ours.
      const attempt = saving.then(() => store.setProgress(runId, item, snapshot, fence));
      saving = attempt.catch(() => undefined);
      let refusal: Error;
      try {
        if ((await attempt) !== 'refused') return;
        refusal = new LockLostError('item lock lost: another run of this job holds it now; nothing was sent');
      } catch (error) {
        // Redis trouble: interrupt (a retry) rather than send a write this job could not record.
        refusal = error instanceof Error ? error : new Error(errorMessage(error));
      }
      if (!stop.signal.aborted) stop.abort(refusal);
      throw refusal;
    },
    settled: () => saving,
  };
}

/** The engine applies the guest's plan through the fenced writer, taking a shared slot before every step. */
function applyPlanOfGuest(
  { deps, runId }: GuestJobRun,
  plan: GuestPlan,
  writer: OpenWriter,
  recorder: ProgressRecorder,
  stop: AbortController,
  holder: string,
  priorSteps: readonly ApplyStep[],
): ReturnType<typeof applyGuest> {
  return applyGuest(plan, fencedWriter(writer.writer, recorder.beforeWrite), {
    signal: stop.signal,
    lockWaitMs: deps.settings.lockWaitMs,
    // The server's policy as it is now, whatever it was when the plan was made.
    allowHostAccess: writer.allowHostAccess,
    ...(deps.settings.lockPollMs !== undefined ? { lockPollMs: deps.settings.lockPollMs } : {}),
    onEvent: recorder.onEvent,
    acquireSlot: async (node) => {
      try {
        // No lock check here: the write itself is fenced (above), and a lost lock aborts the wait.
        return await deps.slots.acquire(plan.cluster, node, holder, stop.signal);
      } catch (error) {
        // Interrupts the engine (a retryable result) instead of failing the guest for good.
        if (!stop.signal.aborted) stop.abort(error);
        throw error;
      }
    },
    acquireRestart: (cluster, limit) => restartsOf(deps)(cluster, limit, holder, stop.signal),
    restartInterrupted: restartInterrupted(priorSteps),
    insideWindow: () => windowOpen(plan.windows, deps.clock ?? wallClock),
    snapshotName: runSnapshotName(runId),
  });
}

/** An interrupted apply keeps its ticket: handed back when the worker stops, else thrown to be run again. */
async function handOverInterrupted(run: GuestJobRun, reason: unknown, result: { steps: readonly ApplyStep[] }): Promise<never> {
  if (reason instanceof StoppingError) {
    // Another worker takes the job now and re-reads before anything else.
    run.log.info({ steps: result.steps.length }, 'worker stopping: apply handed back');
    return handBack(run.job, run.token);
  }
  run.log.warn({ err: reason, steps: result.steps.length }, 'apply interrupted: run again');
  // The next run of the job re-reads and carries on.
  throw reason instanceof Error ? reason : new Error(errorMessage(reason));
}

/** The guest's result: this attempt's steps after the earlier ones; unchanged after an earlier run wrote counts as applied. */
function resultOfAttempt(
  result: Awaited<ReturnType<typeof applyGuest>>,
  priorSteps: readonly ApplyStep[],
  attempts: number,
): GuestProgress {
  return {
    ...result,
    steps: [...priorSteps, ...result.steps],
    attempts,
    finishedAt: new Date().toISOString(),
    status: result.status === 'unchanged' && wrote(priorSteps) ? 'applied' : result.status,
  };
}

/** A transient failure: noted and thrown for BullMQ's backoff, or — on the last attempt — given up in `merged`'s error. */
async function retryOrGiveUp(
  { deps, job, runId, item, log }: GuestJobRun,
  merged: ItemProgress,
  result: { error?: string },
  attempts: number,
  fence: Fence,
): Promise<void> {
  const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  if (!last) {
    const note: ItemProgress = { ...merged, status: 'waiting', waiting: `retrying after: ${result.error ?? 'a transient failure'}` };
    if ((await deps.store.setProgress(runId, item, note, fence)) === 'written') await deps.jobs.report(runId);
    log.warn({ error: result.error, attempt: attempts }, 'transient failure: retried with backoff');
    throw new Error(result.error ?? 'transient failure');
  }
  merged.error = `${result.error ?? 'transient failure'} — gave up after ${attempts} attempts; comment /pve apply to run it again`;
}

/** Records the result, takes the ticket out and wakes the next run (and the run's next phase) in one fenced step, then reports the run. */
async function recordAndReport({ deps, runId, item, log }: GuestJobRun, merged: ItemProgress, fence: Fence): Promise<string> {
  const outcome = await deps.store.finish(runId, item, merged, { fence });
  if (outcome.state === 'lost') {
    // Another run of this job holds the guest now; it reports the result.
    log.warn({ status: merged.status }, 'guest lock lost before the result was recorded: result dropped');
    throw new LockLostError('guest lock lost before the result was recorded');
  }
  log.info({ status: merged.status, error: merged.error }, isGuestProgress(merged) ? 'guest applied' : 'item applied');
  if (outcome.state === 'done' && isFinal(merged.status)) deps.onResult?.(merged.status);
  await afterFinish(deps, runId, item, outcome);
  await deps.jobs.report(runId);
  return merged.status;
}

/**
 * Steps 4 and 5 for an item of another kind, under its lock: open the writer, take the cluster's
 * slot (and a node's only for a kind with a node), record the apply as in flight — fenced, so a
 * job that lost the lock sends nothing — run the kind's executor (`applyObject`, which reads
 * before it writes), then record the result as for a guest. The kind's port writes on its own, so
 * the fence is checked once, before the executor starts, and a lost lock aborts it.
 */
async function applyObjectUnderLock(run: GuestJobRun, previous: ObjectProgress, lock: HeldLock, repo: RepoRef): Promise<string> {
  const { deps } = run;
  const fence: Fence = { key: lock.key, token: lock.token };
  const attempts = (previous.attempts ?? 0) + 1;
  const priorSteps = stepsOfEarlierRuns(previous);
  const { plan, writer } = await openWriter(run, previous, attempts, fence, repo, (id, key) => deps.store.objectPlan(id, key));
  const stop = stopWhenLockLostOrStopping(run, lock);
  const recorder = recordProgress(run, { ...previous, status: 'running', attempts }, priorSteps, fence, stop.controller);
  let result: ObjectApplyResult = { kind: plan.kind, key: plan.key, cluster: plan.cluster, name: plan.name, status: 'failed', steps: [] };
  let release: (() => void) | undefined;
  try {
    release = await deps.slots.acquire(plan.cluster, nodeOf(plan), `${run.job.id}#${lock.token}`, stop.controller.signal);
    await recorder.beforeWrite(plan.operations.map((o) => o.op).join(', ') || plan.action);
    result = await applyObject(plan, writer.writer, {
      signal: stop.controller.signal,
      onStep: (step) => recorder.onEvent({ type: 'step', step }),
    });
  } catch (error) {
    // A slot wait or the fenced record failed: interrupted, run again (the item was not written).
    if (!stop.controller.signal.aborted) stop.controller.abort(error);
  } finally {
    release?.();
    stop.detach();
  }
  await recorder.settled();
  if (stop.controller.signal.aborted) return handOverInterrupted(run, stop.controller.signal.reason, result);
  const { kind: _kind, key: _key, ...outcome } = result;
  const merged: ObjectProgress = {
    ...outcome,
    kind: plan.kind,
    key: plan.key,
    steps: [...priorSteps, ...result.steps],
    attempts,
    finishedAt: new Date().toISOString(),
    status: result.status === 'unchanged' && wrote(priorSteps) ? 'applied' : result.status,
  };
  if (result.retryable) await retryOrGiveUp(run, merged, result, attempts, fence);
  return recordAndReport(run, merged, fence);
}

/**
 * The node whose slot an item takes: only a kind whose objects live on a node has one, named by
 * its payload's `node` (the envelope has none yet); every other kind takes the cluster's slot alone.
 */
function nodeOf(plan: ObjectPlan): string | undefined {
  if (!kindHasNode(plan.kind)) return undefined;
  return typeof plan.payload.node === 'string' ? plan.payload.node : undefined;
}
