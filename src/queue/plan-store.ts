/**
 * The App's Redis-side state about plans:
 * - the plan of each repository / pull request / head SHA, as versioned JSON with the specs it was
 *   made from, so merge-to-apply can carry out exactly what was reviewed;
 * - the guests each open pull request's latest plan touches, so every plan comment can name the
 *   other open pull requests racing for the same guest;
 * - the sticky comment of each pull request (id and hash of the body last written), so an
 *   unchanged re-plan writes nothing to GitHub.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { ClusterSpec, GuestSpec, Plan } from '../core/model.js';
import { parsePlanJson, renderPlanJson } from '../core/render/render-json.js';
import { ClusterSpecSchema, GuestSpecSchema } from '../core/render/plan-schema.js';
import type { KnownComment } from '../github/sticky-comment.js';
import { CommitSha, RepoRef } from './schema.js';

/** Version of the stored-plan envelope (the plan inside has its own version). */
export const STORED_PLAN_VERSION = 1;

/** Plans are kept this long: longer than reviews usually take. */
const PLAN_TTL_SECONDS = 90 * 24 * 3600;

const StoredPlanEnvelope = z.strictObject({
  version: z.literal(STORED_PLAN_VERSION),
  repo: RepoRef,
  pr: z.int().positive(),
  headSha: CommitSha,
  baseSha: CommitSha,
  /** Spec root in the repository the specs were read from. */
  specRoot: z.string(),
  draft: z.boolean(),
  /** The plan, exactly as `renderPlanJson` wrote it. */
  plan: z.string(),
  /** The head's Cluster documents and the head specs of the guests the plan covers. */
  specs: z.strictObject({ clusters: z.array(ClusterSpecSchema), guests: z.array(GuestSpecSchema) }),
});

/** A plan as stored for one pull request head. */
export interface StoredPlan {
  repo: RepoRef;
  pr: number;
  headSha: string;
  baseSha: string;
  specRoot: string;
  draft: boolean;
  plan: Plan;
  specs: { clusters: ClusterSpec[]; guests: GuestSpec[] };
}

/** A guest a pull request's plan touches: `cluster/vmid` and the name to show. */
export interface TouchedGuest {
  key: string;
  name: string;
}

const TouchedEntry = z.strictObject({ headSha: CommitSha, guests: z.array(z.strictObject({ key: z.string(), name: z.string() })) });

/** Reads and writes plan state under the App's state prefix. */
export class PlanStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private planKey(repoId: number, pr: number, sha: string): string {
    return `${this.prefix}:plan:${repoId}:${pr}:${sha}`;
  }

  private touchedKey(repoId: number): string {
    return `${this.prefix}:touched:${repoId}`;
  }

  private commentKey(repoId: number, pr: number): string {
    return `${this.prefix}:comment:${repoId}:${pr}`;
  }

  /** The key of the lock that serialises posting for one pull request. */
  postLockKey(repoId: number, pr: number): string {
    return `${this.prefix}:lock:post:${repoId}:${pr}`;
  }

  /** Stores the plan of one head, and remembers it as the pull request's latest. */
  async savePlan(stored: StoredPlan): Promise<void> {
    const envelope = StoredPlanEnvelope.parse({
      version: STORED_PLAN_VERSION,
      repo: stored.repo,
      pr: stored.pr,
      headSha: stored.headSha,
      baseSha: stored.baseSha,
      specRoot: stored.specRoot,
      draft: stored.draft,
      plan: renderPlanJson(stored.plan),
      specs: stored.specs,
    });
    await this.redis
      .multi()
      .set(this.planKey(stored.repo.id, stored.pr, stored.headSha), JSON.stringify(envelope), 'EX', PLAN_TTL_SECONDS)
      .set(`${this.prefix}:latest:${stored.repo.id}:${stored.pr}`, stored.headSha, 'EX', PLAN_TTL_SECONDS)
      .exec();
  }

  /** The plan stored for a pull request head, if any. Throws on a stored plan this build cannot read. */
  async getPlan(repoId: number, pr: number, headSha: string): Promise<StoredPlan | undefined> {
    const text = await this.redis.get(this.planKey(repoId, pr, headSha));
    if (text === null) return undefined;
    const envelope = StoredPlanEnvelope.parse(JSON.parse(text));
    return { ...envelope, plan: parsePlanJson(envelope.plan) };
  }

  /** The head SHA of the pull request's latest stored plan. */
  async latestPlanSha(repoId: number, pr: number): Promise<string | undefined> {
    return (await this.redis.get(`${this.prefix}:latest:${repoId}:${pr}`)) ?? undefined;
  }

  /** Records the guests the pull request's latest plan touches (replacing what an older plan touched). */
  async setTouched(repoId: number, pr: number, headSha: string, guests: readonly TouchedGuest[]): Promise<void> {
    await this.redis.hset(this.touchedKey(repoId), String(pr), JSON.stringify({ headSha, guests }));
  }

  /** The guests the pull request's latest plan touches (none when unknown). */
  async getTouched(repoId: number, pr: number): Promise<TouchedGuest[]> {
    const value = await this.redis.hget(this.touchedKey(repoId), String(pr));
    if (value === null) return [];
    const parsed = TouchedEntry.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data.guests : [];
  }

  /** Forgets a closed pull request's guests. */
  async removeTouched(repoId: number, pr: number): Promise<void> {
    await this.redis.hdel(this.touchedKey(repoId), String(pr));
  }

  /**
   * For each of `guests`, the other open pull requests whose latest plan touches it too, by
   * guest key, numbers ascending. One read of the repository's hash: open pull requests are few.
   */
  async overlaps(repoId: number, pr: number, guests: readonly TouchedGuest[]): Promise<Map<string, number[]>> {
    const wanted = new Set(guests.map((g) => g.key));
    const result = new Map<string, number[]>();
    const all = await this.redis.hgetall(this.touchedKey(repoId));
    for (const [field, value] of Object.entries(all)) {
      const other = Number(field);
      if (other === pr) continue;
      const parsed = TouchedEntry.safeParse(JSON.parse(value));
      if (!parsed.success) continue;
      for (const guest of parsed.data.guests) {
        if (!wanted.has(guest.key)) continue;
        const list = result.get(guest.key) ?? [];
        list.push(other);
        result.set(guest.key, list);
      }
    }
    for (const list of result.values()) list.sort((a, b) => a - b);
    return result;
  }

  /** The pull request's sticky comment as last written, if known. */
  async getComment(repoId: number, pr: number): Promise<KnownComment | undefined> {
    const found = await this.redis.hgetall(this.commentKey(repoId, pr));
    const id = Number(found.id);
    return Number.isInteger(id) && id > 0 && found.hash ? { id, bodyHash: found.hash } : undefined;
  }

  async setComment(repoId: number, pr: number, comment: KnownComment): Promise<void> {
    const key = this.commentKey(repoId, pr);
    await this.redis.multi().hset(key, 'id', String(comment.id), 'hash', comment.bodyHash).expire(key, PLAN_TTL_SECONDS).exec();
  }
}
