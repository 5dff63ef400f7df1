/**
 * Apply windows in the App's queue (README "Apply windows"): an item whose plan has `windows` — a
 * guest (its own or its cluster's) or an object of another kind (its cluster's: a pool, a firewall,
 * an HA resource, a backup job) — is applied only while one of them is open by the App's clock. Outside them its job
 * parks — a delayed BullMQ job holding no worker, lock or slot, its ticket kept so later merges of
 * the guest still wait behind it — and its progress says when it will run, which the apply comment
 * and the check run show. It looks again when the next window opens, and at least every recheck
 * interval (a clock moved, a worker gone). An admin's `/pve apply --now` starts a run that is let
 * in at once (`ApplyRun.now`). The check is made when a guest's turn comes: a window that closes
 * mid-run lets the guest in flight finish and holds the rest until the next one.
 */
import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { closedReason, parseWindows, windowState, windowsOpen } from '../../core/spec/apply-windows.js';
import type { ApplyJobs } from './apply-jobs.js';
import type { ApplyStore, ItemProgress } from './apply-store.js';

/** The App's time (milliseconds since the epoch); injected in tests. */
export interface WindowClock {
  now(): number;
}

/** The wall clock. */
export const wallClock: WindowClock = { now: () => Date.now() };

/** A parked guest looks again at least this often, by default. */
export const DEFAULT_WINDOW_RECHECK_MS = 5 * 60_000;

/** What {@link awaitWindow} needs of the job that runs the item. */
export interface WindowJob {
  store: ApplyStore;
  jobs: ApplyJobs;
  log: Logger;
  job: Job;
  token: string | undefined;
  runId: string;
  item: string;
  clock: WindowClock;
  /** The longest a parked job waits before it looks again. */
  recheckMs: number;
}

/** Whether `windows` (absent: none, any time) are open at the clock's now. */
export function windowOpen(windows: readonly string[] | undefined, clock: WindowClock): boolean {
  return windowsOpen(windows, clock.now());
}

/**
 * Returns when the item may be applied now (no windows, one open, or a `--now` run); otherwise
 * records why it waits and until when, and parks the job (throws BullMQ's DelayedError).
 */
export async function awaitWindow(
  run: WindowJob,
  previous: ItemProgress,
  windows: readonly string[] | undefined,
  now: boolean,
): Promise<void> {
  if (now || !windows || windows.length === 0) return;
  const state = windowState(parseWindows(windows), run.clock.now());
  if (state.open) return;
  const waiting = closedReason(state);
  if (previous.status !== 'waiting' || previous.waiting !== waiting) {
    if ((await run.store.setProgress(run.runId, run.item, { ...previous, status: 'waiting', waiting })) === 'written')
      await run.jobs.report(run.runId);
  }
  const wait = Math.max(0, Math.min(state.opensAt - run.clock.now(), run.recheckMs));
  run.log.info({ opensAt: new Date(state.opensAt).toISOString(), window: state.window.text }, 'outside its apply window: parked');
  await run.job.moveToDelayed(Date.now() + wait, run.token);
  throw new DelayedError();
}
