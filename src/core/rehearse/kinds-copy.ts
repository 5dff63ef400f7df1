/**
 * The objects of other kinds in a rehearsal's copy (docs/rehearsal.md, "The copy"): what the
 * plan's own reads hold of the objects its apply touches, so no object is read twice — the pools
 * the specs name with their members, the HA resources of the guests in the copy (and whether
 * their service is in `error` state, from the plan's listing), the firewall files of the guests
 * whose firewall the plan changes, and the backup jobs the plan changes. Pure: it reads
 * `ObservedCluster.objects` as each kind's observe left it; the sandbox writes it into the
 * simulator (`pve/rehearse/sandbox.ts`).
 */
import type { JobValues } from '../kinds/backup/job.js';
import { BACKUP_JOB_KIND, type BackupJobObserved } from '../kinds/backup/backup-job-kind.js';
import { FIREWALL_KIND, type FirewallObserved } from '../kinds/firewall/firewall-kind.js';
import { HA_KIND, type HaObserved, haSid } from '../kinds/ha/ha-kind.js';
import { POOL_KIND, POOL_MEMBER_KIND } from '../kinds/pool/common.js';
import type { HaResource } from '../kinds/ha/port.js';
import type { PoolRead } from '../kinds/pool/read.js';
import type { FirewallState } from '../kinds/firewall/state.js';
import type { ObjectPlan, ObservedCluster, Plan } from '../model.js';

/** A pool of the copy whose members the plan read. */
export interface PoolCopy {
  comment?: string;
  vmids: number[];
  storage: string[];
}

/** The touched objects of one cluster, as the plan read them. */
export interface KindsCopy {
  /** Pools the specs name, by id, with their members (pools only listed by name have none here). */
  pools: Record<string, PoolCopy>;
  /** The HA resources of the copy's guests (as the HA kind read them, else as the listing's `hastate` shows them). */
  ha: HaResource[];
  /** SIDs whose HA service is in `error` state (the listing's `hastate`). */
  haErrors: string[];
  /** The firewall files of guests whose firewall the plan changes, by VMID, every section as read. */
  firewalls: Record<string, FirewallState>;
  /** The backup jobs the plan changes, by id, their values as Proxmox stores them. */
  backupJobs: Record<string, JobValues>;
}

/** Whether an item of another kind is carried out by an apply: a writing action with operations. */
export function objectTouched(item: ObjectPlan): boolean {
  return (item.action === 'create' || item.action === 'update' || item.action === 'destroy') && item.operations.length > 0;
}

/** The touched items of `cluster`. */
export function touchedObjects(plan: Plan, cluster: string): ObjectPlan[] {
  return plan.objects.filter((o) => o.cluster === cluster && objectTouched(o));
}

/** What else to read besides the facts every copy has (`ClusterReader.readFacts`). */
export interface FactsOptions {
  /** The datacenter's IPsets and aliases: the plan changes a guest's firewall rules. */
  firewall?: boolean;
}

/** The rule operations whose rule may name an IPset or alias of the datacenter. */
const RULE_WRITES: ReadonlySet<string> = new Set(['add-fw-rule', 'change-fw-rule']);

/** What the copy of `cluster` reads besides the facts every copy has: the datacenter's IPsets and aliases when a rule is written. */
export function factsOptions(plan: Plan, cluster: string): FactsOptions {
  const rules = touchedObjects(plan, cluster).some((o) => o.kind === FIREWALL_KIND && o.operations.some((op) => RULE_WRITES.has(op.op)));
  return rules ? { firewall: true } : {};
}

/** The guests a touched item is a part of (its HA resource, firewall, pool membership). */
export function partGuests(items: readonly ObjectPlan[]): number[] {
  return items.flatMap((o) => (typeof o.payload.vmid === 'number' ? [o.payload.vmid] : []));
}

/** What one kind's observe read, as its own type (undefined when the kind did not read the cluster). */
function readOf<T>(observed: ObservedCluster, kind: string): T | undefined {
  return observed.objects?.[kind] as T | undefined;
}

/** The pools the two pool kinds read, present ones only, with their members. */
function poolsRead(observed: ObservedCluster): Record<string, PoolCopy> {
  const reads: Record<string, PoolRead> = {
    ...readOf<{ pools?: Record<string, PoolRead> }>(observed, POOL_MEMBER_KIND)?.pools,
    ...readOf<{ pools?: Record<string, PoolRead> }>(observed, POOL_KIND)?.pools,
  };
  const out: Record<string, PoolCopy> = {};
  for (const [poolid, read] of Object.entries(reads)) {
    if (read.state !== 'present') continue;
    out[poolid] = { ...(read.comment !== undefined ? { comment: read.comment } : {}), vmids: read.vmids, storage: read.storage };
  }
  return out;
}

/**
 * The touched objects of one cluster: `guests` are the VMIDs of the copy's guests (the HA
 * resources of those are carried, whether the plan changes them or a guest's power goes through HA).
 */
export function buildKindsCopy(plan: Plan, observed: ObservedCluster, guests: ReadonlySet<number>): KindsCopy {
  const items = touchedObjects(plan, observed.name);
  const ids = (kind: string, field: string): string[] =>
    items.filter((o) => o.kind === kind).flatMap((o) => (o.payload[field] === undefined ? [] : [String(o.payload[field])]));
  const ha = Object.values(readOf<HaObserved>(observed, HA_KIND)?.resources ?? {}).filter((r) =>
    guests.has(Number(r.sid.slice(r.sid.indexOf(':') + 1))),
  );
  const read = new Set(ha.map((r) => r.sid));
  const haErrors: string[] = [];
  // One pass over the estate's listing, looking only at the copy's guests.
  for (const listed of observed.listing) {
    if (!guests.has(listed.vmid)) continue;
    const sid = haSid(listed.type, listed.vmid);
    // A guest HA manages whose spec does not declare `ha:` was not read by the HA kind: the listing
    // says it is managed, so its power goes through the HA manager on the copy too.
    if (listed.hastate !== undefined && !read.has(sid))
      ha.push({ sid, state: listed.hastate === 'stopped' || listed.hastate === 'ignored' ? listed.hastate : 'started' });
    // The plan's listing (`hastate`) or, where the plan read it, the guest's `status/current`.
    if ((listed.hastate ?? observed.guests[listed.vmid]?.ha?.state) === 'error') haErrors.push(sid);
  }
  const firewallRead = readOf<FirewallObserved>(observed, FIREWALL_KIND)?.guests ?? {};
  const firewalls: Record<string, FirewallState> = {};
  for (const vmid of ids(FIREWALL_KIND, 'vmid')) {
    const live = firewallRead[vmid]?.live;
    if (live) firewalls[vmid] = live;
  }
  const jobsRead = readOf<BackupJobObserved>(observed, BACKUP_JOB_KIND)?.jobs ?? {};
  const backupJobs: Record<string, JobValues> = {};
  for (const id of ids(BACKUP_JOB_KIND, 'id')) {
    const job = jobsRead[id];
    if (job) backupJobs[id] = job;
  }
  return { pools: poolsRead(observed), ha, haErrors, firewalls, backupJobs };
}
