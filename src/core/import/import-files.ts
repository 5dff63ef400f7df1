/**
 * From what an import read to the files it writes: each readable guest's document, checked
 * against the cluster's document (its range, nodes and naming contract) or with a new `kind:
 * Cluster` document around the guests found, grouped into files, and everything not imported with
 * why. Deterministic: the same reads give the same paths and bytes. No I/O.
 */
import type { ClusterSpec, SpecSet } from '../model.js';
import { type ImportedGuest, importGuest, naturalCompare } from './guest-document.js';
import { firewallDocument } from '../kinds/firewall/document.js';
import type { ImportRead } from './read-estate.js';
import { type ClusterDocumentText, joinDocuments, renderCluster, renderGuest, renderPool } from './render-documents.js';
import { POOL_KIND } from '../kinds/pool/common.js';
import type { GuestDocument } from './guest-document.js';
import type { HaResource } from '../kinds/ha/port.js';
import { importBackupJobs } from './backup-jobs.js';
import { renderBackupJob } from './render-documents.js';
import type { NotImported } from './select-guests.js';
import { haSid } from '../kinds/ha/ha-kind.js';

/** How guests are put into files. */
export type ImportGrouping = 'guest' | 'cluster' | 'pool';

/** One file to write, relative to the output folder. */
export interface ImportFile {
  path: string;
  text: string;
  /** `cluster/vmid` of the guests in it; empty for a Cluster document's file. */
  guests: string[];
}

/** What an import does. */
export interface ImportResult {
  files: ImportFile[];
  /** Guests written, by cluster. */
  imported: { cluster: string; vmid: number; name: string; path: string; remarks: string[] }[];
  /** Described by the specs already. */
  skipped: NotImported[];
  /** Not imported: unreadable, or refused with why. */
  refused: NotImported[];
  /** Clusters that could not be listed. */
  clusterErrors: { cluster: string; message: string }[];
  /** What was not read of a cluster, and so not written (its pools, its HA resources). */
  clusterNotes: { cluster: string; message: string }[];
}

const DEFAULT_OWNER_TAG = 'pve-gitops';

/** The VMID range a new Cluster document claims: the hundreds around the guests found. */
function rangeAround(vmids: readonly number[], taken: readonly { lower: number; upper: number }[]): { lower: number; upper: number } {
  const min = Math.min(...vmids);
  const max = Math.max(...vmids);
  const wide = { lower: Math.max(100, Math.floor(min / 100) * 100), upper: Math.floor(max / 100) * 100 + 100 };
  const overlaps = taken.some((r) => wide.lower < r.upper && r.lower < wide.upper);
  return overlaps ? { lower: min, upper: max + 1 } : wide;
}

/** Why `guest` does not fit the cluster's existing document, if it does not. */
function misfit(guest: ImportedGuest, spec: ClusterSpec): string | undefined {
  const { vmids } = spec;
  if (guest.vmid < vmids.lower || guest.vmid >= vmids.upper)
    return `VMID ${guest.vmid} is outside the cluster document's range [${vmids.lower}, ${vmids.upper}); widen vmids to import it`;
  if (!spec.nodes.includes(guest.document.node))
    return `its node ${guest.document.node} is not among the cluster document's nodes; add it to import the guest`;
  const storage = spec.storages && guest.storages.find((s) => !spec.storages?.includes(s));
  if (storage) return `its storage ${storage} is not among the cluster document's storages; add it to import the guest`;
  const bridge = spec.bridges && guest.bridges.find((b) => !spec.bridges?.includes(b));
  if (bridge) return `its bridge ${bridge} is not among the cluster document's bridges; add it to import the guest`;
  return undefined;
}

/** The document with `pool:`, `ha:` and `firewall:` after `adopt:`, where a person writes the guest's other parts. */
function withParts(document: GuestDocument, parts: Pick<GuestDocument, 'pool' | 'ha' | 'firewall'>): GuestDocument {
  const { config, ignore, pool, ha, firewall, ...head } = document;
  const merged = { pool, ha, firewall, ...parts };
  return {
    ...head,
    ...(merged.pool !== undefined ? { pool: merged.pool } : {}),
    ...(merged.ha !== undefined ? { ha: merged.ha } : {}),
    ...(merged.firewall !== undefined ? { firewall: merged.firewall } : {}),
    ...(ignore ? { ignore } : {}),
    config,
  };
}

