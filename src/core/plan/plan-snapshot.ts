/**
 * Snapshots first (README "Snapshots first"): whether a guest's apply is preceded by a snapshot,
 * and whether Proxmox will take it. `snapshot: risky` snapshots before a change whose impact is
 * needs-stop or data-loss, `always` before any change of an existing guest, `never` (the
 * default) not at all; the guest's policy wins over its cluster's. VMs and containers alike.
 *
 * Where the plan read the storages' plugin types (`ObservedCluster.storageTypes`, one request per
 * cluster), it says definitively whether the snapshot will be refused: a guest with a volume that
 * cannot be snapshotted (`core/snapshot-support.ts`) is an error, since its apply would fail with
 * nothing written; where it could not tell, it says so and why. Pure.
 */
import type { ClusterSpec, GuestPlan, GuestSpec, ObservedCluster, ObservedState, SnapshotPolicy } from '../model.js';
import { snapshotVolumes, storageCanSnapshot } from '../snapshot-support.js';
import type { GuestType } from '../guest-flavours.js';
import { toError } from './plan-guest.js';

/** Snapshots of this tool kept per guest unless the Cluster document says (`snapshotsKept`). */
export const DEFAULT_SNAPSHOTS_KEPT = 3;

const RISKY: ReadonlySet<string> = new Set(['needs-stop', 'data-loss']);

/** The policy in force for a guest: its own, else its cluster's, else never. */
export function snapshotPolicy(spec: Pick<GuestSpec, 'snapshot'>, cluster: Pick<ClusterSpec, 'snapshot'> | undefined): SnapshotPolicy {
  return spec.snapshot ?? cluster?.snapshot ?? 'never';
}

/** What the plan could tell of a guest's volumes: those Proxmox refuses, and those it cannot tell about with why. */
interface StorageVerdict {
  refused: string[];
  unsure: string[];
  why: Set<string>;
  /** `storage: type` of the volumes that can be snapshotted. */
  fine: Set<string>;
}

/** How a host path in a volume's place is named (`classify_mountpoint`: `/dev/…` is a device). */
function hostPath(type: GuestType, volume: string): string {
  if (type === 'qemu') return 'a host path, not a storage volume';
  return volume.startsWith('/dev/') ? 'a device mount point' : 'a bind mount point';
}

function verdictOf(type: GuestType, current: Readonly<Record<string, string>>, seen: ObservedCluster, withheld: boolean): StorageVerdict {
  const out: StorageVerdict = { refused: [], unsure: [], why: new Set(), fine: new Set() };
  const types = seen.storageTypes;
  for (const v of snapshotVolumes(type, current)) {
    const named = withheld ? v.key : `${v.volume} (${v.key})`;
    if (v.storage === undefined) {
      out.refused.push(
        withheld ? `${v.key} is not a storage volume` : `${v.key} ${v.volume} is ${hostPath(type, v.volume)}, which cannot be snapshotted`,
      );
      continue;
    }
    const on = withheld ? v.key : `${v.key} on ${v.storage}`;
    if (!types) {
      out.unsure.push(on);
      out.why.add(seen.storageTypesError ? `the storages could not be read: ${seen.storageTypesError}` : 'the storages were not read');
      continue;
    }
    const plugin = types[v.storage];
    if (plugin === undefined) {
      out.unsure.push(on);
      out.why.add(
        withheld ? 'a storage is not visible to the plan' : `storage '${v.storage}' is not visible to the plan's token (Datastore.Audit)`,
      );
      continue;
    }
    const can = storageCanSnapshot(plugin, v.volname as string);
    if (can === undefined) {
      out.unsure.push(on);
      out.why.add(`storage type '${plugin}' is not one the plan knows`);
    } else if (can) out.fine.add(`${v.storage}: ${plugin}`);
    else
      out.refused.push(
        withheld ? `${v.key} is on a storage whose type cannot snapshot it` : `${named} on ${v.storage} (${plugin}) cannot be snapshotted`,
      );
  }
  return out;
}

/** What the reason adds after why the snapshot is taken: that Proxmox will take it, or what the plan cannot tell. */
function outlook(verdict: StorageVerdict, withheld: boolean): string {
  if (verdict.unsure.length > 0) {
    return `the plan cannot tell whether ${verdict.unsure.join(', ')} can be snapshotted (${[...verdict.why].join('; ')}); a storage without snapshot support refuses it, and then nothing is written`;
  }
  if (verdict.fine.size === 0) return 'it has no volumes to snapshot';
  return withheld ? 'its volumes can all be snapshotted' : `its volumes can all be snapshotted (${[...verdict.fine].join(', ')})`;
}

/**
 * Sets `snapshot` on the guest plans that the policy in force snapshots first, or turns a guest
 * into an error when Proxmox would refuse its snapshot (the apply would fail it, nothing written).
 */
export function planSnapshots(guests: GuestPlan[], clusters: ReadonlyMap<string, ClusterSpec>, observed: ObservedState): void {
  for (const plan of guests) {
    const spec = plan.target.spec;
    if (!spec || plan.action !== 'update') continue;
    const cluster = clusters.get(spec.cluster);
    const policy = snapshotPolicy(spec, cluster);
    if (policy === 'never') continue;
    const risky = plan.impact !== undefined && RISKY.has(plan.impact);
    if (policy === 'risky' && !risky) continue;
    const seen = observed.clusters[plan.cluster];
    const current = seen?.guests[plan.vmid]?.current;
    const withheld = plan.liveWithheld === true;
    const verdict = seen && current ? verdictOf(plan.type, current, seen, withheld) : undefined;
    if (verdict && verdict.refused.length > 0) {
      const fix =
        'the apply would fail this guest with nothing written: move the volume to a storage that can snapshot it (LVM-thin, ZFS, Ceph RBD; for a VM also a qcow2 image on a directory storage), or set `snapshot: never` on the guest';
      const messages = verdict.refused.map((why) => `snapshot refused: ${why}; ${fix}`);
      toError(plan, messages[0] as string);
      plan.errors.push(...messages.slice(1));
      continue;
    }
    const why = risky ? `its change is ${plan.impact}` : 'snapshot: always';
    plan.snapshot = {
      reason: `snapshot before the apply (${why}); ${verdict ? outlook(verdict, withheld) : 'a storage without snapshot support refuses it, and then nothing is written'}`,
      keep: cluster?.snapshotsKept ?? DEFAULT_SNAPSHOTS_KEPT,
    };
  }
}
