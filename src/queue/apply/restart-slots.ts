/**
 * The restarts in flight per cluster in the App (README "Restarts"), shared by every worker on one
 * Redis: a counting semaphore per cluster of `limit` holders (the plan's `restart.inFlight`, from
 * the Cluster document's `restartsInFlight`), kept by `RedisSlots` under keys of its own so a
 * restart never takes one of the apply's per-cluster or per-node slots. Waiters poll: restarts
 * are few and slow.
 */
import type { Redis } from 'ioredis';
import { RedisSlots } from '../redis-slots.js';

/** Takes one of `cluster`'s `limit` restart slots for `holder`. */
export type AcquireRestart = (cluster: string, limit: number, holder: string, signal?: AbortSignal) => Promise<() => void>;

/** Restart slots under `prefix`; a holder that dies drops out after `ttlMs`. */
export function redisRestartSlots(redis: Redis, prefix: string, ttlMs: number): AcquireRestart {
  const byLimit = new Map<number, RedisSlots>();
  return (cluster, limit, holder, signal) => {
    let slots = byLimit.get(limit);
    if (!slots) {
      slots = new RedisSlots(redis, undefined, {
        prefix: `${prefix}:restart`,
        limits: { cluster: limit, node: limit },
        ttlMs,
        pollMs: 200,
      });
      byLimit.set(limit, slots);
    }
    return slots.acquire(cluster, undefined, holder, signal);
  };
}
