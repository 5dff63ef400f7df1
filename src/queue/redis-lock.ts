/**
 * A lock in Redis shared by every worker process: `SET key token NX PX ttl`, renewed while held,
 * released only by its holder (compare-and-delete). Each acquisition gets a fencing token that only
 * grows (`INCR` of a counter beside the lock), so a holder that lost its lock — paused past the
 * expiry, say — can be told apart from the current one by whoever checks the token. Used to
 * serialise posting per pull request (and, later, applies per guest and drift runs per repository).
 */
import type { Redis } from 'ioredis';

/** A held lock. */
export interface HeldLock {
  key: string;
  /** Fencing token: larger than every token handed out for this key before. */
  token: number;
  /** Aborted when the lock was found lost (expired and taken, or deleted) while renewing. */
  lost: AbortSignal;
  /** Releases the lock if still held; idempotent. */
  release(): Promise<void>;
  /** Asks Redis whether this holder still has the lock (its token is the lock's value). */
  stillHeld(): Promise<boolean>;
}

/** Options of {@link acquireLock}. */
interface LockOptions {
  /** Expiry without renewal; renewed every third of it while held. Default 30 s. */
  ttlMs?: number;
  /** How long to wait for a held lock before giving up (undefined resolves). Default 60 s. */
  waitMs?: number;
  /** First wait between attempts; doubles up to 1 s. Default 25 ms. */
  retryMs?: number;
}

const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/**
 * Takes the lock at `key`, waiting up to `waitMs` while someone else holds it. Resolves undefined
 * when it stayed held that long.
 */
export async function acquireLock(redis: Redis, key: string, options: LockOptions = {}): Promise<HeldLock | undefined> {
  const ttlMs = options.ttlMs ?? 30_000;
  const deadline = Date.now() + (options.waitMs ?? 60_000);
  let delay = options.retryMs ?? 25;
  for (;;) {
    const token = await redis.incr(`${key}:fence`);
    // The counter outlives any lock on the key, so tokens keep growing across holders.
    await redis.pexpire(`${key}:fence`, 7 * 24 * 3600_000);
    if ((await redis.set(key, String(token), 'PX', ttlMs, 'NX')) === 'OK') return held(redis, key, token, ttlMs);
    if (Date.now() + delay > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 1000);
  }
}

function held(redis: Redis, key: string, token: number, ttlMs: number): HeldLock {
  const controller = new AbortController();
  let released = false;
  const timer = setInterval(
    () => {
      redis.eval(RENEW, 1, key, String(token), String(ttlMs)).then(
        (renewed) => {
          if (renewed !== 1 && !released) {
            clearInterval(timer);
            controller.abort(new Error(`lock ${key} was lost`));
          }
        },
        // A failed renewal is retried at the next tick; the expiry covers a long outage.
        () => {},
      );
    },
    Math.max(10, Math.floor(ttlMs / 3)),
  );
  timer.unref();
  return {
    key,
    token,
    lost: controller.signal,
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      await redis.eval(RELEASE, 1, key, String(token));
    },
    async stillHeld() {
      return !released && (await redis.get(key)) === String(token);
    },
  };
}

/** Runs `fn` holding the lock at `key`; throws when it could not be taken within `waitMs`. */
export async function withLock<T>(redis: Redis, key: string, options: LockOptions, fn: (lock: HeldLock) => Promise<T>): Promise<T> {
  const lock = await acquireLock(redis, key, options);
  if (!lock) throw new Error(`lock ${key} is still held by another worker after ${options.waitMs ?? 60_000} ms`);
  try {
    return await fn(lock);
  } finally {
    await lock.release();
  }
}
