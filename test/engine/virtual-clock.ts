/**
 * A clock whose time moves only when nothing else can: every `sleep` registers a wake-up, and once
 * all pending work has settled (the microtask queue is empty, seen from a `setImmediate`), time
 * jumps to the earliest wake-up. Work that never touches real I/O — the engine on the in-memory
 * cluster — runs through minutes of lock waits and task durations in milliseconds, in an order
 * that is the same on every run.
 */
import type { Clock } from '../../src/util/sleep.js';

interface Timer {
  at: number;
  seq: number;
  resolve: () => void;
  cancel: () => void;
}

export class VirtualClock implements Clock {
  #now = 0;
  #seq = 0;
  #timers: Timer[] = [];
  #scheduled = false;

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        this.#timers = this.#timers.filter((t) => t !== timer);
        reject(signal!.reason);
      };
      const timer: Timer = {
        at: this.#now + Math.max(0, ms),
        seq: this.#seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        cancel: onAbort,
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#timers.push(timer);
      this.#schedule();
    });
  }

  /** Wake-ups not yet due. */
  get pending(): number {
    return this.#timers.length;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#tick());
  }

  /** Everything runnable has run: jump to the earliest wake-up and wake every sleeper due then. */
  #tick(): void {
    this.#scheduled = false;
    if (this.#timers.length === 0) return;
    this.#timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const at = this.#timers[0]!.at;
    this.#now = Math.max(this.#now, at);
    const due = this.#timers.filter((t) => t.at <= this.#now);
    this.#timers = this.#timers.filter((t) => t.at > this.#now);
    for (const timer of due) timer.resolve();
    if (this.#timers.length > 0) this.#schedule();
  }
}
