/**
 * Guest config files as pmxcfs holds them (`/etc/pve/nodes/<node>/qemu-server/<vmid>.conf`):
 * raw text <-> parsed sections, serialised byte-exactly like `QemuServer::write_vm_config` /
 * `LXC::Config::write_pct_config` (docs/proxmox-api.md#the-digest), so the digest — SHA1 hex of the whole
 * text — is what a real cluster would report for the same content.
 */
import { createHash } from 'node:crypto';
import type { GuestType } from '../../core/guest-flavours.js';

/** One section of a config file: main, `[PENDING]`, `[special:…]` or a snapshot. */
export interface ConfigSection {
  /**
   * `key: value` lines. `description` (the decoded `#` comment lines) is held here like any
   * option because the API treats it as one; in `[PENDING]`, `delete` is one of them too.
   */
  values: Map<string, string>;
  /** Raw `lxc.*` lines of a container, in file order. */
  lxc: [string, string][];
}

/** A parsed config file. */
export interface ParsedConfig {
  main: ConfigSection;
  pending: ConfigSection;
  special: Map<string, ConfigSection>;
  snapshots: Map<string, ConfigSection>;
}

/** A fresh empty section. */
export function emptySection(): ConfigSection {
  return { values: new Map(), lxc: [] };
}

/** Whether a `[PENDING]` section would be written (`scalar(keys %{$conf->{pending}})`). */
function hasPending(config: ParsedConfig): boolean {
  return config.pending.values.size > 0 || config.pending.lxc.length > 0;
}

/** SHA1 hex of the raw text: Proxmox's config `digest`. */
export function configDigest(raw: string): string {
  return createHash('sha1').update(raw, 'utf8').digest('hex');
}

/**
 * `PVE::Tools::encode_text`: control characters, non-ASCII bytes (as UTF-8), `:` and `%` are
 * percent-encoded with upper-case hex.
 */
function encodeText(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out +=
      byte < 0x20 || byte > 0x7e || byte === 0x3a || byte === 0x25
        ? `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
        : String.fromCharCode(byte);
  }
  return out;
}

/** `decode_text`: the inverse of {@link encodeText}; malformed escapes are kept literally. */
function decodeText(text: string): string {
  if (!text.includes('%')) return text;
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === '%' && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(text[i] as string, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Where qemu-server's and pve-container's config files differ. */
interface ConfigFormat {
  /** qemu-server's pending section header; pve-container names it `[pve:pending]`. */
  pendingHeader: string;
  pendingRe: RegExp;
  /** pve-container keeps raw `lxc.*` keys, in their order. */
  rawLxcKeys: boolean;
  /** The description a run of `#` lines reads as (undefined: none stored). */
  readDescription(text: string): string | undefined;
  /** The text written back as `#` lines. */
  writeDescription(text: string): string;
  /** qemu-server marks an empty pending description with a lone `#` so the pending change survives. */
  marksEmptyPendingDescription: boolean;
}

const CONFIG_FORMATS: Record<GuestType, ConfigFormat> = {
  qemu: {
    pendingHeader: '[PENDING]',
    pendingRe: /^\[PENDING\]\s*$/i,
    rawLxcKeys: false,
    // qemu-server strips trailing whitespace (`$descr =~ s/\s+$//`).
    readDescription: (text) => text.replace(/\s+$/, ''),
    writeDescription: (text) => text,
    marksEmptyPendingDescription: true,
  },
  lxc: {
    pendingHeader: '[pve:pending]',
    pendingRe: /^\[pve:pending\]\s*$/i,
    rawLxcKeys: true,
    // pve-container keeps the newline each `#` line ends with, and stores nothing for an empty description.
    readDescription: (text) => (text === '' ? undefined : text),
    writeDescription: (text) => text.replace(/\n$/, ''),
    marksEmptyPendingDescription: false,
  },
};
const SECTION_SPECIAL_RE = /^\[special:([a-z]+)\]\s*$/i;
const SECTION_SNAPSHOT_RE = /^\[([a-z][a-z0-9_-]+)\]\s*$/i;
const LXC_RAW_RE = /^(lxc\.[a-z0-9_.-]+)(?::|\s*=)\s*(.*?)\s*$/;
const KEY_VALUE_RE = /^([a-z][a-z_-]*\d*):\s*(.+?)\s*$/;
const DESCRIPTION_KEY_RE = /^description:\s*(.*\S)\s*$/;

