/**
 * Proxmox worker tasks: UPID parsing, exit-status interpretation and the polling loop behind
 * `PveClient.waitForTask`.
 */
import { classifyMessage, PveTaskFailedError, PveTaskTimeoutError, type PveErrorInit } from './errors.js';
import type { TaskStatus } from './schema.js';
import { sleep } from '../util/sleep.js';

/** The fields encoded in a UPID (`UPID:node:pid:pstart:starttime:type:id:user:`). */
export interface Upid {
  node: string;
  pid: number;
  pstart: number;
  starttime: number;
  type: string;
  id: string;
  user: string;
}

// pve-common PVE/UPID.pm decode regex.
const UPID_RE =
  /^UPID:([a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$/;

/** Decodes a UPID; undefined when it is not one. */
export function parseUpid(upid: string): Upid | undefined {
  const m = UPID_RE.exec(upid);
  if (!m) return undefined;
  const [, node, pid, pstart, starttime, type, id, user] = m as unknown as [string, ...string[]];
  return {
    node: node!,
    pid: parseInt(pid!, 16),
    pstart: parseInt(pstart!, 16),
    starttime: parseInt(starttime!, 16),
    type: type!,
    id: id!,
    user: user!,
  };
}

/** `OK` and `WARNINGS: N` are success (UPID::status_is_error); everything else is the error text. */
export function isTaskSuccess(exitstatus: string | undefined): boolean {
  return exitstatus === 'OK' || (exitstatus !== undefined && /^WARNINGS: \d+$/.test(exitstatus));
}

/** Options of `waitForTask`. */
export interface WaitOptions {
  /** Cancels the wait (rejecting with the signal's reason); the task itself is not stopped. */
  signal?: AbortSignal;
  /** Longest pause between polls (default 1000 ms), reached by doubling once the first second is over. */
  intervalMs?: number;
  /** Pause between polls during the task's first second (default 25 ms, at most `intervalMs`). */
  fastIntervalMs?: number;
  /** Give up after this long with `PveTaskTimeoutError` (default: wait indefinitely). */
  timeoutMs?: number;
  /** Called with every status read, running or stopped. */
  onProgress?: (status: TaskStatus) => void;
}

// Most tasks an apply starts (a config write, a start, a create) finish within a second: poll
// them at a short steady interval, so a 200 ms task is seen done about 200 ms after it started
// instead of at the next step of a backoff; after that second, back off to `intervalMs`.
const FAST_POLL_MS = 25;
const FAST_PHASE_MS = 1000;

/**
 * Polls `read` until the task stops. Resolves with the final status on success; rejects with
 * `PveTaskFailedError` (its `cause` typed when the exit text is recognised).
 */
export async function pollTask(
  read: () => Promise<TaskStatus>,
  upid: string,
  options: WaitOptions,
  init: PveErrorInit,
): Promise<TaskStatus> {
  const { signal, onProgress } = options;
  const maxInterval = Math.max(1, options.intervalMs ?? 1000);
  const fast = Math.max(1, Math.min(options.fastIntervalMs ?? FAST_POLL_MS, maxInterval));
  const started = Date.now();
  const deadline = options.timeoutMs === undefined ? Infinity : started + options.timeoutMs;
  let delay = fast;

  let sent = Date.now();
  for (;;) {
    // The first read waits one short interval too: no task an apply starts is done at once. The
    // interval counts from the previous read's start, so a slow round trip does not add to it.
    await sleep(Math.max(0, Math.min(sent + delay, deadline) - Date.now()), signal);
    sent = Date.now();
    const status = await raceAbort(read(), signal);
    onProgress?.(status);
    if (status.status !== 'running') return settle(status, upid, init);
    if (Date.now() >= deadline) throw new PveTaskTimeoutError(upid, options.timeoutMs ?? 0, init);
    if (Date.now() - started >= FAST_PHASE_MS) delay = Math.min(Math.max(delay * 2, fast), maxInterval);
  }
}

function settle(status: TaskStatus, upid: string, init: PveErrorInit): TaskStatus {
  if (isTaskSuccess(status.exitstatus)) return status;
  const exitstatus = status.exitstatus ?? 'unexpected status';
  const cause = classifyMessage(exitstatus, { ...init, status: 0 });
  throw new PveTaskFailedError(upid, exitstatus, { ...init, cause });
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
