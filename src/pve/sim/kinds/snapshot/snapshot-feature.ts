/**
 * Whether a VM's disks can be snapshotted (qemu-server `QemuConfig.pm`, `has_feature`: every
 * drive but a CD-ROM must have the `snapshot` feature; pve-storage `volume_has_feature` per
 * plugin): LVM-thin, ZFS and RBD volumes can, file storages (`Plugin.pm`) and thick LVM
 * (`LVMPlugin.pm`) only for qcow2 images. docs/proxmox-behaviour.md "Snapshots".
 */
import { isCdrom } from '../../../../core/hotplug.js';
import type { Guest } from '../../guest/guest.js';
import { flavourOf } from '../../guest/flavours.js';
import { parseOption, parseVolumeId } from '../../property-format.js';
import type { VolumeStore } from '../../volumes.js';

/** Plugins whose volumes have the snapshot feature whatever their format. */
const ANY_FORMAT = new Set(['lvmthin', 'zfspool', 'rbd']);

/** `volume_has_feature($storecfg, 'snapshot', $volid)` for a current (not base) volume. */
function volumeCanSnapshot(volumes: VolumeStore, volid: string): boolean {
  const parsed = parseVolumeId(volid);
  if (!parsed) return false; // a path, not a storage volume
  const storage = volumes.storage(parsed.storage);
  if (!storage) return false;
  if (ANY_FORMAT.has(storage.type)) return true;
  return /\.qcow2$/.test(parsed.volname);
}

/** Whether every non-CD-ROM drive of `values` (a config section) can be snapshotted. */
export function canSnapshot(guest: Guest, values: ReadonlyMap<string, string>, volumes: VolumeStore): boolean {
  const flavour = flavourOf(guest.type);
  for (const [key, value] of values) {
    if (!flavour.isVolumeKey(key)) continue;
    const parsed = parseOption(guest.type, key, value);
    if (!parsed || isCdrom(parsed)) continue;
    const volid = parsed[flavour.volumeProperty];
    if (volid && !volumeCanSnapshot(volumes, volid)) return false;
  }
  return true;
}
