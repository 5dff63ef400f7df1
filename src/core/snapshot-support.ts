/**
 * Which volumes Proxmox can snapshot, as a table per storage plugin (pve-storage
 * `volume_has_feature($cfg, 'snapshot', $volid)` of each `Storage/*Plugin.pm`), and which of a
 * guest's volumes a snapshot looks at: every drive but a CD-ROM of a VM (qemu-server
 * `QemuConfig.pm`, `has_feature`), every mount point of a container, the root file system
 * included (pve-container `LXC/Config.pm`, `has_feature`) — where a bind or device mount point,
 * a host path rather than a storage volume, never has the feature. The plan tells from it
 * whether a guest's snapshot will be refused; the simulator refuses by it. Pure.
 * docs/proxmox-behaviour.md "Snapshots" and "Container snapshots".
 */
import type { GuestType } from './guest-flavours.js';
import { flavourOf } from './guest-flavours.js';
import { isCdrom } from './hotplug.js';
import { parsePropertyString, propertyValue } from './property-string.js';

/** Plugins whose current volumes have the feature whatever their format (LVM-thin, ZFS, ZFS over iSCSI, Ceph RBD). */
const ANY_FORMAT: ReadonlySet<string> = new Set(['lvmthin', 'zfspool', 'zfs', 'rbd']);

/** Plugins that snapshot some formats only: the file storages of `Plugin.pm` and thick LVM qcow2 only, BTRFS all but vmdk. */
const BY_FORMAT: Readonly<Record<string, ReadonlySet<string>>> = {
  dir: new Set(['qcow2']),
  nfs: new Set(['qcow2']),
  cifs: new Set(['qcow2']),
  cephfs: new Set(['qcow2']),
  lvm: new Set(['qcow2']),
  btrfs: new Set(['qcow2', 'raw', 'subvol']),
};

/** Plugins without the feature at all (iSCSI LUNs, a backup server, an ESXi import source). */
const NONE: ReadonlySet<string> = new Set(['iscsi', 'iscsidirect', 'pbs', 'esxi']);

/** The format `parse_volname` gives a volume: its file's extension, else raw (thick LVM's logical volumes). */
function formatOf(volname: string): string {
  return /\.(qcow2|raw|vmdk|subvol)$/.exec(volname)?.[1] ?? 'raw';
}

/**
 * Whether a volume `volname` (the part after `storage:`) on a storage of plugin type `type` can be
 * snapshotted; undefined for a plugin this table does not know (a third-party one). A base volume
 * (a template's `base-…`) never can: every plugin lists the feature for `current` volumes only.
 */
export function storageCanSnapshot(type: string, volname: string): boolean | undefined {
  if (/(^|\/)(base|basevol)-[^/]*$/.test(volname)) return false;
  if (ANY_FORMAT.has(type)) return true;
  const formats = BY_FORMAT[type];
  if (formats) return formats.has(formatOf(volname));
  return NONE.has(type) ? false : undefined;
}

/** A volume a snapshot of the guest looks at: its config key and what the key names. */
export interface SnapshotVolume {
  key: string;
  /** `storage:volname`, or a host path (a bind or device mount point). */
  volume: string;
  /** The storage part of a storage volume; absent for a host path. */
  storage?: string;
  volname?: string;
}

const VOLUME_ID = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$/i;

/** The volumes of a config section that a snapshot must snapshot, in key order. */
export function snapshotVolumes(type: GuestType, config: Readonly<Record<string, string>>): SnapshotVolume[] {
  const flavour = flavourOf(type);
  const out: SnapshotVolume[] = [];
  for (const key of Object.keys(config).sort()) {
    if (!flavour.diskKey.test(key)) continue;
    const parsed = parsePropertyString(config[key] as string);
    const volume = parsed.head ?? propertyValue(parsed, flavour.volumeKey);
    if (volume === undefined) continue;
    if (type === 'qemu' && isCdrom({ media: propertyValue(parsed, 'media') ?? '', file: volume })) continue;
    const m = VOLUME_ID.exec(volume);
    out.push(m ? { key, volume, storage: m[1] as string, volname: m[2] as string } : { key, volume });
  }
  return out;
}
