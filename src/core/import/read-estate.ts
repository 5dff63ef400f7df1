/**
 * Reads what an import needs through the reader port, as the drift report reads: one listing per
 * cluster, one read per selected guest (in flight as far as the connection's concurrency lets),
 * the node list, the pools (each guest's, and their comments), the HA resources, each read guest's
 * firewall file (its four sections, beside the guest's own read) and, for an unfiltered import,
 * the backup jobs. A failed read is recorded for
 * the report, never guessed around. Never writes.
 */
import type { ListedGuest, ObservedGuest, SpecSet } from '../model.js';
import type { ClusterReader } from '../ports.js';
import type { PoolPort } from '../kinds/pool/port.js';
import { POOL_KIND } from '../kinds/pool/common.js';
import { HA_KIND } from '../kinds/ha/ha-kind.js';
import type { HaPort, HaResource } from '../kinds/ha/port.js';
import { BACKUP_JOB_KIND } from '../kinds/backup/backup-job-kind.js';
import type { BackupJobPort, RawBackupJob } from '../kinds/backup/port.js';
import { FIREWALL_KIND } from '../kinds/firewall/firewall-kind.js';
import { readManaged } from '../kinds/firewall/execute.js';
import type { FirewallPort } from '../kinds/firewall/port.js';
import type { FirewallState } from '../kinds/firewall/state.js';
import { type ImportFilter, type NotImported, selectGuests } from './select-guests.js';

/** One cluster as an import read it. */
export interface ImportRead {
  cluster: string;
  /** Set when the cluster could not be listed: nothing of it is imported. */
  error?: string;
  nodes: string[];
  /** The selected guests, in VMID order. */
  wanted: ListedGuest[];
  guests: Map<number, ObservedGuest>;
  readErrors: Map<number, string>;
  skipped: NotImported[];
  /** Each guest's pool, as the listing shows it. */
  pools?: Map<number, string>;
  /** The pools the token may audit, with their comments. */
  poolComments?: Map<string, string | undefined>;
  /** Why pools could not be read, when they were not needed to select guests. */
  poolError?: string;
  /** The cluster's HA resources by SID (`vm:100`), when they could be read. */
  ha?: Map<string, HaResource>;
  /** Why the HA resources could not be read (the token lacks Sys.Audit on `/`, say). */
  haError?: string;
  /** The whole listing, for the names of the guests backup jobs select. */
  listing?: ListedGuest[];
  /** The cluster's backup jobs, when asked for and readable. */
  backupJobs?: RawBackupJob[];
  backupJobsError?: string;
  /** Each read guest's firewall (every section; all empty when it has no firewall file). */
  firewalls?: Map<number, FirewallState>;
  /** Why no firewall was read (the connection has no firewall adapter). */
  firewallError?: string;
}

/** Every section of a guest's firewall file. */
const WHOLE_FILE: FirewallState = { options: {}, aliases: {}, ipsets: {}, rules: [] };

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A firewall read that failed, told apart from the guest's own read failing. */
class FirewallReadError {
  constructor(readonly cause: unknown) {}
}

