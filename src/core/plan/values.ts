/**
 * Comparing config values as Proxmox stores them: property strings as key=value sets, what
 * Proxmox fills in (a NIC's MAC, a disk's volume and size) not counted as drift, disks and NICs
 * parsed and formatted for their own operations (docs/design.md, "Value comparison").
 */
import { configOption, defaultSubKey, subOptions, type OptionSchema } from '../config-options.js';
import { flavourOf } from '../guest-flavours.js';
import type { GuestType } from '../guest-flavours.js';
import { hotplugFeatures, isCloudinitVolume } from '../hotplug.js';
import { normaliseTags, parsePropertyString, type PropertyString } from '../property-string.js';
import { splitList } from '../proxmox-params.js';

/**
 * Values are compared as Proxmox stores them (docs/design.md#value-comparison): tags normalised, booleans 0/1, numbers
 * numerically, property strings as key=value sets. Disks and NICs have their own parsers because
 * Proxmox fills in parts of them (volume names, sizes, MACs) that are not drift.
 */

import { isDiskKey, isNicKey } from '../key-rules.js';

const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on']);
const FALSE_WORDS = new Set(['0', 'false', 'no', 'off']);

function normaliseBoolean(value: string): string {
  const lower = value.toLowerCase();
  if (TRUE_WORDS.has(lower)) return '1';
  if (FALSE_WORDS.has(lower)) return '0';
  return value;
}

function normaliseScalar(schema: OptionSchema | undefined, value: string): string {
  switch (schema?.type) {
    case 'boolean':
      return normaliseBoolean(value);
    case 'integer':
    case 'number': {
      const n = Number(value);
      return Number.isFinite(n) && value.trim() !== '' ? String(n) : value;
    }
    default:
      return value;
  }
}

/** A property string as a map: the key-less head is stored under the schema's default key. */
function propertyMap(schema: OptionSchema | undefined, value: string): Map<string, string> {
  const subs = subOptions(schema) ?? {};
  const ps = parsePropertyString(value);
  const map = new Map<string, string>();
  const head = defaultSubKey(schema);
  if (ps.head !== undefined) map.set(head ?? '', normaliseScalar(subs[head ?? ''], ps.head));
  for (const [k, v] of ps.pairs) map.set(k, normaliseScalar(subs[k], v));
  return map;
}

function mapsEqual(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/** Size strings (`32G`, `512M`, `1T`, bare numbers = bytes) to bytes. */
function sizeToBytes(size: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT]?)B?$/i.exec(size.trim());
  if (!m) return undefined;
  const unit = (m[2] ?? '').toUpperCase();
  const exp = unit === '' ? 0 : 'KMGT'.indexOf(unit) + 1;
  return Math.round(Number(m[1]) * 1024 ** exp);
}

/** Bytes as Proxmox writes sizes (`32G`, `512M`): the largest unit that divides evenly. */
export function formatSize(bytes: number): string {
  const units = ['T', 'G', 'M', 'K'];
  for (let i = 0; i < units.length; i++) {
    const factor = 1024 ** (4 - i);
    if (bytes % factor === 0 && bytes >= factor) return `${bytes / factor}${units[i]}`;
  }
  return String(bytes);
}

/** A disk or mount point value, split into what Proxmox manages and what the spec owns. */
interface DiskValue {
  /** Storage ID (`local-lvm`), when the head names one. */
  storage?: string;
  /** Volume within the storage (`vm-100-disk-0`, `iso/x.iso`), when the head names one. */
  volume?: string;
  /** `STORAGE:SIZE` allocation syntax: a new volume of this many GiB. */
  allocateGiB?: number;
  /** `STORAGE:cloudinit`: a cloud-init drive to allocate. */
  cloudinit: boolean;
  /** `none` (an empty CD-ROM drive) or a path without storage. */
  head?: string;
  /** Size in bytes: the `size=` option, or the allocation. */
  sizeBytes?: number;
  /** Every option other than the head and `size`. */
  options: Map<string, string>;
  /** A CD-ROM or cloud-init drive rather than a disk with data of its own. */
  medium: boolean;
}

/** Parses a disk value: `local-lvm:32,ssd=1`, `local-lvm:vm-100-disk-0,size=32G`, `none,media=cdrom`. */
export function parseDisk(type: GuestType, key: string, value: string): DiskValue {
  const schema = configOption(type, key);
  const map = propertyMap(schema, value);
  const headKey = defaultSubKey(schema) ?? '';
  const head = map.get(headKey);
  map.delete(headKey);
  const sizeOption = map.get('size');
  map.delete('size');
  const disk: DiskValue = { cloudinit: false, options: map, medium: false };
  if (head !== undefined) {
    const colon = head.indexOf(':');
    if (colon > 0 && !head.startsWith('/')) {
      disk.storage = head.slice(0, colon);
      const rest = head.slice(colon + 1);
      if (/^\d+(\.\d+)?$/.test(rest)) disk.allocateGiB = Number(rest);
      else if (rest === 'cloudinit') disk.cloudinit = true;
      else disk.volume = rest;
    } else {
      disk.head = head;
    }
  }
  if (sizeOption !== undefined) disk.sizeBytes = sizeToBytes(sizeOption);
  else if (disk.allocateGiB !== undefined) disk.sizeBytes = Math.round(disk.allocateGiB * 1024 ** 3);
  disk.medium =
    disk.cloudinit ||
    map.get('media') === 'cdrom' ||
    disk.head === 'none' ||
    disk.head === 'cdrom' ||
    (disk.volume !== undefined && isCloudinitVolume(disk.volume));
  return disk;
}

