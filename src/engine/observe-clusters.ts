/**
 * Reads what a plan needs from each cluster through the reader port, and nothing more: one
 * listing, one read per guest in scope, the checks that tell a hidden guest from a missing one,
 * and each other kind's observe where it has something on the cluster. Never writes.
 */
import type { ClusterSpec, GuestSpec, ListedGuest, ObservedCluster, ObservedGuest, ObservedState, SpecSet } from '../core/model.js';
import { hasOwnerTag } from '../core/plan/desired-config.js';
import { type PlanScope, scopedVmids } from '../core/plan/plan-specs.js';
import type { ClusterReader } from '../core/ports.js';
import { GuestNotFoundError } from '../core/port-errors.js';
import { Semaphore } from '../util/semaphore.js';
import { errorMessage } from '../util/error-message.js';
import { OBJECT_KINDS } from '../core/kinds/registry.js';
import { kindsConcerned } from '../core/plan/plan-objects.js';
import { snapshotPolicy } from '../core/plan/plan-snapshot.js';

/** Options of {@link observeClusters}. */
export interface ObserveOptions {
  /**
   * Guest reads in flight per cluster. Default: no limit of its own — the cluster's connection
   * bounds every request (its concurrency setting), reads included.
   */
  concurrency?: number;
  /** Called as guests are read, for progress output. */
  onProgress?: (event: { cluster: string; read: number; total: number }) => void;
  /** A drift report's reads: the storages, which only a plan's snapshot check needs, are not read. */
  driftReport?: boolean;
  /** Called with each guest read, as it arrives (the planner plans it while the others are read). */
  onGuestRead?: (cluster: string, listed: ListedGuest, observed: ObservedGuest) => void;
}

/**
 * Reads a guest; when it is not where the listing said (migrated meanwhile), looks it up in a
 * fresh listing once and reads it there, updating the cluster's listing entry. Returns the read
 * and the listing entry it was read at.
 */
async function readFollowingMigration(
  reader: ClusterReader,
  listed: ListedGuest,
  liveStatus: boolean,
  relist: () => Promise<Map<number, ListedGuest>>,
  cluster: ObservedCluster,
): Promise<{ observed: ObservedGuest; at: ListedGuest }> {
  try {
    return { observed: await reader.readGuest(listed, { liveStatus }), at: listed };
  } catch (err) {
    if (!(err instanceof GuestNotFoundError)) throw err;
    const moved = (await relist()).get(listed.vmid);
    if (!moved || moved.node === listed.node) throw err;
    const index = cluster.listing.indexOf(listed);
    if (index >= 0) cluster.listing[index] = moved;
    return { observed: await reader.readGuest(moved, { liveStatus }), at: moved };
  }
}

/**
 * Reads what a plan needs and nothing more, so its cost grows with the change, not the estate:
 * one listing per cluster in scope, then one `…/pending` read per guest in scope that exists —
 * plus, for clusters planned in full, every guest carrying the owner tag (orphans). Failures are recorded, not thrown, so the plan can say
 * which cluster or guest could not be read.
 */
