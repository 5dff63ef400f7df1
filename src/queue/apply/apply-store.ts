/**
 * Merge-to-apply's state in Redis: apply runs, and a FIFO of tickets per item.
 *
 * A **run** is one apply of one stored plan: a merge, or a `/pve apply`. It keeps what it applies
 * (each item's reviewed plan — a guest's, or an item of another kind such as a pool — copied from
 * the stored plan when the run starts, so a later re-plan of the same commit cannot change what
 * this run does) and each item's progress and result. Items are named by their key as text
 * (`core/kinds/resource-key.ts`: `cluster/vmid` for a guest, as runs stored before other kinds
 * have them; `cluster/kind/id` otherwise), and the FIFOs, locks and results below treat that key
 * as opaque. Only the phases (`phaseGate`) read a key's kind.
 *
 * **Phases.** A run applies in the phases of its items' kinds (`core/kinds/kind.ts`): on each
 * cluster, an item starts only once every item of earlier phases of the same run on that cluster
 * has its result. The run hash counts the items left per phase and cluster; the script that
 * records a result counts it down in the same step, so the worker that finishes the last item of
 * a phase knows it and wakes the next phase's jobs (`apply-worker.ts`).
 *
 * **Order and exclusion per item.** BullMQ's open-source edition has no groups, and a job lock
 * alone would give exclusion without order. So every item (a guest: cluster + VMID) has a FIFO of
 * tickets, a sorted set of run ids scored by the run's order key: the merge's `merged_at` (or the
 * time `/pve apply` was accepted). A guest job runs only while its ticket is the head; the others
 * wait (delayed in BullMQ, woken by the head when it finishes). Scoring by `merged_at` rather
 * than by arrival makes merge order independent of the order GitHub delivers webhooks and
 * workers pick them up. The one exception is kept explicit: a head that has **started** is never
 * overtaken — a ticket that arrives late with an earlier `merged_at` goes right behind it (the
 * change it was reviewed against has then moved, and the apply reports a conflict rather than
 * write over it).
 *
 * The FIFO orders runs; it does not stop two instances of the *same* job (BullMQ runs a job again
 * when its worker looks dead — paused past its lock, cut off from Redis — though it may still be
 * running). That is the per-guest lock's work (`src/queue/redis-lock.ts`: fencing token, expiry, renewal):
 * a job writes its progress and result only while its token is the lock's value, checked inside
 * the same Lua script that writes, and checks it again before every Proxmox write step.
 *
 * Everything here is a few keys per run and per guest under the App's state prefix; the scripts
 * touch several keys at once, so the App needs one Redis (not a Redis Cluster), as BullMQ does.
 */
import { upgradeGuestItem } from '../../core/render/render-json.js';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { APPLY_STATUSES, type ApplyStatus, type GuestApplyResult, type ObjectApplyResult } from '../../core/apply-result.js';
import { APPLY_PHASES, type ApplyPhase, phaseRank } from '../../core/kinds/kind.js';
import { objectKind, phaseOf } from '../../core/kinds/registry.js';
import { errorMessage } from '../../util/error-message.js';
import { GUEST_KIND, guestKeyText, parseKeyText } from '../../core/kinds/resource-key.js';
import type { GuestPlan, ObjectPlan } from '../../core/model.js';
import { GuestPlanSchema, ObjectPlanSchema } from '../../core/render/plan-schema.js';
import type { KnownComment } from '../../github/sticky-comment.js';
import { CommitSha, RepoRef } from '../schema.js';

/** A guest's state in a run: not finished yet (`queued`, `waiting`, `running`) or its result. */
export type GuestRunStatus = 'queued' | 'waiting' | 'running' | ApplyStatus;

/** One guest of a run as the comment shows it. */
export interface GuestProgress extends Omit<GuestApplyResult, 'status'> {
  status: GuestRunStatus;
  /** Why a guest that has not finished is not running: behind another apply, a lock, a retry. */
  waiting?: string;
  /** Runs of its job so far. */
  attempts?: number;
  /** When its result was recorded (ISO). */
  finishedAt?: string;
  /**
   * A write (its operation) sent and not yet confirmed: recorded before the request goes out, so
   * the run after a crash knows the change it finds done was this run's own.
   */
  inFlight?: string;
}

