/**
 * Waiting for the HA manager. On an HA-managed guest Proxmox's start, stop and shutdown only queue
 * a request: their `hastart`/`hastop` task ends before the guest changes state, which happens at a
 * later HA manager round (docs/proxmox-behaviour.md, HAP-…). So a power step on such a guest is
 * done when the guest's status says so, not when its task ends: this polls the status, bounded,
 * reporting progress, and follows the guest if HA moves it to another node meanwhile.
 */
import type { ListedGuest, ObservedGuest } from '../core/model.js';
import { GuestNotFoundError, portFailure } from '../core/port-errors.js';
import type { ClusterWriter, GuestRef } from '../core/ports.js';
import type { Clock } from '../util/sleep.js';

/** The task types Proxmox forks for a power request it hands to the HA manager. */
const HA_TASK_TYPES: ReadonlySet<string> = new Set(['hastart', 'hastop']);

/** Whether a UPID is a task that only queued an HA request (`UPID:node:…:hastart:100:user:`). */
export function isHaRequestTask(upid: string | undefined): boolean {
  return upid !== undefined && HA_TASK_TYPES.has(upid.split(':')[5] ?? '');
}

/** What {@link awaitHaPower} needs. */
export interface HaWaitOptions {
  writer: ClusterWriter;
  ref: GuestRef;
  /** The status the request asked for. */
  want: 'running' | 'stopped';
  clock: Clock;
  /** How long the HA manager gets (default 10 minutes). */
  timeoutMs?: number;
  /** First pause between reads; doubles up to 5 s (default 1 s). */
  pollMs?: number;
  signal?: AbortSignal;
  /** Finds the guest after HA moved it (a fresh listing). */
  locate: (vmid: number) => Promise<ListedGuest | undefined>;
  /** Progress for a person watching: called before each pause. */
  onWait?: (reason: string) => void;
}

/** The guest reached the state (read where it is now), or it did not in time. */
export type HaWaitOutcome =
  | { reached: true; observed: ObservedGuest; waitedMs: number }
  | { reached: false; status: string; haState: string | undefined; waitedMs: number };

const MAX_POLL_MS = 5000;
const DEFAULT_TIMEOUT_MS = 600_000;

/** Reads the guest until its status is `want` or the time is up. */
export async function awaitHaPower(options: HaWaitOptions): Promise<HaWaitOutcome> {
  const { writer, clock, want } = options;
  const started = clock.now();
  const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let delay = options.pollMs ?? 1000;
  let ref = options.ref;
  for (;;) {
    options.signal?.throwIfAborted();
    let observed: ObservedGuest;
    try {
      observed = await writer.readGuestForApply(ref);
    } catch (err) {
      if (!portFailure(err, GuestNotFoundError)) throw err;
      // HA relocated it (recovery, rebalance): read it where the cluster lists it now.
      const found = await options.locate(ref.vmid);
      if (!found || found.node === ref.node) throw err;
      ref = { ...ref, node: found.node };
      continue;
    }
    const waitedMs = clock.now() - started;
    if (observed.status === want) return { reached: true, observed, waitedMs };
    if (waitedMs >= timeout) return { reached: false, status: observed.status, haState: observed.ha?.state, waitedMs };
    options.onWait?.(`HA manager: guest ${observed.status}, HA state ${observed.ha?.state ?? 'unknown'}; waiting for ${want}`);
    await clock.sleep(Math.min(delay, timeout - waitedMs), options.signal);
    delay = Math.min(delay * 2, MAX_POLL_MS);
  }
}
