/**
 * Turns the values users write in YAML into the strings Proxmox takes on the wire and stores, so
 * the planner compares like with like:
 *
 * - booleans → `1` / `0`; numbers → decimal; strings as written.
 * - `tags` (string or list) → Proxmox's stored form: lower-cased, de-duplicated, sorted, `;`-joined.
 * - `sshkeys` (string or list, one key per item/line) → percent-encoded (the API's `urlencoded`
 *   format); a value already encoded (no spaces) is kept as written.
 * - `nameserver` / `searchdomain` lists → space-separated, as Proxmox takes them.
 * - `description` → trailing whitespace dropped (Proxmox drops it when it reads the comment lines).
 * - a mapping → a property string: `key=value` pairs joined with `,` in the order written, booleans
 *   1/0, except that the option's default key (`model` of `netN`, `file` of disks, `volume` of
 *   `rootfs`, `enabled` of `agent`) comes first without its name, as Proxmox writes it:
 *   `{ model: virtio, bridge: vmbr0, firewall: true }` → `virtio,bridge=vmbr0,firewall=1`.
 *   To keep a NIC's MAC, write Proxmox's own form `{ virtio: 'BC:24:11:…', bridge: vmbr0 }`.
 */
import { encodeSshKeys } from '../key-rules.js';
import { normaliseTags } from '../property-string.js';
import { defaultSubKey, type OptionSchema } from '../config-options.js';
import type { ConfigValue } from './schema.js';

/** A converted value, or why it could not be converted. */
type WireResult = { ok: true; value: string } | { ok: false; message: string };

/** Options that take a list in Proxmox, and how the list is joined on the wire. */
const LIST_OPTIONS: Record<string, (items: string[]) => string> = {
  tags: (items) => normaliseTags(items),
  sshkeys: (items) => encodeSshKeys(items.join('\n')),
  nameserver: (items) => items.join(' '),
  searchdomain: (items) => items.join(' '),
};

/** Options whose value may span lines. */
const MULTI_LINE = new Set(['description', 'sshkeys']);

/** Characters Proxmox's `urlencoded` format allows (`pve_verify_urlencoded`). */
const URLENCODED_RE = /^[-%a-zA-Z0-9_.!~*'()]*$/;

function scalarToWire(value: string | number | boolean): WireResult {
  if (typeof value === 'boolean') return { ok: true, value: value ? '1' : '0' };
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return { ok: false, message: 'must be a finite number' };
    return { ok: true, value: String(value) };
  }
  return { ok: true, value };
}

function mappingToWire(key: string, value: Record<string, string | number | boolean>, schema?: OptionSchema): WireResult {
  const entries = Object.entries(value);
  if (entries.length === 0) return { ok: false, message: 'an empty mapping is not a value; remove the key to leave it unset' };
  const head = schema ? defaultSubKey(schema) : undefined;
  const parts: string[] = [];
  for (const [subKey, subValue] of entries) {
    const converted = scalarToWire(subValue);
    if (!converted.ok) return { ok: false, message: `${key}.${subKey} ${converted.message}` };
    if (/[,\n]/.test(converted.value)) return { ok: false, message: `${key}.${subKey} must not contain a comma or newline` };
    if (subKey === head) parts.unshift(converted.value);
    else parts.push(`${subKey}=${converted.value}`);
  }
  return { ok: true, value: parts.join(',') };
}

/**
 * Converts one `config:` value to Proxmox's wire string. `schema` is the option's API schema when
 * known; it decides which sub-key of a mapping is written first without its name.
 */
export function toWireValue(key: string, value: ConfigValue, schema?: OptionSchema): WireResult {
  let result: WireResult;
  if (Array.isArray(value)) {
    const join = LIST_OPTIONS[key];
    if (!join) return { ok: false, message: 'a list is only accepted for tags, sshkeys, nameserver and searchdomain' };
    result = { ok: true, value: join(value.map(String)) };
  } else if (typeof value === 'object') {
    // Property strings have a format: a sub-key table (`netN`, disks) or a named one (`ipconfigN`, `cpu`).
    if (schema && (schema.type !== 'string' || schema.format === undefined)) {
      return { ok: false, message: 'a mapping is only accepted for property-string options (netN, disks, ipconfigN, agent, …)' };
    }
    result = mappingToWire(key, value, schema);
  } else {
    result = scalarToWire(value);
    if (result.ok && key === 'tags') result = { ok: true, value: normaliseTags(result.value) };
    if (result.ok && key === 'sshkeys' && !URLENCODED_RE.test(result.value)) result = { ok: true, value: encodeSshKeys(result.value) };
    if (result.ok && key === 'description') result = { ok: true, value: result.value.replace(/\s+$/, '') };
  }
  if (result.ok && !MULTI_LINE.has(key) && /[\r\n]/.test(result.value)) return { ok: false, message: 'must be a single line' };
  return result;
}