/** One item of another kind (a pool, a guest's membership) of a run as the comment shows it. */
export interface ObjectProgress extends Omit<ObjectApplyResult, 'status'> {
  status: GuestRunStatus;
  waiting?: string;
  attempts?: number;
  finishedAt?: string;
  /** The item's apply started and was not seen to end: what a run after a crash counts as written. */
  inFlight?: string;
}

/** One item's progress or result: a guest's (as runs have always stored it) or another kind's item. */
export type ItemProgress = GuestProgress | ObjectProgress;

/** Whether the progress is a guest's. */
export function isGuestProgress(progress: ItemProgress): progress is GuestProgress {
  return 'vmid' in progress;
}

/** Whether an item's status is its result (the run is done with it). */
export function isFinal(status: GuestRunStatus): status is ApplyStatus {
  return (APPLY_STATUSES as readonly string[]).includes(status);
}

const StepSchema = z.object({
  op: z.string(),
  detail: z.string().optional(),
  upid: z.string().optional(),
  exitStatus: z.string().optional(),
  ms: z.number().optional(),
});
const ValueChangeSchema = z.object({ from: z.string().optional(), to: z.string().optional() });
const GuestProgressSchema = z.object({
  cluster: z.string(),
  name: z.string(),
  vmid: z.int(),
  node: z.string(),
  status: z.enum(['queued', 'waiting', 'running', ...APPLY_STATUSES]),
  steps: z.array(StepSchema),
  conflict: z.array(z.object({ key: z.string(), reviewed: ValueChangeSchema.optional(), now: ValueChangeSchema.optional() })).optional(),
  error: z.string().optional(),
  pending: z.array(z.string()).optional(),
  retryable: z.boolean().optional(),
  waiting: z.string().optional(),
  attempts: z.int().optional(),
  finishedAt: z.string().optional(),
  inFlight: z.string().optional(),
});

const ObjectProgressSchema = z.object({
  kind: z.string(),
  key: z.string(),
  cluster: z.string(),
  name: z.string(),
  status: z.enum(['queued', 'waiting', 'running', ...APPLY_STATUSES]),
  steps: z.array(StepSchema),
  conflict: z.array(z.string()).optional(),
  error: z.string().optional(),
  retryable: z.boolean().optional(),
  waiting: z.string().optional(),
  attempts: z.int().optional(),
  finishedAt: z.string().optional(),
  inFlight: z.string().optional(),
});

/** Progress as stored: a guest's has its VMID, another item its kind and key. */
const ItemProgressSchema = z.union([GuestProgressSchema, ObjectProgressSchema]);

function parseProgress(text: string): ItemProgress | undefined {
  const parsed = ItemProgressSchema.safeParse(JSON.parse(text));
  return parsed.success ? (parsed.data as ItemProgress) : undefined;
}

/** Whether an item key names a guest (`cluster/vmid`); a key that does not parse is taken for one, as runs before kinds had only guests. */
export function isGuestKey(key: string): boolean {
  const parsed = parseKeyText(key);
  return parsed === undefined || parsed.kind === GUEST_KIND;
}

/** The apply phase and cluster of an item key. */
export function phaseOfKey(key: string): { phase: ApplyPhase; cluster: string } {
  const parsed = parseKeyText(key);
  return { phase: phaseOf(parsed?.kind ?? GUEST_KIND), cluster: parsed?.cluster ?? key.split('/')[0] ?? '' };
}

/** The run hash's field counting the items of one phase on one cluster not finished yet. */
function leftField(phase: ApplyPhase, cluster: string): string {
  return `left:${phase}:${cluster}`;
}

/** The item key of a plan item: its envelope's, or `cluster/vmid` for a guest item stored before the envelope. */
export function itemKeyOf(plan: GuestPlan | ObjectPlan): string {
  return 'vmid' in plan ? guestKeyText(plan.cluster, plan.vmid) : plan.key;
}

