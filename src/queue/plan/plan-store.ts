/**
 * The App's Redis-side state about plans:
 * - the plan each pull request's sticky comment shows — its *posted* plan — as versioned JSON with
 *   the specs it was made from, so merge-to-apply can carry out exactly what was reviewed. A plan
 *   the job computed is kept in the job's memory until its comment was written: one that was
 *   superseded, or whose comment GitHub refused, is never stored, so it can never be applied;
 * - the guests each open pull request's latest plan touches, so every plan comment can name the
 *   other open pull requests racing for the same guest;
 * - the sticky comment of each pull request (id and hash of the body last written), so an
 *   unchanged re-plan writes nothing to GitHub.
 */
import type { Rehearsal } from '../../core/rehearse/outcome.js';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { ClusterSpec, GuestSpec, ObjectSpec, Plan } from '../../core/model.js';
import { parsePlanJson, renderPlanJson } from '../../core/render/render-json.js';
import { ClusterSpecSchema, GuestSpecSchema, ObjectSpecSchema } from '../../core/render/plan-schema.js';
import type { KnownComment } from '../../github/sticky-comment.js';
import { CommitSha, RepoRef } from '../schema.js';

/**
 * Version of the stored-plan envelope (the plan inside has its own version). Version 1 was stored
 * before its comment was posted, so it may never have been shown: it is not read as a posted plan.
 */
const STORED_PLAN_VERSION = 2;

/** Plans are kept this long: longer than reviews usually take. */
const PLAN_TTL_SECONDS = 90 * 24 * 3600;

const StoredPlanEnvelope = z.strictObject({
  version: z.literal(STORED_PLAN_VERSION),
  repo: RepoRef,
  pr: z.int().positive(),
  headSha: CommitSha,
  baseSha: CommitSha,
  /** The branch the pull request targeted when it was planned; a plan of another base is never applied. */
  baseRef: z.string().min(1).max(255).optional(),
  /** Spec root in the repository the specs were read from. */
  specRoot: z.string(),
  draft: z.boolean(),
  /** sha256 of the sticky comment body that showed this plan, as GitHub accepted it. */
  commentHash: z.string().regex(/^[0-9a-f]{64}$/),
  /**
   * When the comment first showed this plan, by GitHub's clock (the write's `updated_at`). Absent
   * (stored before this was recorded): not known to have been shown before any merge.
   */
  shownAt: z.iso.datetime({ offset: true }).optional(),
  /** The plan, exactly as `renderPlanJson` wrote it. */
  plan: z.string(),
  /** The apply rehearsal shown with the plan (`core/rehearse/outcome.ts`), as JSON; absent: none. */
  rehearsal: z.string().max(1_000_000).optional(),
  /**
   * The head's Cluster documents, the head specs of the guests the plan covers and the documents
   * of the other items it covers (absent in plans stored before kinds existed).
   */
  specs: z.strictObject({
    clusters: z.array(ClusterSpecSchema),
    guests: z.array(GuestSpecSchema),
    objects: z.array(ObjectSpecSchema).optional(),
  }),
});

/** A plan as posted for one pull request head. */
export interface StoredPlan {
  repo: RepoRef;
  pr: number;
  headSha: string;
  baseSha: string;
  /** The base branch it was planned against (absent: not known to the job that planned it). */
  baseRef?: string | undefined;
  specRoot: string;
  draft: boolean;
  /**
   * When the pull request's comment first showed this plan, by GitHub's clock (ISO 8601): a merge
   * applies it only when that is before `merged_at`. Absent: not known.
   */
  shownAt?: string | undefined;
  plan: Plan;
  specs: { clusters: ClusterSpec[]; guests: GuestSpec[]; objects?: ObjectSpec[] };
  /** The apply rehearsal shown with the plan, when there was one. */
  rehearsal?: Rehearsal | undefined;
}

/** A guest a pull request's plan touches: `cluster/vmid` and the name to show. */
export interface TouchedGuest {
  key: string;
  name: string;
}

