/**
 * Proxmox worker tasks: UPID parsing, exit-status interpretation and the polling loop behind
 * `PveClient.waitForTask`.
 */
import { classifyMessage, PveTaskFailedError, PveTaskTimeoutError, type PveErrorInit } from './errors.js';
import type { TaskStatus } from './schema.js';

/** The fields encoded in a UPID (`UPID:node:pid:pstart:starttime:type:id:user:`). */
interface Upid {
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
  /** Status requests of this task unanswered at once at most (default 1: see MAX_POLLS_IN_FLIGHT). */
  maxPollsInFlight?: number;
  /** Give up after this long with `PveTaskTimeoutError` (default: wait indefinitely). */
  timeoutMs?: number;
  /** Called with every status read, running or stopped. */
  onProgress?: (status: TaskStatus) => void;
}

// Most tasks an apply starts (a config write, a start, a create) finish within a second, and the
// apply's slot stays taken until the end is seen: poll them at a short steady interval in their
// first second, so a task is seen done at most one interval (and one round trip) after it ends,
// instead of at the next step of a backoff; after that second, back off to `intervalMs`.
const FAST_POLL_MS = 25;
const FAST_PHASE_MS = 1000;
// One status request per task at a time: pveproxy serves every client from a small pool of
// worker processes (3 by default), and an apply's polls must leave room for the web UI and other
// clients. A slow answer therefore stretches the interval instead of adding requests.
const MAX_POLLS_IN_FLIGHT = 1;

/**
 * Polls `read` until the task stops. Resolves with the final status on success; rejects with
 * `PveTaskFailedError` (its `cause` typed when the exit text is recognised), with
 * `PveTaskTimeoutError` past `timeoutMs`, with a failed read's error, or with the signal's reason.
 */
export function pollTask(read: () => Promise<TaskStatus>, upid: string, options: WaitOptions, init: PveErrorInit): Promise<TaskStatus> {
  const { signal, onProgress } = options;
  const maxInterval = Math.max(1, options.intervalMs ?? 1000);
  const fast = Math.max(1, Math.min(options.fastIntervalMs ?? FAST_POLL_MS, maxInterval));
  const maxInFlight = Math.max(1, options.maxPollsInFlight ?? MAX_POLLS_IN_FLIGHT);
  const started = Date.now();
  const deadline = options.timeoutMs === undefined ? Infinity : started + options.timeoutMs;
  return new Promise<TaskStatus>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    let delay = fast;
    let inFlight = 0;
    let blocked = false;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (settleWith: () => void): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settleWith();
    };
    const onAbort = (): void => finish(() => reject(signal?.reason));
    signal?.addEventListener('abort', onAbort, { once: true });

    const answered = (status: TaskStatus): void => {
      inFlight -= 1;
      if (done) return;
      onProgress?.(status);
      if (status.status !== 'running') {
        finish(() => {
          try {
            resolve(settle(status, upid, init));
          } catch (err) {
            reject(err);
          }
        });
        return;
      }
      if (Date.now() >= deadline) {
        finish(() => reject(new PveTaskTimeoutError(upid, options.timeoutMs ?? 0, init)));
        return;
      }
      if (blocked) {
        blocked = false;
        poll();
      }
    };
    const failed = (err: unknown): void => {
      inFlight -= 1;
      finish(() => reject(err));
    };
    const schedule = (at: number): void => {
      timer = setTimeout(poll, Math.max(0, Math.min(at, deadline) - Date.now()));
    };
    function poll(): void {
      if (done) return;
      if (inFlight >= maxInFlight) {
        // Sent again as soon as one of them is answered.
        blocked = true;
        return;
      }
      const sent = Date.now();
      inFlight += 1;
      read().then(answered, failed);
      if (sent - started >= FAST_PHASE_MS) delay = Math.min(Math.max(delay * 2, fast), maxInterval);
      // The interval counts from this poll's start, so a slow round trip does not add to it; the
      // answer to a poll at the deadline decides.
      if (sent < deadline) schedule(sent + delay);
    }
    // The first read waits one short interval too: no task an apply starts is done at once.
    schedule(started + fast);
  });
}

function settle(status: TaskStatus, upid: string, init: PveErrorInit): TaskStatus {
  if (isTaskSuccess(status.exitstatus)) return status;
  const exitstatus = status.exitstatus ?? 'unexpected status';
  const cause = classifyMessage(exitstatus, { ...init, status: 0 });
  throw new PveTaskFailedError(upid, exitstatus, { ...init, cause });
}