/** Options Proxmox adds to a disk on its own, which are not drift when the spec leaves them out. */
function serverFilledDiskOption(desired: DiskValue, option: string): boolean {
  // A cloud-init drive is always stored as a CD-ROM.
  return desired.cloudinit && option === 'media';
}

/**
 * Options that only steer an allocation (`format=qcow2`, `import-from=…`): Proxmox uses them to
 * create the volume and does not store them, so their absence afterwards is not drift.
 */
const ALLOCATION_ONLY_OPTIONS = new Set(['format', 'import-from']);

/** Disks whose size Proxmox chooses (the EFI vars and TPM state volumes), whatever the spec asks. */
export function sizeIsServerChosen(key: string): boolean {
  return key === 'efidisk0' || key === 'tpmstate0';
}

/** Differences between a desired and an actual disk, each handled by its own operation. */
interface DiskDiff {
  storageChanged: boolean;
  /** Desired size when larger than actual (bytes). */
  grow?: number;
  /** Desired size when smaller than actual (bytes): never carried out. */
  shrink?: number;
  /** Options (other than size and the volume) differ: written through the config. */
  optionsChanged: boolean;
  /** The desired value names a different volume or medium: a replacement, not an edit. */
  mediumChanged: boolean;
}

/** Compares a desired disk with the one on the guest; `compareSize` false for server-sized disks. */
export function diffDisk(desired: DiskValue, actual: DiskValue, compareSize = true): DiskDiff {
  const storageChanged =
    desired.storage !== undefined && actual.storage !== undefined && desired.storage !== actual.storage && !desired.volume;
  const mediumChanged =
    (desired.volume !== undefined && (desired.volume !== actual.volume || desired.storage !== actual.storage)) ||
    (desired.head !== undefined && desired.head !== actual.head) ||
    (desired.head === undefined && actual.head !== undefined) ||
    (desired.cloudinit && !(actual.volume !== undefined && isCloudinitVolume(actual.volume)));
  let optionsChanged = false;
  for (const [k, v] of desired.options) {
    if (ALLOCATION_ONLY_OPTIONS.has(k) && !actual.options.has(k)) continue;
    if (actual.options.get(k) !== v) optionsChanged = true;
  }
  for (const k of actual.options.keys()) {
    if (!desired.options.has(k) && !serverFilledDiskOption(desired, k)) optionsChanged = true;
  }
  const diff: DiskDiff = { storageChanged, optionsChanged, mediumChanged };
  // Sizes matter only for real volumes: CD-ROMs and cloud-init drives have server-chosen sizes.
  const sized = compareSize && !desired.medium && !actual.medium && desired.head === undefined && !mediumChanged;
  if (sized && desired.sizeBytes !== undefined && actual.sizeBytes !== undefined) {
    if (desired.sizeBytes > actual.sizeBytes) diff.grow = desired.sizeBytes;
    if (desired.sizeBytes < actual.sizeBytes) diff.shrink = desired.sizeBytes;
  }
  return diff;
}

/** Writes a disk back as a property string: the actual volume, the desired options, the size. */
export function formatDiskUpdate(type: GuestType, key: string, desired: DiskValue, actualRaw: string): string {
  const schema = configOption(type, key);
  const actualMap = propertyMap(schema, actualRaw);
  const headKey = defaultSubKey(schema) ?? '';
  const parts: string[] = [];
  const head = actualMap.get(headKey);
  if (head !== undefined) parts.push(head);
  for (const [k, v] of desired.options) if (!ALLOCATION_ONLY_OPTIONS.has(k)) parts.push(`${k}=${v}`);
  const size = actualMap.get('size');
  if (size !== undefined) parts.push(`size=${size}`);
  return parts.join(',');
}

const NIC_MAC_KEYS = new Set(['macaddr', 'hwaddr']);