const ChainCheckRun = z.strictObject({ id: z.int().positive(), headSha: CommitSha });

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

  private latestKey(repoId: number, pr: number): string {
    return `${this.prefix}:latest:${repoId}:${pr}`;
  }

  private checkRunKey(repoId: number, pr: number, chain: string): string {
    return `${this.prefix}:checkrun:${repoId}:${pr}:${chain}`;
  }

  private refreshKey(repoId: number, pr: number): string {
    return `${this.prefix}:refresh:${repoId}:${pr}`;
  }

  private commentKey(repoId: number, pr: number): string {
    return `${this.prefix}:comment:${repoId}:${pr}`;
  }

  /** The key of the lock that serialises posting for one pull request. */
  postLockKey(repoId: number, pr: number): string {
    return `${this.prefix}:lock:post:${repoId}:${pr}`;
  }

  /**
   * Records `stored` as the plan the pull request's sticky comment shows, its comment having been
   * written with the body hashed as `commentHash` (since `stored.shownAt`). Only a posted plan is
   * ever applied.
   */
  async savePostedPlan(stored: StoredPlan, commentHash: string): Promise<void> {
    const envelope = StoredPlanEnvelope.parse({
      version: STORED_PLAN_VERSION,
      repo: stored.repo,
      pr: stored.pr,
      headSha: stored.headSha,
      baseSha: stored.baseSha,
      ...(stored.baseRef !== undefined ? { baseRef: stored.baseRef } : {}),
      specRoot: stored.specRoot,
      draft: stored.draft,
      commentHash,
      ...(stored.shownAt !== undefined ? { shownAt: stored.shownAt } : {}),
      plan: renderPlanJson(stored.plan),
      ...(stored.rehearsal ? { rehearsal: JSON.stringify(stored.rehearsal) } : {}),
      specs: stored.specs,
    });
    await this.redis
      .multi()
      .set(this.planKey(stored.repo.id, stored.pr, stored.headSha), JSON.stringify(envelope), 'EX', PLAN_TTL_SECONDS)
      .set(this.latestKey(stored.repo.id, stored.pr), stored.headSha, 'EX', PLAN_TTL_SECONDS)
      .exec();
  }

  /**
   * Forgets which plan the pull request's comment shows, before the comment is written again:
   * from then on it may show something else, so nothing may be applied from it until the write
   * succeeded and the new plan is marked posted. Resolves with the head whose plan was posted.
   */
  async unmarkPosted(repoId: number, pr: number): Promise<string | undefined> {
    return (await this.redis.getdel(this.latestKey(repoId, pr))) ?? undefined;
  }

  /** Marks `headSha`'s plan posted again after GitHub refused to change the comment (unless another was posted since). */
  async restorePosted(repoId: number, pr: number, headSha: string): Promise<void> {
    await this.redis.set(this.latestKey(repoId, pr), headSha, 'EX', PLAN_TTL_SECONDS, 'NX');
  }

  /**
   * The plan the pull request's sticky comment shows — with `headSha`, only if it is that head's.
   * Throws on a stored plan this build cannot read; a plan stored before it was posted (envelope
   * version 1) is no posted plan.
   */
  async getPostedPlan(repoId: number, pr: number, headSha?: string): Promise<StoredPlan | undefined> {
    const latest = await this.redis.get(this.latestKey(repoId, pr));
    if (latest === null || (headSha !== undefined && latest !== headSha)) return undefined;
    const text = await this.redis.get(this.planKey(repoId, pr, latest));
    if (text === null) return undefined;
    const json = JSON.parse(text) as { version?: unknown };
    if (json.version === 1) return undefined;
    const { commentHash: _hash, version: _version, rehearsal, ...envelope } = StoredPlanEnvelope.parse(json);
    return { ...envelope, plan: parsePlanJson(envelope.plan), ...(rehearsal ? { rehearsal: JSON.parse(rehearsal) as Rehearsal } : {}) };
  }

  /** The check run an attempt chain of a pull request's plan (a job and its retries) made, and its commit, if any. */
  async getCheckRun(repoId: number, pr: number, chain: string): Promise<{ id: number; headSha: string } | undefined> {
    const parsed = ChainCheckRun.safeParse(JSON.parse((await this.redis.get(this.checkRunKey(repoId, pr, chain))) ?? 'null'));
    return parsed.success ? parsed.data : undefined;
  }

  /** Remembers the check run of an attempt chain, for its retries: as long as a failed job is kept. */
  async setCheckRun(repoId: number, pr: number, chain: string, run: { id: number; headSha: string }): Promise<void> {
    await this.redis.set(this.checkRunKey(repoId, pr, chain), JSON.stringify(run), 'EX', 7 * 24 * 3600);
  }

  /** Forgets the check run of an attempt chain once it was completed. */
  async forgetCheckRun(repoId: number, pr: number, chain: string): Promise<void> {
    await this.redis.del(this.checkRunKey(repoId, pr, chain));
  }

  /**
   * The refresh generation of a pull request's comment: a refresh job asked for while one of this
   * generation is waiting is the same job. It grows when a refresh starts ({@link startRefresh}).
   */
  async refreshGeneration(repoId: number, pr: number): Promise<number> {
    return Number(await this.redis.get(this.refreshKey(repoId, pr))) || 0;
  }

  /**
   * Called by a refresh before it reads anything: a change recorded after this is asked for under
   * the next generation, so it gets a refresh of its own, while every change recorded before it is
   * seen by this one.
   */
  async startRefresh(repoId: number, pr: number): Promise<void> {
    const key = this.refreshKey(repoId, pr);
    await this.redis.multi().incr(key).expire(key, PLAN_TTL_SECONDS).exec();
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
    if (!Number.isInteger(id) || id <= 0 || !found.hash) return undefined;
    return { id, bodyHash: found.hash, ...(found.at ? { writtenAt: found.at } : {}) };
  }

  /** Remembers the comment as last written — and when GitHub says it got that body (kept while the body stays). */
  async setComment(repoId: number, pr: number, comment: KnownComment): Promise<void> {
    const key = this.commentKey(repoId, pr);
    const multi = this.redis.multi().hset(key, 'id', String(comment.id), 'hash', comment.bodyHash);
    if (comment.writtenAt !== undefined) multi.hset(key, 'at', comment.writtenAt);
    else multi.hdel(key, 'at');
    await multi.expire(key, PLAN_TTL_SECONDS).exec();
  }
}