/** A run lacks the reviewed plan of one of its guests (expired, or written by another version). */
export class GuestPlanMissingError extends Error {
  override name = 'GuestPlanMissingError';
}

/** A run's stored item of another kind that this build refuses to apply (an unknown kind, a check of its kind failing). */
export class StoredItemRefusedError extends Error {
  override name = 'StoredItemRefusedError';
}

/** What started a run. */
export type RunTrigger = 'merge' | 'command';

/** One apply of one stored plan. Immutable once created. */
export interface ApplyRun {
  id: string;
  repo: RepoRef;
  pr: number;
  installationId: number;
  /** The pull request head whose stored plan is applied. */
  headSha: string;
  /** The merge commit: the apply check run goes on it. */
  mergeSha: string;
  trigger: RunTrigger;
  /** Who asked for it (`/pve apply`). */
  requestedBy?: string;
  /** An admin's `/pve apply --now`: its guests are let in outside their apply windows (`apply-windows.ts`). */
  now?: boolean;
  createdAt: string;
  /**
   * Order key of the run's tickets, seconds since the epoch: for a merge its second of
   * `merged_at` placed within that second by the default branch's history (`apply-run.ts`,
   * `mergeOrder`); for `/pve apply` the time it was accepted.
   */
  order: number;
  /** The guests it applies (`cluster/vmid`), in plan order. */
  guests: string[];
  /** The items of other kinds it applies (their keys), in apply-phase order. Absent in runs stored before other kinds. */
  objects?: string[];
}

/** Every item key of a run: its guests, then its other items. */
export function runItems(run: Pick<ApplyRun, 'guests' | 'objects'>): string[] {
  return [...run.guests, ...(run.objects ?? [])];
}

const ApplyRunSchema = z.strictObject({
  id: z.string(),
  repo: RepoRef,
  pr: z.int().positive(),
  installationId: z.int().positive(),
  headSha: CommitSha,
  mergeSha: CommitSha,
  trigger: z.enum(['merge', 'command']),
  requestedBy: z.string().optional(),
  now: z.boolean().optional(),
  createdAt: z.string(),
  order: z.number(),
  guests: z.array(z.string()),
  objects: z.array(z.string()).optional(),
});

/** A run with what changes while it goes. */
export interface RunRecord {
  run: ApplyRun;
  /** Bumped by every change of a guest's progress; the reports compare it. */
  version: number;
  /** Every guest job was added to the queue (the run was completely started). */
  queued: boolean;
  checkRunId?: number;
  /** Hash of the check run output last sent, so an unchanged report sends nothing. */
  checkHash?: string;
  checkCompleted: boolean;
}

/** An apply queued or running for a guest: which run, of which pull request. */
export interface ApplyInProgress {
  runId: string;
  repo: RepoRef;
  pr: number;
}

/** How long a finished run is kept (its comment and check run hold the result after that). */
export const RUN_TTL_SECONDS = 30 * 24 * 3600;

/**
 * What an apply is started by, and carried out once: a merge (its pull request and commit) or a
 * `/pve apply` comment (its id). The pull request is part of a merge's key: one commit can close
 * two pull requests (a push of a head they share), and each is its own merge.
 */
export type ApplyCause = { merge: string; pr: number } | { comment: number };

function causeKey(cause: ApplyCause): string {
  return 'merge' in cause ? `merge:${cause.pr}:${cause.merge}` : `comment:${cause.comment}`;
}

/**
 * Stores a run, its items' plans and its phase counters only if the run is not stored yet, in one
 * step: a retried merge job finds the run its first attempt stored and keeps it whole, never the
 * first run's item list with a later re-plan's plans. ARGV: the run, the number of counter
 * fields and values that follow it, then the plans' fields and values.
 */
