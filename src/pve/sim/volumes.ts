/**
 * The simulated storages: which volumes exist and how big they are, so allocation picks the
 * next free `vm-<vmid>-disk-<n>` like `find_free_diskname`, resize knows the old size and a
 * referenced-but-missing volume fails like `volume_size_info` would.
 */
import { DieError } from './errors.js';
import { parseAllocation, parseOption, parseSize, parseVolumeId } from './property-format.js';
import type { GuestType } from '../../core/model.js';

/** Default storages of a fresh Proxmox VE install. */
export const DEFAULT_STORAGES = ['local', 'local-lvm'];

/** Volume registry of the whole simulated cluster (shared storage semantics: one namespace). */
export class VolumeStore {
  private readonly volumes = new Map<string, number>();
  private readonly storages: Set<string> | undefined;

  /** `storages` undefined: any storage id is accepted (lenient default). */
  constructor(storages?: string[]) {
    this.storages = storages ? new Set(storages) : undefined;
  }

  /** Storage ids for listings. */
  storageIds(): string[] {
    return this.storages ? [...this.storages] : DEFAULT_STORAGES;
  }

  /** Dies like Proxmox when the storage is not configured. */
  checkStorage(storage: string): void {
    if (this.storages && !this.storages.has(storage)) throw new DieError(`storage '${storage}' does not exist\n`);
  }

  /** Allocates `storage:vm-<vmid>-disk-<n>` (lowest free n) of `bytes`. */
  allocate(storage: string, vmid: number, bytes: number): string {
    this.checkStorage(storage);
    for (let n = 0; ; n++) {
      const volid = `${storage}:vm-${vmid}-disk-${n}`;
      if (!this.volumes.has(volid)) {
        this.volumes.set(volid, bytes);
        return volid;
      }
    }
  }

  /** Allocates the cloud-init drive volume of a VM. */
  allocateCloudinit(storage: string, vmid: number): string {
    this.checkStorage(storage);
    const volid = `${storage}:vm-${vmid}-cloudinit`;
    this.volumes.set(volid, 4 * 1024 * 1024);
    return volid;
  }

  /** Registers an existing volume (fixtures). */
  register(volid: string, bytes: number): void {
    this.volumes.set(volid, bytes);
  }

  has(volid: string): boolean {
    return this.volumes.has(volid);
  }

  size(volid: string): number | undefined {
    return this.volumes.get(volid);
  }

  setSize(volid: string, bytes: number): void {
    this.volumes.set(volid, bytes);
  }

  free(volid: string): void {
    this.volumes.delete(volid);
  }

  /** Frees every volume owned by a guest (`vm-<vmid>-…`), as destroy does. */
  freeOwnedBy(vmid: number): void {
    const re = new RegExp(`^[^:]+:(?:${vmid}/)?(?:vm|base)-${vmid}-`);
    for (const volid of [...this.volumes.keys()]) if (re.test(volid)) this.volumes.delete(volid);
  }

  /** Registers every volume a config text references (fixture loading). */
  registerFromConfig(type: GuestType, values: Map<string, string>): void {
    for (const [key, value] of values) {
      const isVolumeKey =
        type === 'qemu' ? /^(ide|sata|scsi|virtio)\d+$|^efidisk0$|^tpmstate0$/.test(key) : key === 'rootfs' || /^mp\d+$/.test(key);
      if (/^unused\d+$/.test(key)) {
        if (parseVolumeId(value)) this.volumes.set(value, this.volumes.get(value) ?? 0);
        continue;
      }
      if (!isVolumeKey) continue;
      const parsed = parseOption(type, key, value);
      const volid = parsed?.file ?? parsed?.volume;
      if (!volid || !parseVolumeId(volid) || parseAllocation(volid) || parsed?.media === 'cdrom') continue;
      this.volumes.set(volid, parseSize(parsed?.size ?? '') ?? 0);
    }
  }
}
