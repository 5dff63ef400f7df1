/**
 * Carries out a stored plan from the command line: the items of each kind in their apply phases,
 * guests through `apply-guest.ts` within per-cluster and per-node limits, items of other kinds
 * through `apply-object.ts`. The App does the same through its queue (`src/queue/apply`).
 */
import type { ApplyResult, ApplyStatus, GuestApplyResult, ObjectApplyResult } from '../core/apply-result.js';
import type { ApplyPhase } from '../core/kinds/kind.js';
import { phaseOf } from '../core/kinds/registry.js';
import { guestKeyText } from '../core/kinds/resource-key.js';
import type { GuestPlan, ListedGuest, ObjectPlan, Plan } from '../core/model.js';
import type { HostAccessRule } from '../core/key-rules.js';
import type { ClusterWriter } from '../core/ports.js';
import { Semaphore } from '../util/semaphore.js';
import { type ApplyGuestOptions, applyGuest, type ReleaseSlot, resultWithoutApply } from './apply-guest.js';
import { errorMessage } from '../util/error-message.js';
import { applyObject, heldResult, resultOf } from './apply-object.js';
import { heldOutsideWindow, objectHeldOutsideWindow, type WindowPolicy } from './window-hold.js';
import { windowsOpen } from '../core/spec/apply-windows.js';
import { GuestOrder, heldGuestResult } from './guest-order.js';

/** Options of {@link executePlan}. */
export interface ExecuteOptions
  extends Omit<ApplyGuestOptions, 'listed' | 'locate' | 'acquireSlot' | 'acquireReadAhead' | 'allowHostAccess'> {
  /** Per cluster, the host-reaching options the server's policy allows now (default: none). */
  allowHostAccess?: Readonly<Record<string, readonly HostAccessRule[]>>;
  /** Guests being read and written at once per cluster (default 4). */
  clusterConcurrency?: number;
  /** Guests being read and written at once per node (default 2). */
  nodeConcurrency?: number;
  ref?: string;
  now?: () => Date;
  /**
   * Guests (`cluster/vmid`) whose read failed when the plan was made: never written, reported
   * `failed` and `retryable` (running the apply again plans them afresh), while the others apply.
   */
  unread?: ReadonlySet<string>;
  /** Apply windows: the time they are judged by and whether `--now` overrides them (default: the wall clock, no override). */
  windows?: WindowPolicy;
}

/** Default guests written at once per cluster and per node (README "How apply decides"). */
const DEFAULT_CLUSTER_CONCURRENCY = 4;
const DEFAULT_NODE_CONCURRENCY = 2;

/**
 * One cluster listing for callers that ask while none is running; callers that ask while one is
 * in flight share the next one, which starts after their question (a listing that began before a
 * guest was found missing may predate the move that made it go missing).
 */
function freshListings(writer: ClusterWriter): () => Promise<Map<number, ListedGuest>> {
  let running: Promise<unknown> | undefined;
  let next: Promise<Map<number, ListedGuest>> | undefined;
  const start = (): Promise<Map<number, ListedGuest>> => {
    const listing = writer.listGuests().then((all) => new Map(all.map((l) => [l.vmid, l])));
    const settled = listing.then(
      () => undefined,
      () => undefined,
    );
    running = settled;
    void settled.then(() => {
      if (running === settled) running = undefined;
    });
    return listing;
  };
  return () => {
    if (!running) return start();
    next ??= running.then(() => {
      next = undefined;
      return start();
    });
    return next;
  };
}

/**
 * Per-cluster and per-node limits as slots: the node's first, so a guest queued behind a busy
 * node never holds a cluster slot that guests of other nodes could use.
 */
function localSlots(clusterConcurrency: number, nodeConcurrency: number): (node: string) => Promise<ReleaseSlot> {
  const cluster = new Semaphore(clusterConcurrency);
  const nodes = new Map<string, Semaphore>();
  return async (node) => {
    let perNode = nodes.get(node);
    if (!perNode) nodes.set(node, (perNode = new Semaphore(nodeConcurrency)));
    const releaseNode = await perNode.acquire();
    const releaseCluster = await cluster.acquire();
    return () => {
      releaseCluster();
      releaseNode();
    };
  };
}