const CREATE_RUN_LUA = `if redis.call('hexists', KEYS[1], 'run') == 1 then return 0 end
local counters = tonumber(ARGV[2])
if #ARGV > 2 + counters then redis.call('hset', KEYS[2], unpack(ARGV, 3 + counters)) end
if counters > 0 then redis.call('hset', KEYS[1], unpack(ARGV, 3, 2 + counters)) end
redis.call('hset', KEYS[1], 'run', ARGV[1])
return 1`;

const FINAL_LUA = `local FINAL = { applied = true, unchanged = true, conflict = true, failed = true, skipped = true }
local function isFinal(json)
  if not json then return false end
  local ok, value = pcall(cjson.decode, json)
  return ok and type(value) == 'table' and FINAL[value.status] == true
end
`;

// KEYS: tickets, started, results; ARGV: score, run id, guest key, queued progress JSON
const APPEND = `
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  local score = tonumber(ARGV[1])
  local started = redis.call('GET', KEYS[2])
  if started then
    local at = redis.call('ZSCORE', KEYS[1], started)
    if at and tonumber(at) >= score then score = tonumber(at) + 0.001 end
  end
  redis.call('ZADD', KEYS[1], score, ARGV[2])
end
redis.call('HSETNX', KEYS[3], ARGV[3], ARGV[4])
return 1
`;

// KEYS: tickets, started; ARGV: run id. Returns {state, head}: 1 head (now started), 0 behind, -1 no ticket.
const CLAIM = `
local head = redis.call('ZRANGE', KEYS[1], 0, 0)[1] or ''
if head == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[1])
  return {1, head}
end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return {0, head} end
return {-1, head}
`;

// KEYS: tickets, started, results, run hash, item lock; ARGV: run id, item key, result JSON,
// lock token ('' = not checked), '1' = only while this run is the head, the run hash's counter of
// the item's phase. Returns {state, next head, items of the phase left on the cluster (-1: the
// run has no counter, stored before phases)}.
const FINISH = `${FINAL_LUA}
if ARGV[4] ~= '' and redis.call('GET', KEYS[5]) ~= ARGV[4] then return {'lost', '', -1} end
if ARGV[5] == '1' and (redis.call('ZRANGE', KEYS[1], 0, 0)[1] or '') ~= ARGV[1] then return {'not-head', '', -1} end
local already = isFinal(redis.call('HGET', KEYS[3], ARGV[2]))
local left = -1
if not already then
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
  redis.call('HINCRBY', KEYS[4], 'version', 1)
  if redis.call('HEXISTS', KEYS[4], ARGV[6]) == 1 then left = redis.call('HINCRBY', KEYS[4], ARGV[6], -1) end
else
  left = tonumber(redis.call('HGET', KEYS[4], ARGV[6]) or '-1')
end
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
local head = redis.call('ZRANGE', KEYS[1], 0, 0)[1] or ''
if already then return {'already', head, left} end
return {'done', head, left}
`;

// KEYS: results, run hash, guest lock; ARGV: guest key, progress JSON, lock token ('' = not checked).
// 1 written, 2 unchanged, 0 refused (lock lost, or the guest already has its result).
const PROGRESS = `${FINAL_LUA}
if ARGV[3] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[3] then return 0 end
local previous = redis.call('HGET', KEYS[1], ARGV[1])
if isFinal(previous) then return 0 end
if previous == ARGV[2] then return 2 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], 'version', 1)
return 1
`;

/** What {@link ApplyStore.finish} did. */
export interface FinishOutcome {
  /** `done`: recorded; `already`: the item had its result (kept); `lost`: the lock was not ours; `not-head`: not the head. */
  state: 'done' | 'already' | 'lost' | 'not-head';
  /** The item's next run in line, if any: its job is to be woken. */
  next?: string;
  /**
   * Set when the item's phase on its cluster has no item of the run left unfinished (and the run
   * counts them): the run's items of later phases on that cluster may start.
   */
  phaseDone?: boolean;
}

/** A lock a write is fenced with: written only while `token` is the value at `key`. */
export interface Fence {
  key: string;
  token: number;
}