/** Parses a config file like `parse_vm_config` / `parse_pct_config`; unparsable lines are dropped. */
export function parseConfig(raw: string, type: GuestType): ParsedConfig {
  const format = CONFIG_FORMATS[type];
  const config: ParsedConfig = {
    main: emptySection(),
    pending: emptySection(),
    special: new Map(),
    snapshots: new Map(),
  };
  let section = config.main;
  let descr: string | undefined;
  const finishDescription = (): void => {
    const description = descr === undefined ? undefined : format.readDescription(descr);
    if (description !== undefined) section.values.set('description', description);
    descr = undefined;
  };
  for (const line of raw.split('\n')) {
    if (/^\s*$/.test(line)) continue;
    let m: RegExpExecArray | null;
    if (format.pendingRe.test(line)) {
      finishDescription();
      section = config.pending;
      continue;
    }
    if ((m = SECTION_SPECIAL_RE.exec(line))) {
      finishDescription();
      section = emptySection();
      config.special.set((m[1] as string).toLowerCase(), section);
      continue;
    }
    if ((m = SECTION_SNAPSHOT_RE.exec(line))) {
      finishDescription();
      section = emptySection();
      config.snapshots.set(m[1] as string, section);
      continue;
    }
    if (line.startsWith('#')) {
      descr = `${(descr ?? '') + decodeText(line.slice(1))}\n`;
      continue;
    }
    if ((m = DESCRIPTION_KEY_RE.exec(line))) {
      descr = (descr ?? '') + decodeText(m[1] as string);
      continue;
    }
    if (format.rawLxcKeys && (m = LXC_RAW_RE.exec(line))) {
      section.lxc.push([m[1] as string, m[2] as string]);
      continue;
    }
    if ((m = KEY_VALUE_RE.exec(line))) section.values.set(m[1] as string, m[2] as string);
  }
  finishDescription();
  return config;
}

function serializeSection(section: ConfigSection, type: GuestType, pending = false): string {
  let raw = '';
  const description = section.values.get('description');
  if (description !== undefined) {
    // Perl truthiness: '' and '0' write no comment lines. qemu-server marks an empty pending
    // description with a lone `#` so the pending change survives; elsewhere nothing is written.
    if (description !== '' && description !== '0') {
      const text = CONFIG_FORMATS[type].writeDescription(description);
      for (const line of text.split('\n')) raw += `#${encodeText(line)}\n`;
    } else if (CONFIG_FORMATS[type].marksEmptyPendingDescription && pending) {
      raw += '#\n';
    }
  }
  const keys = [...section.values.keys()].sort();
  for (const key of keys) {
    if (key !== 'description') raw += `${key}: ${section.values.get(key) as string}\n`;
  }
  for (const [key, value] of section.lxc) raw += `${key}: ${value}\n`;
  return raw;
}

/** Serialises like `write_vm_config`: main, `[PENDING]`, `[special:…]`, then snapshots, sorted. */
export function serializeConfig(config: ParsedConfig, type: GuestType): string {
  let raw = serializeSection(config.main, type);
  if (hasPending(config)) raw += `\n${CONFIG_FORMATS[type].pendingHeader}\n${serializeSection(config.pending, type, true)}`;
  for (const name of [...config.special.keys()].sort()) {
    raw += `\n[special:${name}]\n${serializeSection(config.special.get(name) as ConfigSection, type)}`;
  }
  for (const name of [...config.snapshots.keys()].sort()) {
    raw += `\n[${name}]\n${serializeSection(config.snapshots.get(name) as ConfigSection, type)}`;
  }
  return raw;
}

/** `parse_pending_delete`: `a,!b` → key → force flag. */
export function parsePendingDelete(value: string | undefined): Map<string, boolean> {
  const result = new Map<string, boolean>();
  if (!value) return result;
  for (const item of value.split(/[,;\s]+/)) {
    if (item === '') continue;
    if (item.startsWith('!')) result.set(item.slice(1), true);
    else result.set(item, false);
  }
  return result;
}

/** `print_pending_delete`: sorted, `!` marks a forced delete; undefined when empty. */
export function printPendingDelete(map: Map<string, boolean>): string | undefined {
  if (map.size === 0) return undefined;
  return [...map.keys()]
    .sort()
    .map((key) => (map.get(key) ? `!${key}` : key))
    .join(',');
}
