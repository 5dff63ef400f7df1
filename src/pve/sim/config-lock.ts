/**
 * The per-guest config lock (`lock_config`: an exclusive flock on the guest's lock file, waited
 * for up to 10 s; pve-guest-common `AbstractConfig.pm`, `lock_config`; pve-common `Tools.pm`,
 * `lock_file_full`). It is not the `lock:` key of the config: it serialises the writers of one
 * guest, so a synchronous `PUT …/config` waits for a `qmconfig` worker that holds it.
 */
import type { GuestType } from '../../core/guest-flavours.js';
import { ApiError } from './errors.js';
import { flavourOf } from './guest/flavours.js';
import type { TaskContext } from './tasks.js';

/** How long `lock_config` waits for the flock. */
const CONFIG_LOCK_TIMEOUT_MS = 10_000;

/** Releases a held config lock; calling it again does nothing. */
export type ReleaseConfigLock = () => void;

/** The lock file `config_file_lock` names, from the flavour table. */
function configLockFile(type: GuestType, vmid: number): string {
  return flavourOf(type).configLockFile(vmid);
}

/** `lock_file_full` gave up waiting: a plain die, `can't lock file '<file>' - got timeout` (500). */
class ConfigLockTimeoutError extends ApiError {
  override readonly name = 'ConfigLockTimeoutError';
  constructor(readonly file: string) {
    super(500, `can't lock file '${file}' - got timeout\n`);
  }
}

interface Waiter {
  grant(release: ReleaseConfigLock): void;
  timer: NodeJS.Timeout;
}

/** The config locks of one simulated cluster, first come first served. */
export class ConfigLocks {
  private readonly held = new Set<number>();
  private readonly waiting = new Map<number, Waiter[]>();

  /** Takes the lock now if it is free (no waiting, like `flock(LOCK_NB)`). */
  tryAcquire(vmid: number): ReleaseConfigLock | undefined {
    if (this.held.has(vmid)) return undefined;
    this.held.add(vmid);
    return this.releaser(vmid);
  }

  /** Waits for the lock, at most `timeoutMs`; rejects with {@link ConfigLockTimeoutError}. */
  acquire(type: GuestType, vmid: number, timeoutMs = CONFIG_LOCK_TIMEOUT_MS): Promise<ReleaseConfigLock> {
    const now = this.tryAcquire(vmid);
    if (now) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(vmid) ?? [];
      const waiter: Waiter = {
        grant: resolve,
        timer: setTimeout(() => {
          const list = this.waiting.get(vmid);
          const at = list?.indexOf(waiter) ?? -1;
          if (list && at >= 0) list.splice(at, 1);
          if (list?.length === 0) this.waiting.delete(vmid);
          reject(new ConfigLockTimeoutError(configLockFile(type, vmid)));
        }, timeoutMs),
      };
      queue.push(waiter);
      this.waiting.set(vmid, queue);
    });
  }

  /**
   * Runs `fn` under the lock: at once when it is free (the answer stays synchronous), else once
   * the holder lets go. The lock is released when `fn` returns or throws.
   */
  run<T>(type: GuestType, vmid: number, fn: () => T): T | Promise<T> {
    const now = this.tryAcquire(vmid);
    if (now) {
      try {
        return fn();
      } finally {
        now();
      }
    }
    return this.acquire(type, vmid).then((release) => {
      try {
        return fn();
      } finally {
        release();
      }
    });
  }

  /** Forgets every waiter (server shutdown): their requests never complete. */
  dispose(): void {
    for (const list of this.waiting.values()) for (const waiter of list) clearTimeout(waiter.timer);
    this.waiting.clear();
  }

  private releaser(vmid: number): ReleaseConfigLock {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.get(vmid)?.shift();
      if (this.waiting.get(vmid)?.length === 0) this.waiting.delete(vmid);
      if (!next) {
        this.held.delete(vmid);
        return;
      }
      // Handed straight to the next waiter: nobody can slip in between.
      clearTimeout(next.timer);
      next.grant(this.releaser(vmid));
    };
  }
}

/**
 * A worker that runs under the guest's config lock, as every Proxmox worker that changes a guest
 * wraps its work in `lock_config`. Started `atStart`, it takes the lock at once when it is free —
 * before the UPID is answered — or waits for it, logging what `lock_file_full` prints. `body` may
 * let go early (`unlock`, as a create does before its autostart); otherwise the lock is released
 * when `body` ends.
 */
export function underConfigLock(
  locks: ConfigLocks,
  type: GuestType,
  vmid: number,
  body: (log: TaskContext, unlock: ReleaseConfigLock) => void | Promise<void>,
): (log: TaskContext) => Promise<void> {
  return async (log) => {
    let release = locks.tryAcquire(vmid);
    if (!release) {
      log.log('trying to acquire lock...');
      release = await locks.acquire(type, vmid);
      log.log(' OK');
    }
    try {
      await body(log, release);
    } finally {
      release();
    }
  };
}

/** A worker body that does its work when the task's simulated time is up. */
export function whenElapsed(
  body: (log: TaskContext, unlock: ReleaseConfigLock) => void,
): (log: TaskContext, unlock: ReleaseConfigLock) => Promise<void> {
  return async (log, unlock) => {
    await log.elapsed;
    body(log, unlock);
  };
}