/** Per cluster, at most `limit` restarts in flight (the plan's `restart.inFlight`). */
function restartSlots(): (cluster: string, limit: number) => Promise<ReleaseSlot> {
  const perCluster = new Map<string, Semaphore>();
  return (cluster, limit) => {
    let slots = perCluster.get(cluster);
    if (!slots) perCluster.set(cluster, (slots = new Semaphore(limit)));
    return slots.acquire();
  };
}

/** Statuses after which an item that follows may go ahead. */
const DONE: ReadonlySet<ApplyStatus> = new Set(['applied', 'unchanged']);

/**
 * Applies the items of other kinds in one phase, per cluster up to the cluster's limit. An item
 * whose `after` names an item of the same phase (a nested pool's parent) waits for it; one whose
 * `after` names an item that did not apply is held, never written.
 */
async function applyObjectPhase(
  items: readonly ObjectPlan[],
  writers: Readonly<Record<string, ClusterWriter>>,
  outcomes: Map<string, ApplyStatus>,
  clusterConcurrency: number,
  signal: AbortSignal | undefined,
  windows: WindowPolicy | undefined,
): Promise<ObjectApplyResult[]> {
  const limits = new Map<string, Semaphore>();
  const running = new Map<string, Promise<ObjectApplyResult>>();
  const inPhase = new Set(items.map((item) => item.key));
  const apply = async (item: ObjectPlan): Promise<ObjectApplyResult> => {
    // Every item of the phase is running once this resumes. Within a phase `after` names a nested
    // pool's parent, a strict prefix of its id, so no two items wait for each other.
    await Promise.resolve();
    await Promise.all((item.after ?? []).filter((key) => inPhase.has(key) && key !== item.key).map((key) => running.get(key)));
    const blocker = item.after?.find((key) => outcomes.has(key) && !DONE.has(outcomes.get(key) as ApplyStatus));
    const writer = writers[item.cluster];
    let result: ObjectApplyResult;
    const outside = blocker === undefined ? objectHeldOutsideWindow(item, windows) : undefined;
    if (blocker !== undefined) result = heldResult(item, blocker, outcomes.get(blocker) as ApplyStatus);
    else if (outside) result = outside;
    else if (!writer) result = resultOf(item, 'failed', { error: `no connection configured for cluster '${item.cluster}'` });
    else {
      let limit = limits.get(item.cluster);
      if (!limit) limits.set(item.cluster, (limit = new Semaphore(clusterConcurrency)));
      result = await limit.run(() => applyObject(item, writer, signal ? { signal } : {}));
    }
    outcomes.set(item.key, result.status);
    return result;
  };
  for (const item of items) running.set(item.key, apply(item));
  return Promise.all(items.map((item) => running.get(item.key) as Promise<ObjectApplyResult>));
}

/**
 * Carries out a stored plan (README "How apply decides") in the phases of its kinds
 * (core/kinds/kind.ts): items guests refer to first (a pool), then {@link applyGuest} for every
 * guest with changes, then guests' parts (a guest's pool membership), each held when the guest it
 * follows did not apply. Guests of a cluster run in parallel up to per-cluster and per-node limits. One listing per
 * cluster tells where each guest is; when it cannot be read, each guest is read where the plan
 * saw it, so one failed read never stops the whole apply. Guests without changes are not touched.
 */