/**
 * The fields of an HA resource the HA kind manages, as read: each explicit, so the plan compares
 * like with like. `enabled` is written as `started`, the name Proxmox gives the same state.
 */
function haFields(resource: HaResource): Record<string, string | number | boolean> {
  const fields: Record<string, string | number | boolean> = {};
  if (resource.state !== undefined) fields.state = resource.state === 'enabled' ? 'started' : resource.state;
  if (resource.max_restart !== undefined) fields.max_restart = resource.max_restart;
  if (resource.max_relocate !== undefined) fields.max_relocate = resource.max_relocate;
  if (resource.failback !== undefined) fields.failback = resource.failback;
  if (resource.comment !== undefined) fields.comment = resource.comment;
  return fields;
}

/** The file a guest goes into. */
function guestPath(guest: ImportedGuest, grouping: ImportGrouping, pool: string | undefined): string {
  const dir = guest.cluster;
  if (grouping === 'cluster') return `${dir}/guests.yaml`;
  if (grouping === 'pool') return pool === undefined ? `${dir}/no-pool.yaml` : `${dir}/pool-${pool}.yaml`;
  return `${dir}/${guest.document.name}.yaml`;
}

/** The files of an import of `reads` into a repository whose specs are `specs`. */
export function importFiles(
  reads: readonly ImportRead[],
  specs: SpecSet,
  grouping: ImportGrouping,
  /** Who imports, for each guest file's first note (`importGuest`). */
  by?: string,
): ImportResult {
  const result: ImportResult = { files: [], imported: [], skipped: [], refused: [], clusterErrors: [], clusterNotes: [] };
  const taken = specs.clusters.map((c) => c.vmids);
  const byPath = new Map<string, { texts: string[]; guests: string[] }>();
  const add = (path: string, text: string, key?: string): void => {
    const file = byPath.get(path) ?? { texts: [], guests: [] };
    file.texts.push(text);
    if (key !== undefined) file.guests.push(key);
    byPath.set(path, file);
  };
  for (const read of [...reads].sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0))) {
    if (read.error !== undefined) {
      result.clusterErrors.push({ cluster: read.cluster, message: read.error });
      continue;
    }
    result.skipped.push(...read.skipped);
    if (read.poolError !== undefined)
      result.clusterNotes.push({ cluster: read.cluster, message: `pools not read, so no guest says pool: (${read.poolError})` });
    if (read.backupJobsError !== undefined)
      result.clusterNotes.push({ cluster: read.cluster, message: `backup jobs not read, so none is written (${read.backupJobsError})` });
    if (read.backupJobs && read.backupJobs.length > 0) {
      const jobs = importBackupJobs(read.cluster, read.backupJobs, read.listing ?? [], specs);
      for (const r of jobs.refused)
        result.clusterNotes.push({ cluster: read.cluster, message: `backup job ${r.id} not imported: ${r.why}` });
      if (jobs.documents.length > 0) {
        const header = `# Written by \`pve-gitops import\`: the backup jobs of cluster ${read.cluster}, as they are.\n`;
        add(`backup-jobs-${read.cluster}.yaml`, `${header}${joinDocuments(jobs.documents.map((d) => renderBackupJob(d)))}`);
      }
    }
    if (read.haError !== undefined)
      result.clusterNotes.push({ cluster: read.cluster, message: `HA resources not read, so no guest says ha: (${read.haError})` });
    if (read.firewallError !== undefined)
      result.clusterNotes.push({
        cluster: read.cluster,
        message: `firewalls not read, so no guest says firewall: (${read.firewallError})`,
      });
    const existing = specs.clusters.find((c) => c.name === read.cluster);
    const ownerTag = existing?.ownerTag ?? DEFAULT_OWNER_TAG;
    const names = new Map(specs.guests.filter((g) => g.cluster === read.cluster).map((g) => [g.name, g.vmid]));
    const accepted: ImportedGuest[] = [];
    for (const listed of read.wanted) {
      const refuse = (why: string): void => {
        result.refused.push({ cluster: read.cluster, vmid: listed.vmid, ...(listed.name !== undefined ? { name: listed.name } : {}), why });
      };
      const observed = read.guests.get(listed.vmid);
      if (!observed) {
        refuse(`could not be read, so nothing is guessed: ${read.readErrors.get(listed.vmid) ?? 'not read'}`);
        continue;
      }
      const made = importGuest(read.cluster, listed, observed, ownerTag, by);
      if (!made.ok) {
        refuse(made.reason);
        continue;
      }
      const guest = made.guest;
      const sameName = names.get(guest.document.name);
      if (sameName !== undefined) {
        refuse(`guest ${sameName} of the cluster is also named ${guest.document.name}, and names are unique per cluster; rename one`);
        continue;
      }
      const why = existing ? misfit(guest, existing) : undefined;
      if (why !== undefined) {
        refuse(why);
        continue;
      }
      names.set(guest.document.name, guest.vmid);
      accepted.push(guest);
    }
    if (accepted.length === 0) continue;
    if (!existing) {
      const vmids = rangeAround(
        accepted.map((g) => g.vmid),
        taken,
      );
      taken.push(vmids);
      const union = (pick: (g: ImportedGuest) => readonly string[]): string[] => [...new Set(accepted.flatMap(pick))].sort(naturalCompare);
      const storages = union((g) => g.storages);
      const bridges = union((g) => g.bridges);
      const document: ClusterDocumentText = {
        kind: 'Cluster',
        name: read.cluster,
        vmids,
        ownerTag,
        nodes: [...new Set([...read.nodes, ...accepted.map((g) => g.document.node)])].sort(naturalCompare),
        ...(storages.length > 0 ? { storages } : {}),
        ...(bridges.length > 0 ? { bridges } : {}),
        prune: false,
      };
      const notes = [
        `Written by \`pve-gitops import\`: cluster ${read.cluster} as found. The VMID range is the hundreds around`,
        'the imported guests; storages and bridges are those their disks and NICs use (the naming contract).',
        "Widen them before importing guests outside them. prune: false, so a removed spec's guest is only reported.",
      ];
      add(`cluster-${read.cluster}.yaml`, renderCluster(document, notes));
    }
    const described = new Set((specs.objects ?? []).filter((o) => o.kind === POOL_KIND && o.cluster === read.cluster).map((o) => o.id));
    const newPools = new Set<string>();
    for (const guest of accepted) {
      const pool = read.pools?.get(guest.vmid);
      const path = guestPath(guest, grouping, pool);
      let document: GuestDocument = guest.document;
      const notes = [...guest.notes];
      const resource = read.ha?.get(haSid(guest.type, guest.vmid));
      if (pool !== undefined) {
        document = withParts(document, { pool });
        notes.push(`Member of pool ${pool}: pool: keeps it there (a guest without pool: leaves its membership alone).`);
        if (!described.has(pool)) newPools.add(pool);
      }
      if (resource) {
        document = withParts(document, { ha: haFields(resource) });
        notes.push('HA-managed: ha: keeps its resource as it is (a guest without ha: leaves HA alone).');
      }
      const live = read.firewalls?.get(guest.vmid);
      const firewall = live ? firewallDocument(live) : undefined;
      if (firewall) {
        document = withParts(document, { firewall });
        notes.push(`Firewall: firewall: keeps its ${Object.keys(firewall).join(', ')} as they are (a section left out is not managed).`);
      }
      add(path, renderGuest(document, notes), `${guest.cluster}/${guest.vmid}`);
      result.imported.push({ cluster: guest.cluster, vmid: guest.vmid, name: guest.document.name, path, remarks: guest.remarks });
    }
    const pools = [...newPools].sort(naturalCompare).map((id) => {
      const comment = read.poolComments?.get(id);
      return renderPool({ kind: 'Pool', name: id, cluster: read.cluster, ...(comment !== undefined ? { comment } : {}) }, []);
    });
    if (pools.length > 0) {
      const notes = [`Written by \`pve-gitops import\`: the pools of cluster ${read.cluster} that imported guests are members of.`];
      add(`pools-${read.cluster}.yaml`, `${notes.map((n) => `# ${n}\n`).join('')}${joinDocuments(pools)}`);
    }
  }
  for (const [path, file] of [...byPath].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    result.files.push({ path, text: joinDocuments(file.texts), guests: file.guests });
  }
  return result;
}
