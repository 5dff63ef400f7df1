/**
 * A VM disk made from an existing image (`<storage>:0,import-from=<source>`), as qemu-server
 * checks and allocates it (docs/proxmox-behaviour.md, IMF- rows): `$check_storage_access` wants
 * the source to be a guest image or an `import` volume (qemu-server `API2/Qemu.pm`), and
 * `$check_drive_param` wants the `:0` syntax; the new disk takes the source's size, and the
 * option steers only the allocation, so the config keeps no `import-from`.
 */
import { isQemuDrive } from '../../../core/hotplug.js';
import { ParamError } from '../errors.js';
import { parseAllocation, parseOption, parseVolumeId } from '../property-format.js';
import type { VolumeStore } from '../volumes.js';

/** `parse_volname`'s content type of a volume name. */
function volumeType(volname: string): string {
  const dir = /^(iso|vztmpl|backup|snippets|import)\//.exec(volname);
  if (dir) return dir[1] as string;
  return 'images';
}

/** Every drive with `import-from`, parsed. */
function importDrives(options: Record<string, string>): [string, Record<string, string>][] {
  const out: [string, Record<string, string>][] = [];
  for (const [key, value] of Object.entries(options)) {
    if (!isQemuDrive(key)) continue;
    const drive = parseOption('qemu', key, value);
    if (drive?.['import-from'] !== undefined) out.push([key, drive]);
  }
  return out;
}

/** `$check_storage_access`: the source is an `images` or `import` volume. */
export function checkImportSources(options: Record<string, string>): void {
  for (const [key, drive] of importDrives(options)) {
    const source = drive['import-from'] as string;
    const id = parseVolumeId(source);
    if (!id) continue;
    const vtype = volumeType(id.volname);
    if (vtype !== 'images' && vtype !== 'import') {
      throw new ParamError({ [key]: `${source} has wrong type '${vtype}' - needs to be 'images' or 'import'` });
    }
  }
}

/** `$check_drive_param`: `import-from` only on a new disk of size 0. */
export function checkImportSyntax(options: Record<string, string>): void {
  for (const [key, drive] of importDrives(options)) {
    const alloc = parseAllocation(drive.file ?? '');
    if (alloc?.gib !== 0) {
      throw new ParamError({ [key]: "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>" });
    }
  }
}

/** The size of an import source in bytes, or undefined when it does not exist. */
export function importSourceSize(volumes: VolumeStore, source: string): number | undefined {
  const size = volumes.size(source);
  if (size !== undefined) return size;
  const storage = parseVolumeId(source)?.storage ?? '';
  const file = volumes.filesOn(storage).find((f) => f.volid === source);
  if (file) return file.size;
  // Without a list of files every file exists; a cloud image's usual virtual size.
  return volumes.strictFiles ? undefined : 2 * 1024 ** 3;
}
