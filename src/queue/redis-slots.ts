/**
 * Per-cluster and per-node limits on items being written at once, shared by every worker process
 * on one Redis: a counting semaphore per cluster and per node, each a sorted set of holders scored
 * by their expiry. A slot is taken for both at once by one Lua script (node and cluster, or
 * neither), so a guest queued behind a busy node never holds a cluster slot that guests of other
 * nodes could use. An item of a kind without a node (a pool: `kindHasNode`) takes the cluster's
 * slot alone. Holders renew their expiry while they hold a slot; a holder that died (a killed
 * worker) drops out when its expiry passes, so a crash never shrinks the limit for good. Expiry is
 * judged by Redis's own clock (`TIME`), so worker hosts whose clocks disagree still agree on it.
 *
 * Waiting is event-driven: a release publishes the node on the cluster's channel and waiters of
 * that node (or any waiter blocked by the cluster's limit) try again at once; a slow poll covers
 * holders that expire without a release. Why not BullMQ's rate limiter or groups: the limiter
 * bounds jobs per time window, not jobs in flight, and groups are not in BullMQ's open-source
 * edition.
 */
import type { Redis } from 'ioredis';

/** The limits, in items written at once. */
export interface SlotLimits {
  cluster: number;
  node: number;
}

/** Options of {@link RedisSlots}. */
interface RedisSlotsOptions {
  /** Prefix of the slot keys and channels (the App's state prefix). */
  prefix: string;
  limits: SlotLimits;
  /** A holder that stops renewing loses its slot after this long. */
  ttlMs: number;
  /** Retry this often even without a release message (expired holders free slots silently). */
  pollMs?: number;
}

/** Returned by {@link RedisSlots.acquire}: releases the slot; safe to call twice. */
type ReleaseSlot = () => void;

// KEYS: the node's set (absent for a node-less item), then the cluster's; ARGV: holder, ttl, then
// each key's limit. 1: taken (or already held by this holder: renewed); 0: the node is full; -1:
// the cluster is full.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[2])
local held = true
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  if not redis.call('ZSCORE', KEYS[i], ARGV[1]) then held = false end
end
if not held then
  for i = 1, #KEYS do
    if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[2 + i]) then
      if i == #KEYS then return -1 else return 0 end
    end
  end
