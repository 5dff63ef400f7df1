/**
 * The rehearsal's clock: time that skips ahead. Where the apply would wait (a lock held by a
 * backup, a poll's backoff), the wait ends at once and the clock jumps by it; `onSkip` hears of
 * each jump, so the simulated copy can end what the real cluster would have ended meanwhile (a
 * lock held when the plan was made).
 */
import type { Clock } from '../../util/sleep.js';

/** A {@link Clock} whose sleeps end at once, moving its time on by their length. */
export function skippingClock(onSkip: (ms: number) => void): Clock {
  let now = 0;
  return {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) {
          reject(signal.reason);
          return;
        }
        now += Math.max(0, ms);
        onSkip(ms);
        // After the I/O already under way, as a real wait would let it through.
        setImmediate(resolve);
      }),
  };
}
