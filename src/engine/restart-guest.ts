/**
 * The restart after an apply (README "Restarts"): a guest whose plan announces a restart
 * (`GuestPlan.restart`, its policy `allowed`) and whose apply left values pending is shut down
 * cleanly — with the policy's timeout, a hard stop after it only when the policy says `force` —
 * started again, and read once more to confirm nothing of what was pending still is. An HA-managed
 * guest restarts through HA: its tasks end before its state changes, so the status is waited on
 * (`ha-power.ts`). At most the cluster's restarts in flight run at once (the caller's slot).
 */
import type { ApplyStep } from '../core/apply-result.js';
import type { GuestPlan, PlannedRestart } from '../core/model.js';
import { AlreadyInPowerStateError, portFailure, TaskFailedError } from '../core/port-errors.js';
import type { ClusterWriter, GuestRef, WriteResult } from '../core/ports.js';
import type { ListedGuest } from '../core/model.js';
import type { Clock } from '../util/sleep.js';
import { errorMessage } from '../util/error-message.js';
import { awaitHaPower, isHaRequestTask } from './ha-power.js';

/** Releases a restart slot; safe to call twice. */
type Release = () => void;

/** What {@link restartGuest} needs from the guest's apply. */
export interface RestartContext {
  plan: GuestPlan;
  restart: PlannedRestart;
  writer: ClusterWriter;
  /** Where the apply left the guest. */
  ref: GuestRef;
  /** The keys the apply left pending. */
  pending: readonly string[];
  clock: Clock;
  signal?: AbortSignal;
  /** How long HA gets to carry a request out. */
  haWaitMs: number;
  pollMs?: number;
  locate: (vmid: number) => Promise<ListedGuest | undefined>;
  /** Takes one of the cluster's restarts in flight. Default: none. */
  acquireRestart?: (cluster: string, limit: number) => Promise<Release>;
  /** Each step as it is done. */
  emit: (step: ApplyStep) => void;
  /** A wait, for a person watching. */
  onWait?: (reason: string) => void;
}

/** The restart's end: done with nothing pending, or failed with why (the guest as the error says). */
export type RestartOutcome = { ok: true; node: string } | { ok: false; error: string; node: string };

/** One of the cluster's restarts in flight; says it waits only when none is free at once. */
async function takeRestartSlot(ctx: RestartContext): Promise<Release> {
  if (!ctx.acquireRestart) return () => {};
  let taken = false;
  const pending = ctx.acquireRestart(ctx.plan.cluster, ctx.restart.inFlight).then((release) => {
    taken = true;
    return release;
  });
  await new Promise((resolve) => setImmediate(resolve));
  if (!taken) ctx.onWait?.(`waiting for one of the ${ctx.restart.inFlight} restart(s) in flight allowed on ${ctx.plan.cluster}`);
  return pending;
}

/** Whether `steps` (an earlier run's) began a restart that was not confirmed. */
export function restartInterrupted(steps: readonly ApplyStep[]): boolean {
  const began = steps.some((s) => s.op === 'shutdown' && s.detail?.startsWith('restart:') === true);
  return began && !steps.some((s) => s.op === 'restarted');
}

/** Shuts the guest down, starts it again and confirms its pending values are in effect. Never throws but on abort. */
export async function restartGuest(ctx: RestartContext): Promise<RestartOutcome> {
  const { restart, writer, clock } = ctx;
  const release = await takeRestartSlot(ctx);
  let ref = ctx.ref;
  const context = ctx.signal ? { signal: ctx.signal } : {};
  const awaitHa = async (result: WriteResult, want: 'running' | 'stopped'): Promise<string | undefined> => {
    if (!isHaRequestTask(result.upid)) return undefined;
    const outcome = await awaitHaPower({
      writer,
      ref,
      want,
      clock,
      timeoutMs: ctx.haWaitMs,
      ...(ctx.pollMs !== undefined ? { pollMs: ctx.pollMs } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      locate: ctx.locate,
      ...(ctx.onWait ? { onWait: ctx.onWait } : {}),
    });
    if (!outcome.reached) {
      return `the HA manager was asked for ${want} but the guest is still ${outcome.status} after ${Math.round(outcome.waitedMs / 1000)} s (HA state ${outcome.haState ?? 'unknown'})`;
    }
    ref = { ...ref, node: outcome.observed.node };
    ctx.emit({ op: 'wait-ha', detail: `HA manager reported the guest ${want}`, ms: outcome.waitedMs });
    return undefined;
  };
  const step = async (op: 'shutdown' | 'start', detail: string, send: () => Promise<WriteResult>): Promise<WriteResult | string> => {
    const started = clock.now();
    try {
      const result = await send();
      ctx.emit({
        op,
        detail,
        ms: clock.now() - started,
        ...(result.upid ? { upid: result.upid } : {}),
        ...(result.exitStatus ? { exitStatus: result.exitStatus } : {}),
      });
      return result;
    } catch (err) {
      ctx.signal?.throwIfAborted();
      if (portFailure(err, AlreadyInPowerStateError)) {
        ctx.emit({ op, detail: `${detail}: ${errorMessage(err)}, nothing to do`, ms: clock.now() - started });
        return {};
      }
      const failed: ApplyStep = { op, detail: `${detail}: failed`, ms: clock.now() - started };
      if (err instanceof TaskFailedError) {
        failed.upid = err.upid;
        failed.exitStatus = err.exitStatus;
      }
      ctx.emit(failed);
      return errorMessage(err);
    }
  };
  try {
    const how = `restart: clean shutdown within ${restart.timeout} s${restart.force ? ', then a hard stop' : ''}`;
    const down = await step('shutdown', how, () =>
      writer.shutdown(ref, context, { timeout: restart.timeout, ...(restart.force ? { forceStop: true } : {}) }),
    );
    if (typeof down === 'string') {
      const hint = restart.force ? '' : '; restart: { policy: allowed, force: true } lets a hard stop follow';
      return {
        ok: false,
        node: ref.node,
        error: `restart: the shutdown failed (${down}); the guest was not started again by this run and its pending values wait${hint}`,
      };
    }
    const haDown = await awaitHa(down, 'stopped');
    if (haDown) return { ok: false, node: ref.node, error: `restart: ${haDown}` };
    const up = await step('start', 'restart: start', () => writer.start(ref, context));
    if (typeof up === 'string')
      return { ok: false, node: ref.node, error: `restart: the guest was shut down but did not start again: ${up}` };
    const haUp = await awaitHa(up, 'running');
    if (haUp) return { ok: false, node: ref.node, error: `restart: ${haUp}` };
    const after = await writer.readGuestForApply(ref);
    const still = ctx.pending.filter((key) => after.pending[key] !== undefined || after.pendingDelete.includes(key));
    if (still.length > 0) {
      return {
        ok: false,
        node: ref.node,
        error: `restart: after the restart ${still.join(', ')} ${still.length === 1 ? 'is' : 'are'} still pending`,
      };
    }
    const keys = ctx.pending.length > 0 ? ctx.pending.join(', ') : 'the values';
    ctx.emit({ op: 'restarted', detail: `${keys} in effect; nothing left pending` });
    return { ok: true, node: ref.node };
  } finally {
    release();
  }
}
