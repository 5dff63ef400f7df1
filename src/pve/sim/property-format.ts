/**
 * Printing property strings the way Proxmox re-prints the values it normalises (drives, NICs,
 * mount points): `print_property_string` order — default key first (combined with its key
 * alias, `virtio=BC:24:11:…`), then required keys, then the rest, each group sorted.
 * Plus the helpers those values need: sizes, MAC addresses, volume ids.
 */
import { randomBytes } from 'node:crypto';
import { paramSchema, parsePropertyStringWithSchema, type ParamSchema } from '../../core/proxmox-params.js';
import { configEndpoint } from '../../core/config-options.js';
import { isCloudinitVolume } from '../../core/hotplug.js';
import type { GuestType } from '../../core/guest-flavours.js';

/** The property-string format of a config option, if it has one (`net0`, `scsi0`, `rootfs`, …). */
export function optionFormat(type: GuestType, key: string): Record<string, ParamSchema> | undefined {
  const schema = paramSchema(configEndpoint(type), key);
  return schema && typeof schema.format === 'object' ? schema.format : undefined;
}

/** Parses an option value with its format; undefined when the option has none or it does not parse. */
export function parseOption(type: GuestType, key: string, value: string): Record<string, string> | undefined {
  const format = optionFormat(type, key);
  if (!format) return undefined;
  const parsed = parsePropertyStringWithSchema(format, value);
  return typeof parsed === 'string' ? undefined : parsed;
}

/** `PVE::JSONSchema::print_property_string` for an already-parsed value. */
export function printPropertyString(format: Record<string, ParamSchema>, data: Record<string, string>): string {
  const parts: string[] = [];
  const done = new Set<string>();
  let defaultKey: string | undefined;
  const keyAliasOf: Record<string, string> = {};
  for (const [key, sub] of Object.entries(format)) {
    if (sub.default_key) defaultKey = key;
    if (sub.keyAlias && sub.alias) keyAliasOf[sub.keyAlias] = sub.alias;
  }
  const formatValue = (key: string, value: string): string => {
    const sub = format[key];
    if (sub?.format === 'disk-size') {
      const bytes = parseSize(value);
      return bytes === undefined ? value : formatSize(bytes);
    }
    return value;
  };
  const add = (key: string, isDefault: boolean): void => {
    if (done.has(key)) return;
    done.add(key);
    const value = data[key];
    if (value === undefined) return;
    const combine = keyAliasOf[key];
    if (combine !== undefined && data[combine] !== undefined) {
      parts.push(`${formatValue(key, value)}=${formatValue(combine, data[combine])}`);
      done.add(combine);
      return;
    }
    parts.push(isDefault ? formatValue(key, value) : `${key}=${formatValue(key, value)}`);
  };
  if (defaultKey !== undefined) add(defaultKey, true);
  const keys = Object.keys(data).sort();
  for (const key of keys) {
    const sub = format[key];
    if (sub && !sub.optional) add(key, false);
  }
  for (const key of keys) add(key, false);
  return parts.join(',');
}

const SIZE_UNITS: Record<string, number> = { K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** `parse_size`: `32G` → bytes (integer); undefined when it does not parse. */
export function parseSize(value: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([KMGT])?$/.exec(value);
  if (!m) return undefined;
  return Math.floor(Number(m[1]) * (m[2] ? (SIZE_UNITS[m[2]] as number) : 1));
}

/** `format_size`: the largest unit that divides the byte count exactly (`34359738368` → `32G`). */
export function formatSize(bytes: number): string {
  let size = Math.floor(bytes);
  for (const unit of ['', 'K', 'M', 'G']) {
    if (size % 1024 !== 0) return `${size}${unit}`;
    size /= 1024;
  }
  return `${size}T`;
}

/** `random_ether_addr` with the datacenter default prefix `BC:24:11` (Proxmox's OUI). */
export function randomMac(): string {
  const tail = [...randomBytes(3)].map((b) => b.toString(16).toUpperCase().padStart(2, '0'));
  return `BC:24:11:${tail.join(':')}`;
}

/** A volume id `storage:volname` split in two; undefined for paths and `none`. */
export function parseVolumeId(volid: string): { storage: string; volname: string } | undefined {
  const m = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$/i.exec(volid);
  return m ? { storage: m[1] as string, volname: m[2] as string } : undefined;
}

/** `storage:32` — Proxmox's syntax asking for a new volume of that many GiB. */
export function parseAllocation(volid: string): { storage: string; gib: number } | undefined {
  const m = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(?:\.\d+)?)$/i.exec(volid);
  return m ? { storage: m[1] as string, gib: Number(m[2]) } : undefined;
}

/** Container volume options: `rootfs` and `mpN`. */
export function isLxcMount(key: string): boolean {
  return key === 'rootfs' || /^mp\d+$/.test(key);
}

/** A cloud-init drive (`vm-<id>-cloudinit`). */
export function isCloudinit(drive: Record<string, string>): boolean {
  return isCloudinitVolume(drive.file ?? '');
}