export async function observeClusters(
  readers: Readonly<Record<string, ClusterReader>>,
  specs: { head: SpecSet; base?: SpecSet },
  scope: PlanScope,
  options: ObserveOptions = {},
): Promise<ObservedState> {
  const state: ObservedState = { clusters: {}, errors: {} };
  const clusterSpecs = new Map<string, ClusterSpec>();
  for (const c of [...(specs.base?.clusters ?? []), ...specs.head.clusters]) clusterSpecs.set(c.name, c);

  await Promise.all(
    [...scope.clusters].map(async (name) => {
      const reader = readers[name];
      if (!reader) return;
      let cluster: ObservedCluster;
      try {
        cluster = { name, nodes: [], listing: await reader.listGuests(), guests: {}, readErrors: {} };
      } catch (err) {
        state.errors![name] = errorMessage(err);
        return;
      }
      // Guests in scope that do not exist yet will be created on their spec's node: the node list
      // (one request) lets the plan check it, and is read only when there are creates.
      const listedVmids = new Set(cluster.listing.map((l) => l.vmid));
      const inScope = scopedVmids(scope, name);
      const creates = specs.head.guests.some(
        (g) => g.cluster === name && g.state === 'present' && !listedVmids.has(g.vmid) && inScope.has(g.vmid),
      );
      if (creates) {
        try {
          cluster.nodes = await reader.listNodes();
        } catch {
          // Not fatal: the create itself will say if the node is wrong.
        }
      }
      const clusterSpec = clusterSpecs.get(name);
      const storages = options.driftReport ? undefined : readStorageTypes(reader, cluster, specs.head, inScope, clusterSpec, listedVmids);
      const ownerTag = clusterSpec?.ownerTag;
      // Orphans are looked for only inside the document's own VMID range (the planner's rule).
      const inRange = (vmid: number): boolean =>
        clusterSpec !== undefined && vmid >= clusterSpec.vmids.lower && vmid < clusterSpec.vmids.upper;
      const wanted = cluster.listing.filter(
        (l) =>
          inScope.has(l.vmid) ||
          (scope.fullClusters.has(name) && ownerTag !== undefined && inRange(l.vmid) && hasOwnerTag(l.tags, ownerTag)),
      );
      // The templates that clones name (by VMID or name) are read too: their config is what a
      // clone starts from (core/plan/plan-clone.ts).
      const sources = new Set(
        specs.head.guests
          .filter((g) => g.cluster === name && g.clone && g.state === 'present' && inScope.has(g.vmid))
          .map((g) => g.clone?.template),
      );
      if (sources.size > 0) {
        for (const l of cluster.listing) {
          if (!wanted.includes(l) && (sources.has(String(l.vmid)) || (l.name !== undefined && sources.has(l.name)))) wanted.push(l);
        }
        // A template named in a clone that no listed name matches may be one the listing shows
        // without its name (it lags behind new guests): the nameless ones are read to find it.
        const listedNames = new Set(cluster.listing.map((l) => l.name));
        if ([...sources].some((s) => s !== undefined && !/^\d+$/.test(s) && !listedNames.has(s))) {
          for (const l of cluster.listing) if (l.name === undefined && !wanted.includes(l)) wanted.push(l);
        }
      }
      const limit = options.concurrency === undefined ? undefined : new Semaphore(options.concurrency);
      const bounded = (fn: () => Promise<void>): Promise<void> => (limit ? limit.run(fn) : fn());
      // One fresh listing, shared, for guests that migrated between the listing and their read.
      let relisted: Promise<Map<number, ListedGuest>> | undefined;
      const relist = (): Promise<Map<number, ListedGuest>> =>
        (relisted ??= reader.listGuests().then((all) => new Map(all.map((l) => [l.vmid, l]))));
      // The listing's power state comes from pvestatd and lags up to 10 s behind a start or stop.
      // Where it would make the plan change the power of a guest, ask the node instead (one more
      // request, only for those guests), so a plan right after an apply shows no phantom start.
      // Only the guests read are asked about: not a map of the whole estate for a 10-guest change.
      const wantedVmids = new Set(wanted.map((l) => l.vmid));
      const powerOf = new Map<number, GuestSpec['power']>();
      for (const g of specs.head.guests) {
        if (g.cluster === name && g.state === 'present' && g.power !== 'ignore' && wantedVmids.has(g.vmid)) powerOf.set(g.vmid, g.power);
      }
      const needsLiveStatus = (l: ListedGuest): boolean => {
        const power = powerOf.get(l.vmid);
        return power !== undefined && l.status !== power;
      };
      // A VMID in scope that the listing does not show is either free or held by a guest this
      // token may not see (Proxmox leaves those out of every listing). Ask the cluster's VMID list,
      // which answers whatever the token may see, so missing privileges never look like a guest
      // that is gone (docs/identity-and-privileges.md).
      const unlisted = new Set<number>();
      for (const g of [...specs.head.guests, ...(specs.base?.guests ?? [])]) {
        if (g.cluster === name && !listedVmids.has(g.vmid) && inScope.has(g.vmid)) unlisted.add(g.vmid);
      }
      cluster.unlisted = {};
      await Promise.all(
        [...unlisted].map((vmid) =>
          bounded(async () => {
            try {
              cluster.unlisted![vmid] = await reader.vmidExists(vmid);
            } catch (err) {
              cluster.readErrors![vmid] = `could not ask Proxmox whether VMID ${vmid} exists: ${errorMessage(err)}`;
            }
          }),
        ),
      );
      let read = 0;
      const readOne = async (listed: ListedGuest): Promise<void> => {
        let done: { observed: ObservedGuest; at: ListedGuest } | undefined;
        try {
          done = await readFollowingMigration(reader, listed, needsLiveStatus(listed), relist, cluster);
          cluster.guests[listed.vmid] = done.observed;
        } catch (err) {
          cluster.readErrors![listed.vmid] = errorMessage(err);
        }
        if (done) options.onGuestRead?.(name, done.at, done.observed);
        read += 1;
        options.onProgress?.({ cluster: name, read, total: wanted.length });
      };
      await Promise.all(wanted.map((listed) => bounded(() => readOne(listed))));
      await storages;
      await observeObjects(reader, name, specs, cluster);
      state.clusters[name] = cluster;
    }),
  );
  return state;
}

