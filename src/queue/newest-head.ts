/**
 * Newest head wins: the head commit of each open pull request, as far as the App has heard, kept
 * in Redis so every web and worker process agrees. Webhook handlers record it; the plan worker
 * skips a job whose head is no longer the newest, and checks again right before posting, so a plan
 * for an older push never lands over a newer one.
 *
 * GitHub does not deliver webhooks in order, so the newest is decided by the pull request's
 * `updated_at` in the payload, not by arrival: a late delivery of an older push changes nothing.
 * `updated_at` has one-second resolution; on a tie the later arrival wins (deliveries of one
 * second usually arrive in order, and the tie-breaker must be deterministic).
 */
import type { Redis, Result } from 'ioredis';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** {@link NewestHeads.record}'s script, defined on first use. */
    recordNewestHead(key: string, sha: string, at: string, ttlSeconds: string): Result<number, Context>;
    /** {@link recordHeadCommand}'s script: the record, and whether `jobKey` held a job before it. */
    recordNewestHeadFor(key: string, jobKey: string, sha: string, at: string, ttlSeconds: string): Result<number, Context>;
  }
}

/** How long a pull request's head is remembered without news: longer than any review. */
const HEAD_TTL_SECONDS = 90 * 24 * 3600;

// Atomic compare-and-set on the timestamp, so two web processes racing cannot go backwards.
const RECORD_SCRIPT = `
local at = redis.call('HGET', KEYS[1], 'at')
if at and tonumber(at) > tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'sha', ARGV[1], 'at', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`;

// The same, for a job added right after it in the same pipeline (`PlanQueueProducer.enqueueIfNewest`):
// when a newer head is known it also says whether the job existed before (2) or not (0), so the
// caller removes only a job that its own add created.
const RECORD_FOR_JOB_SCRIPT = `
local at = redis.call('HGET', KEYS[1], 'at')
if at and tonumber(at) > tonumber(ARGV[2]) then
  if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
  return 0
end
redis.call('HSET', KEYS[1], 'sha', ARGV[1], 'at', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`;

/** What the record-for-a-job command answered: recorded, or a newer head known (the job there before or not). */
export const RECORDED = 1;
export const NEWER_KNOWN = 0;
export const NEWER_KNOWN_JOB_EXISTED = 2;

/** The epoch-ms time of `updatedAt` (ISO time or epoch ms); throws for anything else. */
function headTime(pr: number, updatedAt: string | number): number {
  const at = typeof updatedAt === 'number' ? updatedAt : Date.parse(updatedAt);
  if (!Number.isFinite(at))
    throw new Error(`cannot record the head of pull request ${pr}: updated_at '${String(updatedAt)}' is not a time`);
  return at;
}

/** Reads and records pull requests' newest heads under `prefix` (the App's state prefix, see `stateKeys`). */
export class NewestHeads {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(repoId: number, pr: number): string {
    return `${this.prefix}:pr:${repoId}:${pr}:head`;
  }

  /**
   * Records `sha` as the pull request's head as of `updatedAt` (ISO time or epoch ms). Resolves
   * false when a newer head is already recorded: the caller need not plan this one.
   */
  async record(repoId: number, pr: number, sha: string, updatedAt: string | number): Promise<boolean> {
    const at = headTime(pr, updatedAt);
    // evalsha after the first call: a burst of deliveries does not send (and Redis does not hash) the script each time.
    if (!this.redis.recordNewestHead) this.redis.defineCommand('recordNewestHead', { numberOfKeys: 1, lua: RECORD_SCRIPT });
    const result = await this.redis.recordNewestHead(this.key(repoId, pr), sha, String(at), String(HEAD_TTL_SECONDS));
    return result === 1;
  }

  /**
   * {@link record}, sent at once on `redis` — the connection that adds the job `jobKey` (its full
   * Redis key) right after it — for a caller that sends both before awaiting either. Answers
   * {@link RECORDED}, {@link NEWER_KNOWN} or {@link NEWER_KNOWN_JOB_EXISTED}. Throws (before
   * sending) when `updatedAt` is not a time.
   */
  recordFor(redis: Redis, head: { repoId: number; pr: number; sha: string; updatedAt: string | number }, jobKey: string): Promise<number> {
    const at = headTime(head.pr, head.updatedAt);
    if (!redis.recordNewestHeadFor) redis.defineCommand('recordNewestHeadFor', { numberOfKeys: 2, lua: RECORD_FOR_JOB_SCRIPT });
    return redis.recordNewestHeadFor(this.key(head.repoId, head.pr), jobKey, head.sha, String(at), String(HEAD_TTL_SECONDS));
  }

  /** The newest head recorded for the pull request, if any. */
  async get(repoId: number, pr: number): Promise<string | undefined> {
    return (await this.redis.hget(this.key(repoId, pr), 'sha')) ?? undefined;
  }

  /** True unless another head than `sha` is recorded as newer. */
  async isNewest(repoId: number, pr: number, sha: string): Promise<boolean> {
    const newest = await this.get(repoId, pr);
    return newest === undefined || newest === sha;
  }
}
