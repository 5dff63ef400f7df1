/**
 * Whether a guest's volumes can be snapshotted (`has_feature('snapshot', …)` of qemu-server
 * `QemuConfig.pm` and pve-container `LXC/Config.pm`): every volume the core's
 * `snapshotVolumes` names — a VM's drives but CD-ROMs, a container's root file system and
 * mount points — must be a storage volume whose plugin has the feature
 * (`core/snapshot-support.ts`); a host path (a bind or device mount point) or a storage this
 * cluster does not have never has it. docs/proxmox-behaviour.md "Snapshots".
 */
import { snapshotVolumes, storageCanSnapshot } from '../../../../core/snapshot-support.js';
import type { Guest } from '../../guest/guest.js';
import type { VolumeStore } from '../../volumes.js';

/** Whether every volume of `values` (a config section of `guest`) can be snapshotted. */
export function canSnapshot(guest: Guest, values: ReadonlyMap<string, string>, volumes: VolumeStore): boolean {
  return snapshotVolumes(guest.type, Object.fromEntries(values)).every((v) => {
    const storage = v.storage === undefined ? undefined : volumes.storage(v.storage);
    return storage !== undefined && storageCanSnapshot(storage.type, v.volname as string) === true;
  });
}