/** Reads one cluster for an import. */
export async function readForImport(
  reader: ClusterReader,
  filter: ImportFilter,
  specs: SpecSet,
  options: {
    pools: boolean;
    backupJobs: boolean;
    /** Read each guest's firewall file (default true). */
    firewalls?: boolean;
    onProgress?: (event: { cluster: string; read: number; total: number }) => void;
  },
): Promise<ImportRead> {
  const cluster = reader.cluster;
  const read: ImportRead = { cluster, nodes: [], wanted: [], guests: new Map(), readErrors: new Map(), skipped: [] };
  let listing: ListedGuest[];
  const pools = readPools(reader);
  const ha = readHa(reader);
  const jobs = options.backupJobs ? readJobs(reader) : undefined;
  try {
    [listing, read.nodes] = await Promise.all([reader.listGuests(), reader.listNodes()]);
    const poolsRead = await pools;
    if ('error' in poolsRead) {
      if (options.pools) throw new Error(`cannot read its pools: ${poolsRead.error}`);
      read.poolError = poolsRead.error;
    } else {
      read.pools = poolsRead.members;
      read.poolComments = poolsRead.comments;
    }
    const resources = await ha;
    if ('error' in resources) read.haError = resources.error;
    else read.ha = resources.bySid;
    const found = jobs ? await jobs : undefined;
    if (found && 'error' in found) read.backupJobsError = found.error;
    else if (found) read.backupJobs = found.jobs;
    read.listing = listing;
  } catch (err) {
    read.error = message(err);
    return read;
  }
  const selected = selectGuests(cluster, listing, filter, specs, read.pools);
  read.wanted = selected.wanted;
  read.skipped = selected.skipped;
  const firewall = options.firewalls === false ? undefined : (reader.kindPort?.(FIREWALL_KIND) as FirewallPort | undefined);
  if (firewall) read.firewalls = new Map();
  else if (options.firewalls !== false) read.firewallError = 'the connection has no firewall adapter';
  let done = 0;
  await Promise.all(
    selected.wanted.map(async (listed) => {
      try {
        const target = { node: listed.node, type: listed.type, vmid: listed.vmid };
        const [observed, rules] = await Promise.all([
          reader.readGuest(listed),
          firewall ? readManaged(firewall, target, WHOLE_FILE).catch((err: unknown) => new FirewallReadError(err)) : undefined,
        ]);
        if (rules instanceof FirewallReadError) throw new Error(`its firewall could not be read: ${message(rules.cause)}`);
        read.guests.set(listed.vmid, observed);
        if (rules) read.firewalls?.set(listed.vmid, rules);
      } catch (err) {
        read.readErrors.set(listed.vmid, message(err));
      }
      done += 1;
      options.onProgress?.({ cluster, read: done, total: selected.wanted.length });
    }),
  );
  return read;
}

/** The cluster's backup jobs (`GET /cluster/backup`, one request). */
async function readJobs(reader: ClusterReader): Promise<{ jobs: RawBackupJob[] } | { error: string }> {
  const port = reader.kindPort?.(BACKUP_JOB_KIND) as BackupJobPort | undefined;
  if (!port) return { error: 'the connection has no backup-job adapter' };
  try {
    return { jobs: await port.listJobs() };
  } catch (err) {
    return { error: message(err) };
  }
}

/** The cluster's HA resources (`GET /cluster/ha/resources`, one request). */
async function readHa(reader: ClusterReader): Promise<{ bySid: Map<string, HaResource> } | { error: string }> {
  const port = reader.kindPort?.(HA_KIND) as HaPort | undefined;
  if (!port) return { error: 'the connection has no HA adapter' };
  try {
    return { bySid: new Map((await port.listResources()).map((r) => [r.sid, r])) };
  } catch (err) {
    return { error: message(err) };
  }
}

/**
 * Each guest's pool (the pool-member kind's listing: `GET /cluster/resources` shows it) and the
 * pools with their comments (`GET /pools`): two requests, alongside the guest listing.
 */
async function readPools(
  reader: ClusterReader,
): Promise<{ members: Map<number, string>; comments: Map<string, string | undefined> } | { error: string }> {
  const port = reader.kindPort?.(POOL_KIND) as PoolPort | undefined;
  if (!port) return { error: 'the connection has no pool adapter' };
  try {
    const [memberships, pools] = await Promise.all([port.memberships(), port.listPools()]);
    const members = new Map<number, string>();
    for (const m of memberships) if (m.pool !== undefined) members.set(m.vmid, m.pool);
    return { members, comments: new Map(pools.map((p) => [p.poolid, p.comment])) };
  } catch (err) {
    return { error: message(err) };
  }
}
