/**
 * Per-cluster and per-node limits on guests being written at once, shared by every worker process
 * on one Redis: a counting semaphore per cluster and per node, each a sorted set of holders scored
 * by their expiry. A slot is taken for both at once by one Lua script (node and cluster, or
 * neither), so a guest queued behind a busy node never holds a cluster slot that guests of other
 * nodes could use. Holders renew their expiry while they hold a slot; a holder that died (a killed
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

/** The limits, in guests written at once. */
interface SlotLimits {
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

// 1: taken (or already held by this holder: renewed); 0: the node is full; -1: the cluster is full.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local held = redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZSCORE', KEYS[2], ARGV[1])
if not held then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return -1 end
end
redis.call('ZADD', KEYS[1], expiry, ARGV[1])
redis.call('ZADD', KEYS[2], expiry, ARGV[1])
return 1
`;

// Pushes the holder's expiry out, only if it still holds the slot (XX): a holder that already
// expired must take a new slot, not resurrect the old one past the limit.
const RENEW = `
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
local a = redis.call('ZADD', KEYS[1], 'XX', 'CH', expiry, ARGV[1])
local b = redis.call('ZADD', KEYS[2], 'XX', 'CH', expiry, ARGV[1])
return a + b
`;

const RELEASE = `
local removed = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', KEYS[3], ARGV[2])
return removed
`;

interface Waiter {
  node: string;
  blockedBy: 'node' | 'cluster';
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

  private keys(cluster: string, node: string): [string, string, string] {
    const base = `${this.options.prefix}:apply:slots:${cluster}`;
    return [`${base}:node:${node}`, base, this.channel(cluster)];
  }

  private channel(cluster: string): string {
    return `${this.options.prefix}:apply:slots:${cluster}:released`;
  }

  private wake(channel: string, node: string): void {
    for (const waiter of this.waiters.get(channel) ?? []) {
      if (waiter.blockedBy === 'cluster' || waiter.node === node) {
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
   * unique to this holding (job and attempt). Rejects with the signal's reason when it aborts.
   */
  async acquire(cluster: string, node: string, holder: string, signal?: AbortSignal): Promise<ReleaseSlot> {
    const [nodeKey, clusterKey, channel] = this.keys(cluster, node);
    const { limits, ttlMs } = this.options;
    await this.subscribe(cluster);
    // Registered before the first try, so a release between a failed try and the wait is not missed.
    const waiter: Waiter = { node, blockedBy: 'node', woken: false, wake: () => {} };
    let set = this.waiters.get(channel);
    if (!set) this.waiters.set(channel, (set = new Set()));
    set.add(waiter);
    try {
      for (;;) {
        signal?.throwIfAborted();
        waiter.woken = false;
        const taken = Number(
          await this.redis.eval(ACQUIRE, 2, nodeKey, clusterKey, holder, String(ttlMs), String(limits.node), String(limits.cluster)),
        );
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

  private held(cluster: string, node: string, holder: string): ReleaseSlot {
    const [nodeKey, clusterKey, channel] = this.keys(cluster, node);
    const renew = setInterval(
      () => {
        // A failed renewal is tried again at the next tick; the expiry covers a long outage.
        this.redis.eval(RENEW, 2, nodeKey, clusterKey, holder, String(this.options.ttlMs)).catch(() => {});
      },
      Math.max(50, Math.floor(this.options.ttlMs / 3)),
    );
    renew.unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      clearInterval(renew);
      this.redis.eval(RELEASE, 3, nodeKey, clusterKey, channel, holder, node).catch(() => {});
      // This process's waiters need no round trip to hear about it; their next try goes out on
      // the same connection after the release, so it sees the slot free.
      this.wake(channel, node);
    };
  }

  /** Holders of a cluster's slots right now (for tests and metrics). */
  async holders(cluster: string): Promise<string[]> {
    return this.redis.zrange(`${this.options.prefix}:apply:slots:${cluster}`, 0, -1);
  }
}