/** Reads and writes merge-to-apply state under the App's state prefix. */
export class ApplyStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The key of the set of items of a run waiting for `item` to finish (`depends-on.ts`). */
  waitersKey(runId: string, item: string): string {
    return `${this.prefix}:apply:run:${runId}:waiters:${item}`;
  }

  /** The App's state prefix, for state kept beside the store's (`restart-slots.ts`). */
  get statePrefix(): string {
    return this.prefix;
  }

  private runKey(runId: string): string {
    return `${this.prefix}:apply:run:${runId}`;
  }

  private plansKey(runId: string): string {
    return `${this.prefix}:apply:run:${runId}:plans`;
  }

  private resultsKey(runId: string): string {
    return `${this.prefix}:apply:run:${runId}:results`;
  }

  // Under `apply:guest:` for every item, since before other kinds: a guest's FIFO and lock keep
  // the names a worker of an older version uses for them, so the two serialise the same guest.
  private ticketsKey(item: string): string {
    return `${this.prefix}:apply:guest:${item}:tickets`;
  }

  private startedKey(item: string): string {
    return `${this.prefix}:apply:guest:${item}:started`;
  }

  /** The per-item lock (see `src/queue/redis-lock.ts`): one writer per item, whatever its kind. */
  itemLockKey(item: string): string {
    return `${this.prefix}:apply:guest:${item}:lock`;
  }

  /** The per-guest lock: {@link itemLockKey} of a guest's key. */
  guestLockKey(guest: string): string {
    return this.itemLockKey(guest);
  }

  /** Serialises placing merges of one repository in their guests' FIFOs: a merge looks at the merges of its second, then appends. */
  repoLockKey(repoId: number): string {
    return `${this.prefix}:apply:lock:repo:${repoId}`;
  }

  /** Serialises posting a pull request's apply comment and check runs. */
  postLockKey(repoId: number, pr: number): string {
    return `${this.prefix}:apply:lock:post:${repoId}:${pr}`;
  }

  private prKey(repoId: number, pr: number): string {
    return `${this.prefix}:apply:pr:${repoId}:${pr}`;
  }

  private carriedOutKey(repoId: number, cause: ApplyCause): string {
    return `${this.prefix}:apply:done:${repoId}:${causeKey(cause)}`;
  }

  /**
   * What a merge or a `/pve apply` comment was carried out as (a run id, or the notice posted
   * instead), or undefined when it never was. The mark outlives the run it names: a captured
   * delivery stays validly signed for as long as the webhook secret does.
   */
  async carriedOut(repoId: number, cause: ApplyCause): Promise<string | undefined> {
    return (await this.redis.get(this.carriedOutKey(repoId, cause))) ?? undefined;
  }

  /**
   * Marks a merge or a `/pve apply` comment carried out, for good (the first mark stays). Kept
   * without expiry on purpose — about 100 bytes per merge — because a run record expires after
   * {@link RUN_TTL_SECONDS} and a delivery replayed after that must still start nothing.
   */
  async markCarriedOut(repoId: number, cause: ApplyCause, outcome: string): Promise<void> {
    await this.redis.set(this.carriedOutKey(repoId, cause), outcome, 'NX');
  }

  /**
   * Creates a run with its items' reviewed plans (guests' and other kinds'), once: a second call
   * with the same id (a retried merge job) keeps the first. Resolves with the run as stored.
   */
  async createRun(run: ApplyRun, plans: readonly (GuestPlan | ObjectPlan)[]): Promise<ApplyRun> {
    const fields = plans.flatMap((plan) => [itemKeyOf(plan), JSON.stringify(plan)]);
    // Counted only in a run with items of other kinds: a run of guests alone has one phase.
    const left = new Map<string, number>();
    for (const key of (run.objects?.length ?? 0) > 0 ? runItems(run) : []) {
      const { phase, cluster } = phaseOfKey(key);
      left.set(leftField(phase, cluster), (left.get(leftField(phase, cluster)) ?? 0) + 1);
    }
    const counters = [...left].flatMap(([field, n]) => [field, String(n)]);
    await this.redis.eval(
      CREATE_RUN_LUA,
      2,
      this.runKey(run.id),
      this.plansKey(run.id),
      JSON.stringify(ApplyRunSchema.parse(run)),
      String(counters.length),
      ...counters,
      ...fields,
    );
    const stored = await this.getRun(run.id);
    if (!stored) throw new Error(`apply run ${run.id} could not be stored`);
    return stored.run;
  }

  /** The run with its changing fields, or undefined when there is none (or it expired). */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    const found = await this.redis.hgetall(this.runKey(runId));
    if (!found.run) return undefined;
    const run = ApplyRunSchema.parse(JSON.parse(found.run));
    const record: RunRecord = {
      run,
      version: Number(found.version ?? 0),
      queued: found.queued === '1',
      checkCompleted: found.checkCompleted === '1',
    };
    const checkRunId = Number(found.checkRunId);
    if (Number.isInteger(checkRunId) && checkRunId > 0) record.checkRunId = checkRunId;
    if (found.checkHash) record.checkHash = found.checkHash;
    return record;
  }

  /** Records that every guest job of the run was added. */
  async markQueued(runId: string): Promise<void> {
    await this.redis.hset(this.runKey(runId), 'queued', '1');
  }

  /** Records the run's check run, and the hash of the output last sent to it. */
  async setCheck(runId: string, check: { id: number; hash: string; completed: boolean }): Promise<void> {
    await this.redis.hset(
      this.runKey(runId),
      'checkRunId',
      String(check.id),
      'checkHash',
      check.hash,
      'checkCompleted',
      check.completed ? '1' : '0',
    );
  }

  /** Keeps a finished run for {@link RUN_TTL_SECONDS}, then lets Redis drop it. */
  async expireRun(runId: string): Promise<void> {
    await this.redis
      .multi()
      .expire(this.runKey(runId), RUN_TTL_SECONDS)
      .expire(this.plansKey(runId), RUN_TTL_SECONDS)
      .expire(this.resultsKey(runId), RUN_TTL_SECONDS)
      .exec();
  }

  /** The reviewed plan of one guest of the run. Throws when it is missing or unreadable. */
  async guestPlan(runId: string, guest: string): Promise<GuestPlan> {
    const text = await this.redis.hget(this.plansKey(runId), guest);
    if (text === null) throw new GuestPlanMissingError(`apply run ${runId} has no plan for guest ${guest}`);
    // A run stored before the item envelope holds version-1 guest items: read them as version 2.
    return GuestPlanSchema.parse(upgradeGuestItem(JSON.parse(text)));
  }

  /** The reviewed plan of one item of another kind of the run. Throws when it is missing or unreadable. */
  async objectPlan(runId: string, item: string): Promise<ObjectPlan> {
    const text = await this.redis.hget(this.plansKey(runId), item);
    if (text === null) throw new GuestPlanMissingError(`apply run ${runId} has no plan for item ${item}`);
    const plan = ObjectPlanSchema.parse(JSON.parse(text)) as ObjectPlan;
    const kind = objectKind(plan.kind);
    // Read by its kind, as a stored plan is (`render-json.ts`): never applied as misread.
    if (!kind)
      throw new StoredItemRefusedError(`apply run ${runId} holds ${item} of the kind '${plan.kind}', which this pve-gitops does not know`);
    try {
      kind.checkStored(plan);
    } catch (error) {
      throw new StoredItemRefusedError(`apply run ${runId} holds ${item} as its kind no longer reads it: ${errorMessage(error)}`);
    }
    return plan;
  }

  /** Every item's progress or result, by item key. */
  async results(runId: string): Promise<Map<string, ItemProgress>> {
    const all = await this.redis.hgetall(this.resultsKey(runId));
    const map = new Map<string, ItemProgress>();
    for (const [item, text] of Object.entries(all)) {
      const progress = parseProgress(text);
      if (progress) map.set(item, progress);
    }
    return map;
  }

  /** The progress or results of some items of the run, by item key (those without any left out). */
  async resultsOf(runId: string, items: readonly string[]): Promise<Map<string, ItemProgress>> {
    const map = new Map<string, ItemProgress>();
    if (items.length === 0) return map;
    const texts = await this.redis.hmget(this.resultsKey(runId), ...items);
    items.forEach((item, i) => {
      const text = texts[i];
      const progress = text === null || text === undefined ? undefined : parseProgress(text);
      if (progress) map.set(item, progress);
    });
    return map;
  }

  /** One item's progress or result. */
  async result(runId: string, item: string): Promise<ItemProgress | undefined> {
    const text = await this.redis.hget(this.resultsKey(runId), item);
    return text === null ? undefined : parseProgress(text);
  }

  /**
   * Whether the item may start as far as its run's phases go: every item of the run in an earlier
   * phase on the item's cluster has its result. A run stored before phases has only guests, which
   * wait for nothing.
   */
  async phaseOpen(runId: string, item: string): Promise<boolean> {
    const { phase, cluster } = phaseOfKey(item);
    const earlier = APPLY_PHASES.filter((p) => phaseRank(p) < phaseRank(phase)).map((p) => leftField(p, cluster));
    if (earlier.length === 0) return true;
    const left = await this.redis.hmget(this.runKey(runId), ...earlier);
    return left.every((n) => n === null || Number(n) <= 0);
  }

  /**
   * Appends the run's tickets to its items' FIFOs (idempotent: a ticket already there stays
   * where it is), each item starting as `queued`. The caller holds the repository's lock.
   */
  async appendTickets(run: ApplyRun, queued: (item: string) => ItemProgress): Promise<void> {
    const pipeline = this.redis.multi();
    for (const guest of runItems(run)) {
      pipeline.eval(
        APPEND,
        3,
        this.ticketsKey(guest),
        this.startedKey(guest),
        this.resultsKey(run.id),
        String(run.order),
        run.id,
        guest,
        JSON.stringify(queued(guest)),
      );
    }
    const results = await pipeline.exec();
    const failed = results?.find(([error]) => error);
    if (failed?.[0]) throw failed[0];
  }

  /**
   * Asks to run the guest for `runId`: `head` (and now marked started: no later-arriving ticket
   * goes before it), `behind` another run (`head` says which), or `gone` (no ticket: finished, or
   * removed as stale).
   */
  async claim(guest: string, runId: string): Promise<{ state: 'head' | 'behind' | 'gone'; head?: string }> {
    const [code, head] = (await this.redis.eval(CLAIM, 2, this.ticketsKey(guest), this.startedKey(guest), runId)) as [number, string];
    const state = code === 1 ? 'head' : code === 0 ? 'behind' : 'gone';
    return head ? { state, head } : { state };
  }

  /**
   * Tickets in the guests' FIFOs scored within `[from, to)`, by run id (a run's tickets share
   * one score): the runs a merge of that second has to be placed among.
   */
  async ticketsWithin(guests: readonly string[], from: number, to: number): Promise<Map<string, number>> {
    const pipeline = this.redis.pipeline();
    for (const guest of guests) pipeline.zrangebyscore(this.ticketsKey(guest), from, `(${to}`, 'WITHSCORES');
    const found = new Map<string, number>();
    for (const [error, reply] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      const flat = reply as string[];
      for (let i = 0; i + 1 < flat.length; i += 2) found.set(flat[i] as string, Number(flat[i + 1]));
    }
    return found;
  }

  /** The run at the head of the guest's FIFO. */
  async head(guest: string): Promise<string | undefined> {
    return (await this.redis.zrange(this.ticketsKey(guest), 0, 0))[0];
  }

  /**
   * Records a guest's progress (not its result): `written`, `unchanged` (the same as recorded),
   * or `refused` — `fence` is given and no longer holds, or the guest already has its result.
   */
  async setProgress(runId: string, guest: string, progress: ItemProgress, fence?: Fence): Promise<'written' | 'unchanged' | 'refused'> {
    const written = await this.redis.eval(
      PROGRESS,
      3,
      this.resultsKey(runId),
      this.runKey(runId),
      fence?.key ?? this.guestLockKey(guest),
      guest,
      JSON.stringify(progress),
      fence ? String(fence.token) : '',
    );
    return written === 1 ? 'written' : written === 2 ? 'unchanged' : 'refused';
  }

  /**
   * Records a guest's result and takes its ticket out of the FIFO, in one step: fenced by the
   * guest lock when `fence` is given; with `onlyIfHead`, only while `runId` is the guest's head
   * (removing a stale head). A result already recorded is kept (the first one wins).
   */
  async finish(runId: string, guest: string, result: ItemProgress, options: { fence?: Fence; onlyIfHead?: boolean } = {}) {
    const { phase, cluster } = phaseOfKey(guest);
    const [state, next, left] = (await this.redis.eval(
      FINISH,
      5,
      this.ticketsKey(guest),
      this.startedKey(guest),
      this.resultsKey(runId),
      this.runKey(runId),
      options.fence?.key ?? this.guestLockKey(guest),
      runId,
      guest,
      JSON.stringify(result),
      options.fence ? String(options.fence.token) : '',
      options.onlyIfHead ? '1' : '0',
      leftField(phase, cluster),
    )) as [FinishOutcome['state'], string, number];
    const outcome: FinishOutcome = { state };
    if (next) outcome.next = next;
    if ((state === 'done' || state === 'already') && Number(left) === 0) outcome.phaseDone = true;
    return outcome;
  }

  /** The pull request's latest run (whose results its apply comment shows), if any. */
  async latestRun(repoId: number, pr: number): Promise<string | undefined> {
    return (await this.redis.hget(this.prKey(repoId, pr), 'run')) || undefined;
  }

  /** Makes `runId` the pull request's latest run; `''` when a notice replaced the runs in the comment. */
  async setLatestRun(repoId: number, pr: number, runId: string): Promise<void> {
    await this.redis
      .multi()
      .hset(this.prKey(repoId, pr), 'run', runId)
      .expire(this.prKey(repoId, pr), RUN_TTL_SECONDS * 3)
      .exec();
  }

  /** The pull request's apply comment as last written. */
  async getComment(repoId: number, pr: number): Promise<KnownComment | undefined> {
    const [id, hash] = await this.redis.hmget(this.prKey(repoId, pr), 'commentId', 'commentHash');
    const n = Number(id);
    return Number.isInteger(n) && n > 0 && hash ? { id: n, bodyHash: hash } : undefined;
  }

  async setComment(repoId: number, pr: number, comment: KnownComment): Promise<void> {
    await this.redis
      .multi()
      .hset(this.prKey(repoId, pr), 'commentId', String(comment.id), 'commentHash', comment.bodyHash)
      .expire(this.prKey(repoId, pr), RUN_TTL_SECONDS * 3)
      .exec();
  }

  /** For each guest key, the runs queued or running for it (FIFO order). */
  async inProgress(guests: readonly string[]): Promise<Map<string, ApplyInProgress[]>> {
    const result = new Map<string, ApplyInProgress[]>();
    if (guests.length === 0) return result;
    const pipeline = this.redis.pipeline();
    for (const guest of guests) pipeline.zrange(this.ticketsKey(guest), 0, -1);
    const tickets = (await pipeline.exec()) ?? [];
    const runIds = new Set<string>();
    const byGuest = guests.map((guest, i) => {
      const ids = (tickets[i]?.[1] as string[] | undefined) ?? [];
      for (const id of ids) runIds.add(id);
      return [guest, ids] as const;
    });
    const runs = new Map<string, ApplyInProgress>();
    for (const id of runIds) {
      const record = await this.getRun(id);
      if (record) runs.set(id, { runId: id, repo: record.run.repo, pr: record.run.pr });
    }
    for (const [guest, ids] of byGuest) {
      const list = ids.map((id) => runs.get(id)).filter((r): r is ApplyInProgress => r !== undefined);
      if (list.length > 0) result.set(guest, list);
    }
    return result;
  }
}