export async function executePlan(
  plan: Plan,
  writers: Readonly<Record<string, ClusterWriter>>,
  options: ExecuteOptions = {},
): Promise<ApplyResult> {
  const clock = options.now ?? (() => new Date());
  const startedAt = clock().toISOString();
  const results: GuestApplyResult[] = [];
  const outcomes = new Map<string, ApplyStatus>();
  const inPhase = (phase: ApplyPhase): ObjectPlan[] => plan.objects.filter((item) => phaseOf(item.kind) === phase);
  const objectResults = await applyObjectPhase(
    inPhase('referenced'),
    writers,
    outcomes,
    options.clusterConcurrency ?? DEFAULT_CLUSTER_CONCURRENCY,
    options.signal,
    options.windows,
  );
  const byCluster = new Map<string, GuestPlan[]>();
  const order = new GuestOrder(plan.guests.map((g) => g.key));
  const names = new Map(plan.guests.map((g) => [g.key, g.name]));
  const restarts = restartSlots();
  for (const guest of plan.guests) {
    const untouched = resultWithoutApply(guest);
    if (untouched && options.unread?.has(guest.key)) {
      results.push({ ...untouched, status: 'failed', error: `not read at plan time: ${guest.errors.join('; ')}`, retryable: true });
      order.settle(guest.key, 'failed');
    } else if (untouched) {
      results.push(untouched);
      order.settle(guest.key, untouched.status);
    } else {
      byCluster.set(guest.cluster, [...(byCluster.get(guest.cluster) ?? []), guest]);
    }
  }
  const { clusterConcurrency, nodeConcurrency, ref: _ref, now: _now, allowHostAccess, unread: _unread, windows, ...guestOptions } = options;
  const windowClock = windows?.clock ?? Date.now;

  await Promise.all(
    [...byCluster].map(async ([cluster, guests]) => {
      const writer = writers[cluster];
      if (!writer) {
        for (const g of guests) {
          order.settle(g.key, 'failed');
          results.push({
            cluster: g.cluster,
            name: g.name,
            vmid: g.vmid,
            node: g.node,
            status: 'failed',
            steps: [],
            error: `no connection configured for cluster '${cluster}'`,
          });
        }
        return;
      }
      const listings = freshListings(writer);
      let listing: Map<number, ListedGuest> | undefined;
      try {
        listing = await listings();
      } catch (err) {
        options.onEvent?.({
          type: 'notice',
          cluster,
          message: `cannot list cluster '${cluster}' (${errorMessage(err)}); reading each guest where the plan saw it`,
        });
      }
      const acquireSlot = localSlots(clusterConcurrency ?? DEFAULT_CLUSTER_CONCURRENCY, nodeConcurrency ?? DEFAULT_NODE_CONCURRENCY);
      // As many guests may read ahead of their slot as may hold one: each is next in line when a
      // slot frees, and its read overlaps the tasks still running.
      const readAhead = new Semaphore(clusterConcurrency ?? DEFAULT_CLUSTER_CONCURRENCY);
      const acquireReadAhead = (): Promise<ReleaseSlot> => readAhead.acquire();
      const locate = async (vmid: number): Promise<ListedGuest | undefined> => (await listings()).get(vmid);
      await Promise.all(
        guests.map(async (guest) => {
          const guestOptionsFor: ApplyGuestOptions = {
            ...guestOptions,
            locate,
            acquireSlot,
            acquireReadAhead,
            allowHostAccess: allowHostAccess?.[guest.cluster] ?? [],
            acquireRestart: restarts,
            insideWindow: () => windowsOpen(guest.windows, windowClock()),
          };
          if (listing) guestOptionsFor.listed = listing.get(guest.vmid) ?? null;
          const blocker = await order.blocker(guest);
          const outside = blocker ? undefined : heldOutsideWindow(guest, windows);
          const result = blocker
            ? heldGuestResult(guest, blocker, names.get(blocker.key))
            : (outside ?? (await applyGuest(guest, writer, guestOptionsFor)));
          order.settle(guest.key, result.status);
          results.push(result);
        }),
      );
    }),
  );

  const position = new Map(plan.guests.map((g, i) => [g.key, i]));
  const keyOf = (r: GuestApplyResult): string => guestKeyText(r.cluster, r.vmid);
  results.sort((a, b) => (position.get(keyOf(a)) ?? 0) - (position.get(keyOf(b)) ?? 0));
  for (const r of results) outcomes.set(keyOf(r), r.status);
  objectResults.push(
    ...(await applyObjectPhase(
      inPhase('guest-parts'),
      writers,
      outcomes,
      options.clusterConcurrency ?? DEFAULT_CLUSTER_CONCURRENCY,
      options.signal,
      options.windows,
    )),
  );
  const result: ApplyResult = { version: 1, startedAt, finishedAt: clock().toISOString(), guests: results };
  if (objectResults.length > 0) result.objects = objectResults;
  if (options.ref !== undefined) result.ref = options.ref;
  return result;
}