/** A NIC as a map of its settings with the model and MAC made explicit (`virtio=AA:..` → both). */
function parseNic(type: GuestType, key: string, value: string): { mac?: string; settings: Map<string, string> } {
  const schema = configOption(type, key);
  const subs = subOptions(schema) ?? {};
  const ps: PropertyString = parsePropertyString(value);
  const settings = new Map<string, string>();
  let mac: string | undefined;
  const take = (k: string, v: string): void => {
    const sub = subs[k];
    if (sub?.keyAlias === 'model') {
      // `virtio=BC:24:11:…` is shorthand for `model=virtio,macaddr=BC:24:11:…`.
      settings.set('model', k);
      if (v !== '') mac = v.toUpperCase();
      return;
    }
    if (NIC_MAC_KEYS.has(k)) {
      mac = v.toUpperCase();
      return;
    }
    settings.set(k, normaliseScalar(sub, v));
  };
  if (ps.head !== undefined) {
    const headKey = defaultSubKey(schema);
    if (headKey && subs[ps.head]?.keyAlias !== 'model') settings.set(headKey, ps.head);
    else take(ps.head, '');
  }
  for (const [k, v] of ps.pairs) take(k, v);
  return { mac, settings };
}

/** True when a desired NIC matches the actual one; a MAC the spec leaves out is Proxmox's to choose. */
export function sameNic(type: GuestType, key: string, desired: string, actual: string): boolean {
  const d = parseNic(type, key, desired);
  const a = parseNic(type, key, actual);
  if (d.mac !== undefined && d.mac !== a.mac) return false;
  // Proxmox writes some sub-keys into every NIC that does not name them (a container NIC's `type=veth`).
  for (const [k, v] of Object.entries(flavourOf(type).nic.filledIn)) {
    if (!d.settings.has(k) && a.settings.get(k) === v) a.settings.delete(k);
  }
  return mapsEqual(d.settings, a.settings);
}

/** The NIC value to write for a change: the desired settings with the existing MAC kept. */
export function formatNicUpdate(type: GuestType, key: string, desired: string, actual: string): string {
  const d = parseNic(type, key, desired);
  const a = parseNic(type, key, actual);
  const mac = d.mac ?? a.mac;
  const nic = flavourOf(type).nic;
  const parts: string[] = [];
  const settings = new Map(d.settings);
  // The lead sub-key first: a VM's model (which carries the MAC, `virtio=BC:24:11:…`), a
  // container's interface name.
  const lead = settings.get(nic.leadKey);
  settings.delete(nic.leadKey);
  const macInLead = nic.macInModel && lead !== undefined;
  if (lead !== undefined) parts.push(nic.macInModel ? (mac ? `${lead}=${mac}` : lead) : `${nic.leadKey}=${lead}`);
  for (const [k, v] of settings) parts.push(`${k}=${v}`);
  if (mac && !macInLead) parts.push(`${nic.macKey}=${mac}`);
  return parts.join(',');
}

function decodeSshKeys(value: string): string {
  let decoded = value;
  try {
    decoded = decodeURIComponent(value);
  } catch {
    // Not URL-encoded: compare as written.
  }
  return decoded.replace(/\r\n/g, '\n').trim();
}

/**
 * True when the desired value for `key` is what the guest has. Both sides are wire strings;
 * `actual` comes from the cluster.
 */
export function sameValue(type: GuestType, key: string, desired: string, actual: string): boolean {
  if (desired === actual) return true;
  if (key === 'tags') return normaliseTags(desired) === normaliseTags(actual);
  if (key === 'sshkeys') return decodeSshKeys(desired) === decodeSshKeys(actual);
  if (key === 'description') return desired.trimEnd() === actual.trimEnd();
  // pve-container stores a container's DNS lists space-separated (`verify_nameserver_list`).
  if (flavourOf(type).spaceSeparatedKeys.has(key)) return splitList(desired).join(' ') === splitList(actual).join(' ');
  if (isNicKey(key)) return sameNic(type, key, desired, actual);
  if (isDiskKey(type, key)) {
    const diff = diffDisk(parseDisk(type, key, desired), parseDisk(type, key, actual), !sizeIsServerChosen(key));
    return !diff.storageChanged && !diff.optionsChanged && !diff.mediumChanged && !diff.grow && !diff.shrink;
  }
  const schema = configOption(type, key);
  if (subOptions(schema)) return mapsEqual(propertyMap(schema, desired), propertyMap(schema, actual));
  if (key === 'hotplug') return sameSet(hotplugFeatures(desired), hotplugFeatures(actual));
  // Options whose format the schema names rather than spells out (`startup`, `ipconfigN`) are
  // still key=value lists: a GUI edit that only reorders them is no change.
  if (KEY_VALUE_LIST.test(desired) && KEY_VALUE_LIST.test(actual)) return mapsEqual(keyValueMap(desired), keyValueMap(actual));
  return normaliseScalar(schema, desired) === normaliseScalar(schema, actual);
}

const KEY_VALUE_LIST = /^[a-z0-9_-]+=[^,=]*(,[a-z0-9_-]+=[^,=]*)*$/i;

function keyValueMap(value: string): Map<string, string> {
  return new Map(parsePropertyString(value).pairs);
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}
