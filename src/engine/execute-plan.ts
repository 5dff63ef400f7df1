import type { ApplyResult, GuestApplyResult } from '../core/apply-result.js';
import type { GuestPlan, ListedGuest, Plan } from '../core/model.js';
import type { HostAccessRule } from '../core/key-rules.js';
import type { ClusterWriter } from '../core/ports.js';
import { Semaphore } from '../util/semaphore.js';
import { type ApplyGuestOptions, applyGuest, type ReleaseSlot, resultWithoutApply } from './apply-guest.js';
import { errorMessage } from '../util/error-message.js';

export type { ApplyEvent, ApplyGuestOptions } from './apply-guest.js';

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
}

/** Default guests written at once per cluster and per node (README "How apply decides"). */
export const DEFAULT_CLUSTER_CONCURRENCY = 4;
export const DEFAULT_NODE_CONCURRENCY = 2;

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

/**
 * Carries out a stored plan (README "How apply decides"): {@link applyGuest} for every guest with
 * changes, guests of a cluster in parallel up to per-cluster and per-node limits. One listing per
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
  const byCluster = new Map<string, GuestPlan[]>();
  for (const guest of plan.guests) {
    const untouched = resultWithoutApply(guest);
    if (untouched && options.unread?.has(`${guest.cluster}/${guest.vmid}`)) {
      results.push({ ...untouched, status: 'failed', error: `not read at plan time: ${guest.errors.join('; ')}`, retryable: true });
    } else if (untouched) {
      results.push(untouched);
    } else {
      byCluster.set(guest.cluster, [...(byCluster.get(guest.cluster) ?? []), guest]);
    }
  }
  const { clusterConcurrency, nodeConcurrency, ref: _ref, now: _now, allowHostAccess, unread: _unread, ...guestOptions } = options;

  await Promise.all(
    [...byCluster].map(async ([cluster, guests]) => {
      const writer = writers[cluster];
      if (!writer) {
        for (const g of guests) {
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
          };
          if (listing) guestOptionsFor.listed = listing.get(guest.vmid) ?? null;
          results.push(await applyGuest(guest, writer, guestOptionsFor));
        }),
      );
    }),
  );

  const order = new Map(plan.guests.map((g, i) => [`${g.cluster}/${g.vmid}`, i]));
  results.sort((a, b) => (order.get(`${a.cluster}/${a.vmid}`) ?? 0) - (order.get(`${b.cluster}/${b.vmid}`) ?? 0));
  const result: ApplyResult = { version: 1, startedAt, finishedAt: clock().toISOString(), guests: results };
  if (options.ref !== undefined) result.ref = options.ref;
  return result;
}
