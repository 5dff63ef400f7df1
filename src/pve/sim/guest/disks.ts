/**
 * A guest's volumes as both flavours' disk endpoints (resize, move, destroy) see them: a volume
 * option parsed with its format, the size arithmetic of `resize`, the move of a volume to another
 * storage and the list of volumes a destroy frees. Which option names a volume, and under which
 * property, comes from the flavour table.
 */
import type { RequestContext } from '../context.js';
import { DieError, ParamError } from '../errors.js';
import type { Guest } from './guest.js';
import { formatSize, optionFormat, parseOption, parseSize, parseVolumeId, printPropertyString } from '../property-format.js';
import { isCdrom } from '../../../core/hotplug.js';
import { TaskFailure, type TaskContext } from '../tasks.js';
import { flavourOf } from './flavours.js';

/** A volume option of the guest, parsed, with the format to print it back. */
interface DriveParts {
  format: NonNullable<ReturnType<typeof optionFormat>>;
  data: Record<string, string>;
}

/** The option `key` of the guest's main section, parsed; undefined when unset or not an option. */
export function driveParts(guest: Guest, key: string): DriveParts | undefined {
  const value = guest.main.get(key);
  const format = optionFormat(guest.type, key);
  if (value === undefined || !format) return undefined;
  const data = parseOption(guest.type, key, value);
  return data ? { format, data } : undefined;
}

/** Computes the new size of a resize request (`+5G` adds, `40G` sets). */
export function newSize(current: number, size: string): number {
  const m = /^(\+)?(\d+(?:\.\d+)?)([KMGT])?$/.exec(size);
  if (!m) throw new DieError(`invalid size string\n`);
  const value = parseSize(`${m[2]}${m[3] ?? ''}`) ?? 0;
  return m[1] ? current + value : value;
}

/** The line `resize` logs for the volume it grows. */
export function resizeLogLine(volid: string, current: number, target: number): string {
  return `  Size of logical volume pve/${parseVolumeId(volid)?.volname ?? volid} changed from ${formatSize(current)} to ${formatSize(target)}.`;
}

/** The size of a drive's volume as `resize` and a move read it: the storage's, else the `size` property. */
export function volumeSize(ctx: RequestContext, volid: string, drive: DriveParts): number {
  return ctx.sim.volumes.size(volid) ?? parseSize(drive.data.size ?? '0') ?? 0;
}

/** The end of a grow: the volume gets its new size (if its storage has room), and the drive's `size` says so in the config. */
export function growVolume(ctx: RequestContext, guest: Guest, key: string, drive: DriveParts, volid: string, target: number): void {
  ctx.sim.volumes.grow(volid, target);
  drive.data.size = formatSize(target);
  guest.main.set(key, printPropertyString(drive.format, drive.data));
  guest.commit();
}

/** Moves a volume to another storage at task end; the old one becomes `unusedN` unless deleted. */
export function moveVolume(ctx: RequestContext, guest: Guest, key: string, storage: string, remove: boolean): void {
  const drive = driveParts(guest, key);
  if (!drive) throw new TaskFailure(`disk '${key}' does not exist`);
  const volumeKey = flavourOf(guest.type).volumeProperty;
  const oldVolid = drive.data[volumeKey] ?? '';
  const bytes = volumeSize(ctx, oldVolid, drive);
  drive.data[volumeKey] = ctx.sim.volumes.allocate(storage, guest.vmid, bytes, guest.node);
  guest.main.set(key, printPropertyString(drive.format, drive.data));
  if (remove) {
    ctx.sim.volumes.free(oldVolid);
  } else {
    for (let i = 0; i < 256; i++) {
      if (!guest.main.has(`unused${i}`)) {
        guest.main.set(`unused${i}`, oldVolid);
        break;
      }
    }
  }
}

/**
 * Where a disk move goes, decided before anything is loaded: `storage` and `target-vmid` are
 * exclusive and one of them is required, both a parameter error under both names (qemu-server
 * `API2/Qemu.pm`, `move_vm_disk`; pve-container `API2/LXC.pm`, `move_volume`). Undefined means a
 * move to another guest, which the simulator does not do.
 */
export function targetStorage(ctx: RequestContext): string | undefined {
  const storage = ctx.params.storage;
  const targetVmid = ctx.params['target-vmid'];
  let both: string | undefined;
  if (targetVmid && storage) both = "either set 'storage' or 'target-vmid', but not both";
  else if (!targetVmid && !storage) both = "both 'storage' and 'target-vmid' missing, either needs to be set";
  if (both !== undefined) throw new ParamError({ 'target-vmid': both, storage: both });
  return targetVmid ? undefined : storage;
}

/** The lines a destroy task logs for the volumes it frees. */
export function logRemovedVolumes(log: TaskContext, guest: Guest): void {
  for (const volid of volumesOf(guest)) log.log(`  Logical volume "${parseVolumeId(volid)?.volname ?? volid}" successfully removed.`);
}

/** Volume ids referenced by the main section: what a destroy frees. */
function volumesOf(guest: Guest): string[] {
  const flavour = flavourOf(guest.type);
  const out: string[] = [];
  for (const [key, value] of guest.main) {
    if (/^unused\d+$/.test(key)) out.push(value);
    else if (flavour.isVolumeKey(key)) {
      const parsed = parseOption(guest.type, key, value);
      const volid = parsed?.[flavour.volumeProperty];
      if (volid && parsed && !isCdrom(parsed) && parseVolumeId(volid)) out.push(volid);
    }
  }
  return out;
}