/**
 * The storages' plugin types, read (one request, beside the guest reads) when an existing guest
 * of the cluster in scope may be snapshotted first: the plan tells from them whether Proxmox will
 * refuse the snapshot (`core/plan/plan-snapshot.ts`). A failed read is recorded for the plan.
 */
function readStorageTypes(
  reader: ClusterReader,
  cluster: ObservedCluster,
  head: SpecSet,
  inScope: ReadonlySet<number>,
  clusterSpec: ClusterSpec | undefined,
  listed: ReadonlySet<number>,
): Promise<void> | undefined {
  if (!reader.storageTypes) return undefined;
  const snapshotted = head.guests.some(
    (g) => g.cluster === cluster.name && listed.has(g.vmid) && inScope.has(g.vmid) && snapshotPolicy(g, clusterSpec) !== 'never',
  );
  if (!snapshotted) return undefined;
  return reader.storageTypes().then(
    (types) => {
      cluster.storageTypes = types;
    },
    (err: unknown) => {
      cluster.storageTypesError = errorMessage(err);
    },
  );
}

/**
 * Reads, for each kind other than the guest that has documents or guest keys on the cluster, what
 * its plan needs, through the kind's port (core/kinds/kind.ts). A kind with nothing on the cluster
 * costs no request; a failed read is recorded for the plan to report.
 */
async function observeObjects(
  reader: ClusterReader,
  cluster: string,
  specs: { head: SpecSet; base?: SpecSet },
  into: ObservedCluster,
): Promise<void> {
  const ofCluster = <T extends { cluster: string }>(list: readonly T[] | undefined): T[] =>
    (list ?? []).filter((x) => x.cluster === cluster);
  await Promise.all(
    kindsConcerned(OBJECT_KINDS, cluster, [specs.head, specs.base]).map(async (kind) => {
      const port = reader.kindPort?.(kind.name);
      if (port === undefined) {
        (into.objectErrors ??= {})[kind.name] = `the connection has no ${kind.name} adapter`;
        return;
      }
      try {
        const observed = await kind.observe(port, {
          cluster,
          head: ofCluster(specs.head.objects).filter((o) => o.kind === kind.name),
          base: ofCluster(specs.base?.objects).filter((o) => o.kind === kind.name),
          headGuests: ofCluster(specs.head.guests),
          baseGuests: ofCluster(specs.base?.guests),
        });
        (into.objects ??= {})[kind.name] = observed;
      } catch (err) {
        (into.objectErrors ??= {})[kind.name] = errorMessage(err);
      }
    }),
  );
}
