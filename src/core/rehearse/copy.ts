/**
 * The simulated copy a rehearsal applies a plan to: the guests the plan touches as they were read
 * for it, the touched objects of other kinds (`kinds-copy.ts`), and the cluster facts their apply
 * depends on (nodes and their CPUs, storages with their type, content types and nodes, bridges per
 * node, pools). Pure data and the pure steps that build it; reading the facts is a reader's job
 * (`ClusterReader.readFacts`), serving the copy the sandbox's (`RehearsalSandbox` in
 * `core/ports.ts`). What the copy leaves out is in docs/rehearsal.md.
 */
import { endsOnlyByResume } from '../guest-locks.js';
import type { GuestType } from '../guest-flavours.js';
import type { ObservedCluster, Operation, Plan } from '../model.js';
import { buildKindsCopy, type KindsCopy, partGuests, touchedObjects } from './kinds-copy.js';

/** One storage as `GET /cluster/resources?type=storage` lists it, with the nodes it is enabled on. */
export interface StorageFact {
  storage: string;
  type: string;
  content: string[];
  shared: boolean;
  /** Nodes the storage is enabled on; undefined: all of them. */
  nodes?: string[];
  /**
   * Bytes in all and in use (`maxdisk`, `disk`), when one figure holds for the nodes the apply
   * allocates on; undefined: its free space is not modelled.
   */
  total?: number;
  used?: number;
}

/** The datacenter's IPsets and aliases, which a guest's firewall rule may name as well as its own. */
export interface ClusterFirewallFacts {
  ipsets: string[];
  aliases: { name: string; cidr: string }[];
}

/** The cluster facts a guest's apply depends on. */
export interface ClusterFacts {
  /** Every node of the cluster, with its CPUs when the token may see them. */
  nodes: { node: string; cpus?: number }[];
  storages: StorageFact[];
  /** Bridges and VNets per node read (the nodes of the guests in the copy). */
  bridges: Record<string, string[]>;
  /** Resource pools; undefined when the token may not list them (any pool is then accepted). */
  pools?: string[];
  /** Read when asked for (`FactsOptions.firewall` in `kinds-copy.ts`); undefined when not asked or the token lacks Sys.Audit on `/`. */
  firewall?: ClusterFirewallFacts;
  /** API requests the read took. */
  requests: number;
}

/** One guest of the copy, as the plan read it. */
export interface GuestCopy {
  vmid: number;
  type: GuestType;
  node: string;
  running: boolean;
  current: Record<string, string>;
  pending: Record<string, string>;
  pendingDelete: string[];
}

/**
 * The lock a guest of the copy held when the plan was made and the apply waits out (a backup's,
 * a snapshot's, …; `apply-guest.ts`): undefined without one, and for a hibernated VM's
 * `suspended`/`suspending`, which only a resume ends, so the apply refuses at once.
 */
function waitedOutLock(guest: GuestCopy): string | undefined {
  const lock = guest.current.lock;
  return lock === undefined || endsOnlyByResume(lock) ? undefined : lock;
}

/** The locks the guests of `copy` held when the plan was made and the apply waits out: VMID and lock. */
export function waitedOutLocks(copy: { guests: readonly GuestCopy[] }): [vmid: number, lock: string][] {
  return copy.guests.flatMap((guest) => {
    const lock = waitedOutLock(guest);
    return lock === undefined ? [] : [[guest.vmid, lock] as [number, string]];
  });
}

/** The copy of one cluster. */
export interface ClusterCopy {
  cluster: string;
  facts: ClusterFacts;
  guests: GuestCopy[];
  objects: KindsCopy;
}

/** Whether a plan guest is carried out by an apply (the others are never touched). */
export function guestTouched(action: string): boolean {
  return action === 'create' || action === 'update' || action === 'destroy';
}

/** The templates a guest's apply clones from (`clone` operations). */
function cloneSources(operations: readonly Operation[]): { vmid: number; node: string }[] {
  return operations.flatMap((op) => (op.op === 'clone' ? [op.source] : []));
}

/**
 * Per cluster the plan's apply touches (a guest or an object of another kind), the nodes of the
 * guests it touches and of the templates they are cloned from: the nodes whose facts the copy
 * needs. Objects of other kinds need no node's facts.
 */
export function touchedNodes(plan: Plan): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const nodesOf = (cluster: string): Set<string> => {
    let nodes = out.get(cluster);
    if (!nodes) out.set(cluster, (nodes = new Set()));
    return nodes;
  };
  for (const guest of plan.guests) {
    if (!guestTouched(guest.action)) continue;
    const nodes = nodesOf(guest.cluster);
    nodes.add(guest.node);
    for (const source of cloneSources(guest.operations)) nodes.add(source.node);
  }
  for (const cluster of new Set(plan.objects.map((o) => o.cluster))) if (touchedObjects(plan, cluster).length > 0) nodesOf(cluster);
  return out;
}

/**
 * The copy of one cluster: the plan's touched guests, the templates they clone and the guests
 * whose parts (HA resource, firewall, pool membership) the plan touches, as they were read for it,
 * the touched objects of other kinds, and the facts. A pool the plan creates is not in the copy:
 * the rehearsed apply creates it.
 */
export function buildClusterCopy(plan: Plan, observed: ObservedCluster, facts: ClusterFacts): ClusterCopy {
  const guests: GuestCopy[] = [];
  const wanted: number[] = partGuests(touchedObjects(plan, observed.name));
  for (const guest of plan.guests) {
    if (guest.cluster !== observed.name || !guestTouched(guest.action)) continue;
    wanted.push(guest.vmid, ...cloneSources(guest.operations).map((s) => s.vmid));
  }
  for (const vmid of new Set(wanted)) {
    // A guest the plan creates has no read; a template a clone uses was read for the plan.
    const read = observed.guests[vmid];
    if (!read) continue;
    guests.push({
      vmid: read.vmid,
      type: read.type,
      node: read.node,
      running: read.status === 'running',
      current: read.current,
      pending: read.pending,
      pendingDelete: read.pendingDelete,
    });
  }
  const objects = buildKindsCopy(plan, observed, new Set(guests.map((g) => g.vmid)));
  return { cluster: observed.name, facts, guests, objects };
}