end
for i = 1, #KEYS do redis.call('ZADD', KEYS[i], expiry, ARGV[1]) end
return 1
`;

// Pushes the holder's expiry out, only if it still holds the slot (XX): a holder that already
// expired must take a new slot, not resurrect the old one past the limit.
const RENEW = `
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
local changed = 0
for i = 1, #KEYS do changed = changed + redis.call('ZADD', KEYS[i], 'XX', 'CH', expiry, ARGV[1]) end
return changed
`;

// KEYS: the sets, then the channel last; ARGV: holder, node ('' for none).
const RELEASE = `
local removed = 0
for i = 1, #KEYS - 1 do removed = removed + redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('PUBLISH', KEYS[#KEYS], ARGV[2])
return removed
`;

interface Waiter {
  /** Undefined for a node-less item: only the cluster's limit can hold it up. */
  node: string | undefined;
  /**
   * What the last try found full; `trying` while a try is in flight, when any release may be one
   * the try did not see, so it wakes the waiter whatever its node.
   */
  blockedBy: 'node' | 'cluster' | 'trying';
  woken: boolean;
  wake: () => void;
}

/** The shared slots; one per worker process. */
export class RedisSlots {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly subscribed = new Map<string, Promise<unknown>>();
  private readonly pollMs: number;

  /**
   * `redis` runs the scripts; `subscriber` (a connection of its own: a subscribed connection can
   * do nothing else) hears releases from other processes. Without it, waiters poll.
   */
  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis | undefined,
    private readonly options: RedisSlotsOptions,
  ) {
    this.pollMs = options.pollMs ?? 1000;
    subscriber?.on('message', (channel: string, node: string) => this.wake(channel, node));
  }

  /** The sets a holding is in: the node's (when there is a node), then the cluster's. */
  private sets(cluster: string, node: string | undefined): string[] {
    const base = `${this.options.prefix}:apply:slots:${cluster}`;
    return node === undefined ? [base] : [`${base}:node:${node}`, base];
  }

  private limitsOf(node: string | undefined): string[] {
    const { limits } = this.options;
    return node === undefined ? [String(limits.cluster)] : [String(limits.node), String(limits.cluster)];
  }

  private channel(cluster: string): string {
    return `${this.options.prefix}:apply:slots:${cluster}:released`;
  }

  private wake(channel: string, node: string | undefined): void {
    for (const waiter of this.waiters.get(channel) ?? []) {
      if (waiter.blockedBy !== 'node' || (waiter.node !== undefined && waiter.node === node)) {
        waiter.woken = true;
        waiter.wake();
      }
    }
  }

  private subscribe(cluster: string): Promise<unknown> {
    const channel = this.channel(cluster);
    let done = this.subscribed.get(channel);
    if (!done) {
      done = this.subscriber ? this.subscriber.subscribe(channel).catch(() => this.subscribed.delete(channel)) : Promise.resolve();
      this.subscribed.set(channel, done);
    }
    return done;
  }

  /**
   * Waits for a slot on `node` of `cluster` (and of the cluster itself) for `holder`, a name
   * unique to this holding (job and attempt); with `node` undefined (an item of a kind without a
   * node), for the cluster's slot alone. Rejects with the signal's reason when it aborts.
   */
  async acquire(cluster: string, node: string | undefined, holder: string, signal?: AbortSignal): Promise<ReleaseSlot> {
    const sets = this.sets(cluster, node);
    const channel = this.channel(cluster);
    const { ttlMs } = this.options;
    await this.subscribe(cluster);
    // Registered before the first try, so a release between a failed try and the wait is not missed.
    const waiter: Waiter = { node, blockedBy: 'trying', woken: false, wake: () => {} };
    let set = this.waiters.get(channel);
    if (!set) this.waiters.set(channel, (set = new Set()));
    set.add(waiter);
    try {
      for (;;) {
        signal?.throwIfAborted();
        waiter.woken = false;
        waiter.blockedBy = 'trying';
        const taken = Number(await this.redis.eval(ACQUIRE, sets.length, ...sets, holder, String(ttlMs), ...this.limitsOf(node)));
        if (taken === 1) break;
        waiter.blockedBy = taken === 0 ? 'node' : 'cluster';
        if (waiter.woken) continue;
        await new Promise<void>((resolve) => {
          const done = (): void => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            resolve();
          };
          const timer = setTimeout(done, this.pollMs);
          waiter.wake = done;
          signal?.addEventListener('abort', done, { once: true });
        });
      }
    } finally {
      set.delete(waiter);
      if (set.size === 0) this.waiters.delete(channel);
    }
    return this.held(cluster, node, holder);
  }

  private held(cluster: string, node: string | undefined, holder: string): ReleaseSlot {
    const sets = this.sets(cluster, node);
    const channel = this.channel(cluster);
    const renew = setInterval(
      () => {
        // A failed renewal is tried again at the next tick; the expiry covers a long outage.
        this.redis.eval(RENEW, sets.length, ...sets, holder, String(this.options.ttlMs)).catch(() => {});
      },
      Math.max(50, Math.floor(this.options.ttlMs / 3)),
    );
    renew.unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      clearInterval(renew);
      this.redis.eval(RELEASE, sets.length + 1, ...sets, channel, holder, node ?? '').catch(() => {});
      // This process's waiters need no round trip to hear about it; their next try goes out on
      // the same connection after the release, so it sees the slot free.
      this.wake(channel, node);
    };
  }

  /** Holders of a cluster's slots right now (for tests and metrics); of one node's with `node`. */
  async holders(cluster: string, node?: string): Promise<string[]> {
    return this.redis.zrange(this.sets(cluster, node)[0] as string, 0, -1);
  }
}
