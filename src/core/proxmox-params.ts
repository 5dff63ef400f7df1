/**
 * Parameter validation exactly as Proxmox's `PVE::JSONSchema` does it, against the extracted API
 * schema (`proxmox-api-schema.json`). Pure: no I/O. The simulator answers 400s with these texts
 * and the spec loader reuses them so a spec error reads like the error Proxmox would give.
 *
 * Order of checks per value (`check_prop`): type, then format, pattern, maxLength, minLength,
 * maximum, minimum, enum — the first failure wins (so `vmid=99` reports the format, not the
 * minimum). Property-string formats (`net0`, `scsi0`, `memory`, …) are parsed like
 * `parse_property_string` and their sub-key errors nested as `format error\n<param>.<sub>: …\n`.
 */
import { poolIdProblem } from './kinds/pool/pool-id.js';
import type { GuestType } from './guest-flavours.js';
import apiSchema from './proxmox-api-schema.json' with { type: 'json' };
import { DNS_NAME_RE, TAG_RE } from './property-string.js';

/** One parameter (or property-string sub-key) of the Proxmox API schema. */
export interface ParamSchema {
  type?: string;
  format?: string | Record<string, ParamSchema>;
  enum?: string[];
  minimum?: number | string;
  maximum?: number | string;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
  optional?: number;
  requires?: string;
  default_key?: number;
  alias?: string;
  keyAlias?: string;
}

/** One method of the extracted schema (`"PUT /nodes/{node}/qemu/{vmid}/config"`). */
interface EndpointSchema {
  parameters: { additionalProperties?: number; properties?: Record<string, ParamSchema> };
  returns?: { type?: string };
  protected?: number;
}

/** Thrown when asked to validate against a method the extracted schema does not contain. */
export class UnknownEndpointError extends Error {
  override readonly name = 'UnknownEndpointError';
  constructor(readonly endpoint: string) {
    super(`no schema for endpoint '${endpoint}'`);
  }
}

const ENDPOINTS = apiSchema as unknown as Record<string, EndpointSchema>;

/** Texts of `PVE::JSONSchema`, kept in one place so callers can compare against them. */
const PARAM_MESSAGES = {
  missing: 'property is missing and it is not optional',
  unknown: 'property is not defined in schema and the schema does not allow additional properties',
} as const;

/**
 * How many instances an indexed option (`net[n]`) has. The schema dump only says `[n]`; the
 * limits are the constants of qemu-server / pve-container (`MAX_NETS`, `MAX_LXC_NETWORKS`, …).
 */
export const INDEX_LIMITS: Record<GuestType, Record<string, number>> = {
  qemu: {
    net: 32,
    scsi: 31,
    virtio: 16,
    sata: 6,
    ide: 4,
    unused: 256,
    ipconfig: 32,
    hostpci: 16,
    usb: 14,
    serial: 4,
    parallel: 3,
    numa: 8,
    virtiofs: 10,
  },
  lxc: { net: 32, mp: 256, unused: 256, dev: 256 },
};

/** Schema of an endpoint, or undefined when the extract does not hold it. */
export function endpointSchema(endpoint: string): EndpointSchema | undefined {
  return ENDPOINTS[endpoint];
}

const INDEXED_RE = /^([a-z][a-z-]*?)(\d+)$/;

/**
 * The schema of one parameter of an endpoint; indexed names (`net3`) resolve through `net[n]`
 * within Proxmox's per-type limits (`net32` does not exist).
 */
export function paramSchema(endpoint: string, name: string): ParamSchema | undefined {
  const props = ENDPOINTS[endpoint]?.parameters.properties;
  if (!props) return undefined;
  const direct = Object.hasOwn(props, name) ? props[name] : undefined;
  if (direct) return direct;
  const m = INDEXED_RE.exec(name);
  if (!m) return undefined;
  const base = m[1] as string;
  const index = Number(m[2]);
  if (String(index) !== m[2]) return undefined; // `net01` is not `net1`
  const limits = INDEX_LIMITS[endpoint.includes('/lxc') ? 'lxc' : 'qemu'];
  const limit = limits[base];
  if (limit === undefined || index >= limit) return undefined;
  return props[`${base}[n]`];
}

const requiredByEndpoint = new Map<string, readonly string[]>();

/**
 * The parameters an endpoint requires, in schema order: looked up once per endpoint instead of
 * walking its hundreds of options for every call (10,000 guests validated walked 2.5 million).
 */
function requiredParams(endpoint: string, schema: EndpointSchema): readonly string[] {
  let required = requiredByEndpoint.get(endpoint);
  if (!required) {
    required = Object.entries(schema.parameters.properties ?? {})
      .filter(([name, prop]) => !name.endsWith('[n]') && !prop.optional && !prop.alias)
      .map(([name]) => name);
    requiredByEndpoint.set(endpoint, required);
  }
  return required;
}

/**
 * Validates request parameters the way Proxmox's API does before running a handler.
 *
 * `params` holds values as received: strings from forms and query strings; JSON types from a
 * JSON body (`json: true`), where `true`/`false` count as booleans and arrays for `-list`
 * formats are joined with `,`. `ignore` names parameters to skip entirely (e.g. path params
 * the caller checks elsewhere). Returns param → Proxmox's exact error text; `{}` when valid.
 */
export function validateParams(
  endpoint: string,
  params: Record<string, unknown>,
  options: { json?: boolean; ignore?: string[] } = {},
): Record<string, string> {
  const schema = ENDPOINTS[endpoint];
  if (!schema) throw new UnknownEndpointError(endpoint);
  const ignore = new Set(options.ignore ?? []);
  const errors: Record<string, string> = {};

  for (const name of requiredParams(endpoint, schema)) {
    if (ignore.has(name)) continue;
    if (params[name] === undefined || params[name] === null) addError(errors, name, PARAM_MESSAGES.missing);
  }

  for (const [name, raw] of Object.entries(params)) {
    if (ignore.has(name) || raw === undefined || raw === null) continue;
    const prop = paramSchema(endpoint, name);
    if (!prop) {
      addError(errors, name, PARAM_MESSAGES.unknown);
      continue;
    }
    const value = normaliseValue(raw, prop, options.json === true);
    if (typeof value !== 'string') {
      addError(errors, name, `type check ('${prop.type ?? 'string'}') failed - got ${value.ref}`);
      continue;
    }
    checkProp(value, prop, name, errors);
    if (prop.requires && !ignore.has(prop.requires) && (params[prop.requires] === undefined || params[prop.requires] === null)) {
      addError(errors, prop.requires, `missing property required by '${name}'`);
    }
  }
  return errors;
}

/**
 * Turns a received value into the string Perl would see. Returns `{ref}` for values Perl would
 * hold as a reference (arrays, objects, JSON booleans on non-boolean params) — type errors.
 */
function normaliseValue(raw: unknown, prop: ParamSchema, json: boolean): string | { ref: string } {
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'number') return Number.isFinite(raw) ? String(raw) : { ref: 'SCALAR' };
  if (typeof raw === 'boolean') {
    if (json && prop.type === 'boolean') return raw ? '1' : '0';
    // Perl keeps a JSON boolean as a blessed reference; only boolean params accept it.
    return json ? { ref: 'JSON::PP::Boolean' } : String(raw);
  }
  if (Array.isArray(raw)) {
    // RESTHandler joins arrays given for list formats (`delete`, `tags`, …) in JSON bodies.
    const listFormat = typeof prop.format === 'string' && prop.format.endsWith('-list');
    if (json && listFormat && raw.every((v) => typeof v === 'string' || typeof v === 'number')) {
      return raw.map(String).join(',');
    }
    return { ref: 'ARRAY' };
  }
  return { ref: 'HASH' };
}

/** `add_error`: a second error on the same key is joined with the literal two characters `\n`. */
function addError(errors: Record<string, string>, path: string, message: string): void {
  const prev = errors[path];
  errors[path] = prev === undefined ? message : `${prev}\\n${message}`;
}

const INTEGER_RE = /^[+-]?\d+$/;
const NUMBER_RE = /^[+-]?(\d+\.\d*|\d*\.\d+|\d+)([eE][+-]?\d+)?$/;

/** `check_type`; false (and an error) when the value is not of the declared type. */
function checkType(value: string, type: string | undefined, path: string, errors: Record<string, string>): boolean {
  if (type === 'boolean' && value !== '0' && value !== '1') {
    addError(errors, path, `type check ('boolean') failed - got '${value}'`);
    return false;
  }
  if (type === 'integer' && !INTEGER_RE.test(value)) {
    addError(errors, path, `type check ('integer') failed - got '${value}'`);
    return false;
  }
  if (type === 'number' && !NUMBER_RE.test(value)) {
    addError(errors, path, `type check ('number') failed - got '${value}'`);
    return false;
  }
  return true;
}

/** `check_prop` for a defined scalar value. */
function checkProp(value: string, prop: ParamSchema, path: string, errors: Record<string, string>): void {
  if (!checkType(value, prop.type, path, errors)) return;
  if (prop.format !== undefined) {
    const failure = checkFormat(prop.format, value, path);
    if (failure !== undefined) {
      addError(errors, path, `invalid format - ${failure}`);
      return;
    }
  }
  if (prop.pattern !== undefined && !compilePattern(prop.pattern).test(value)) {
    addError(errors, path, 'value does not match the regex pattern');
    return;
  }
  if (prop.maxLength !== undefined && value.length > prop.maxLength) {
    addError(errors, path, `value may only be ${prop.maxLength} characters long`);
    return;
  }
  if (prop.minLength !== undefined && value.length < prop.minLength) {
    addError(errors, path, `value must be at least ${prop.minLength} characters long`);
    return;
  }
  if (NUMBER_RE.test(value)) {
    const n = Number(value);
    if (prop.maximum !== undefined && n > Number(prop.maximum)) {
      addError(errors, path, `value must have a maximum value of ${prop.maximum}`);
      return;
    }
    if (prop.minimum !== undefined && n < Number(prop.minimum)) {
      addError(errors, path, `value must have a minimum value of ${prop.minimum}`);
      return;
    }
  }
  if (prop.enum && !prop.enum.includes(value)) {
    addError(errors, path, `value '${value}' does not have a value in the enumeration '${prop.enum.join(', ')}'`);
  }
}

const patternCache = new Map<string, RegExp>();

/** Perl `qr//` stringification `(?^:…)` becomes a plain group; patterns are anchored like `m/^$p$/`. */
function compilePattern(pattern: string): RegExp {
  let re = patternCache.get(pattern);
  if (!re) {
    re = new RegExp(`^(?:${pattern.replaceAll('(?^:', '(?:')})$`);
    patternCache.set(pattern, re);
  }
  return re;
}

/** Runs a format check; returns the validator's die text (ending in `\n`) or undefined. */
function checkFormat(format: string | Record<string, ParamSchema>, value: string, path: string): string | undefined {
  if (typeof format === 'string') {
    const hashFormat = NAMED_HASH_FORMATS[format];
    if (hashFormat) return checkPropertyString(hashFormat, value, path);
    return NAMED_FORMATS[format]?.(value);
  }
  return checkPropertyString(format, value, path);
}

/** Proxmox's `parse_boolean`, used for boolean sub-keys of property strings. */
function parseBoolean(value: string): string | undefined {
  if (/^(1|on|yes|true)$/i.test(value)) return '1';
  if (/^(0|off|no|false)$/i.test(value)) return '0';
  return undefined;
}

/**
 * Parses a property string against a hash format (`parse_property_string`) and checks every
 * sub-key (`check_object`). Returns the exception text Proxmox stringifies, or undefined.
 */
function checkPropertyString(format: Record<string, ParamSchema>, value: string, path: string): string | undefined {
  const parsed = parsePropertyStringWithSchema(format, value);
  if (typeof parsed === 'string') return parsed;
  const errors: Record<string, string> = {};
  for (const [key, sub] of Object.entries(format)) {
    const v = parsed[key];
    const subPath = `${path}.${key}`;
    if (v === undefined) {
      if (!sub.optional && !sub.alias) addError(errors, subPath, PARAM_MESSAGES.missing);
      continue;
    }
    checkProp(v, sub, subPath, errors);
  }
  const keys = Object.keys(errors).sort();
  if (keys.length === 0) return undefined;
  return `format error\n${keys.map((k) => `${k}: ${errors[k]}\n`).join('')}`;
}

/**
 * Splits a property string into sub-key → value following a hash format's aliases and default
 * key, like `PVE::JSONSchema::parse_property_string`. Returns the die text on a syntax error.
 */
export function parsePropertyStringWithSchema(format: Record<string, ParamSchema>, value: string): Record<string, string> | string {
  const res: Record<string, string> = {};
  let defaultKey: string | undefined;
  for (const part of value.split(',')) {
    if (/^\s*$/.test(part)) continue;
    const kv = /^([^=]+)=(.+)$/s.exec(part);
    if (kv) {
      let k = kv[1] as string;
      let v = kv[2] as string;
      if (res[k] !== undefined) return `duplicate key in comma-separated list property: ${k}\n`;
      let sub = Object.hasOwn(format, k) ? format[k] : undefined;
      if (sub?.alias) {
        if (sub.keyAlias) {
          if (res[sub.keyAlias] !== undefined) return `key alias '${sub.keyAlias}' is already defined\n`;
          res[sub.keyAlias] = k;
        }
        k = sub.alias;
        sub = format[k];
      }
      if (!sub) return `invalid key in comma-separated list property: ${k}\n`;
      if (sub.type === 'boolean') v = parseBoolean(v) ?? v;
      res[k] = v;
    } else if (!part.includes('=')) {
      if (defaultKey !== undefined) return `duplicate key in comma-separated list property: ${defaultKey}\n`;
      defaultKey = Object.keys(format).find((k) => format[k]?.default_key);
      if (defaultKey === undefined) return 'value without key, but schema does not define a default key\n';
      if (res[defaultKey] !== undefined) return `duplicate key in comma-separated list property: ${defaultKey}\n`;
      res[defaultKey] = part;
    } else {
      return 'missing key in comma-separated list property\n';
    }
  }
  return res;
}

/** `split_list`: `,` `;` whitespace or NUL separated. */
export function splitList(value: string): string[] {
  return value.split(/[,;\s\0]+/).filter((item) => item !== '');
}

const CONFIGID_RE = /^[a-z][a-z0-9_-]+$/i;
const IPV4_OCTET = '(?:25[0-5]|(?:2[0-4]|1[0-9]|[1-9])?[0-9])';
const IPV4_RE = new RegExp(`^${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}$`);
const MAC_RE = /^(?:[a-f0-9]{2}:){5}[a-f0-9]{2}$/i;
const STORAGE_ID_RE = /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i;
const VOLUME_ID_RE = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$/i;
const SIZE_RE = /^(\d+(\.\d+)?)([KMGT])?$/;
const NODE_RE = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)$/;

function isIpv6(value: string): boolean {
  // Node's own parser would need node:net (I/O module); a structural check is enough here.
  if (!/^[0-9a-f:.]+$/i.test(value) || !value.includes(':')) return false;
  const parts = value.split('::');
  if (parts.length > 2) return false;
  const groups = parts.flatMap((p) => (p === '' ? [] : p.split(':')));
  const last = groups.at(-1);
  const hasV4 = last?.includes('.');
  if (hasV4 && last !== undefined && !IPV4_RE.test(last)) return false;
  const hexGroups = hasV4 ? groups.slice(0, -1) : groups;
  if (!hexGroups.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return false;
  const count = hexGroups.length + (hasV4 ? 2 : 0);
  return parts.length === 2 ? count < 8 : count === 8;
}

function isCidr(value: string, family: 4 | 6 | 0): boolean {
  const m = /^(.+)\/(\d{1,3})$/.exec(value);
  if (!m) return false;
  const addr = m[1] as string;
  const bits = Number(m[2]);
  if ((family === 4 || family === 0) && IPV4_RE.test(addr)) return bits <= 32;
  if ((family === 6 || family === 0) && isIpv6(addr)) return bits <= 128;
  return false;
}

type Verifier = (value: string) => string | undefined;

const STORAGE_CONTENT = new Set(['images', 'rootdir', 'vztmpl', 'iso', 'backup', 'snippets', 'import', 'none']);

/**
 * Named string formats and their `die` texts from pve-common / qemu-server / pve-container.
 * Formats not listed are accepted as-is (the simulator is lenient where it cannot be exact).
 */
const NAMED_FORMATS: Record<string, Verifier> = {
  'pve-vmid': (v) => (/^[1-9][0-9]{2,8}$/.test(v) ? undefined : 'value does not look like a valid VM ID\n'),
  'pve-node': (v) => (NODE_RE.test(v) ? undefined : 'value does not look like a valid node name\n'),
  // pve-ha-manager `HA/Tools.pm` `pve_verify_ha_resource_or_vm_id`.
  'pve-ha-resource-or-vm-id': (v) => (/^([a-z]+:\S+|\d+)$/.test(v) ? undefined : 'value does not look like a valid ha resource id\n'),
  'pve-configid': (v) => (CONFIGID_RE.test(v) ? undefined : `invalid configuration ID '${v}'\n`),
  'pve-configid-list': (v) => {
    for (const id of splitList(v)) if (!CONFIGID_RE.test(id)) return `invalid configuration ID '${id}'\n`;
    return undefined;
  },
  'dns-name': (v) => (DNS_NAME_RE.test(v) ? undefined : 'value does not look like a valid DNS name\n'),
  'dns-name-list': (v) => {
    for (const name of splitList(v)) if (!DNS_NAME_RE.test(name)) return 'value does not look like a valid DNS name\n';
    return undefined;
  },
  'pve-tag-list': (v) => {
    for (const tag of splitList(v)) if (!TAG_RE.test(tag)) return 'invalid characters in tag\n';
    return undefined;
  },
  'pve-storage-id': (v) => (STORAGE_ID_RE.test(v) ? undefined : `storage ID '${v}' contains illegal characters\n`),
  'pve-bridge-id': (v) => (/^[-_.\w\d]+$/.test(v) ? undefined : `invalid bridge ID '${v}'\n`),
  // pve-access-control `verify_poolname`: up to three `/`-separated levels of `[A-Za-z0-9.-_]`.
  'pve-poolid': (v) => {
    const problem = poolIdProblem(v);
    return problem === undefined ? undefined : `${problem}\n`;
  },
  'pve-volume-id': (v) => (VOLUME_ID_RE.test(v) ? undefined : `unable to parse volume ID '${v}'\n`),
  'pve-volume-id-or-qm-path': (v) =>
    v === 'none' || v === 'cdrom' || v.startsWith('/') || VOLUME_ID_RE.test(v) ? undefined : `unable to parse volume ID '${v}'\n`,
  'pve-volume-id-or-absolute-path': (v) => (v.startsWith('/') || VOLUME_ID_RE.test(v) ? undefined : `unable to parse volume ID '${v}'\n`),
  'pve-lxc-mp-string': (v) =>
    /\/\.\.?\//.test(v) || /\/\.\.?$/.test(v) || /^\.\.?\//.test(v) ? `${v} contains illegal character sequences\n` : undefined,
  'mac-addr': (v) =>
    MAC_RE.test(v) && (parseInt(v.slice(1, 2), 16) & 1) === 0 ? undefined : 'value does not look like a valid unicast MAC address\n',
  ipv4: (v) => (IPV4_RE.test(v) ? undefined : 'value does not look like a valid IPv4 address\n'),
  ipv6: (v) => (isIpv6(v) ? undefined : 'value does not look like a valid IPv6 address\n'),
  ip: (v) => (IPV4_RE.test(v) || isIpv6(v) ? undefined : 'value does not look like a valid IP address\n'),
  CIDR: (v) => (isCidr(v, 0) ? undefined : 'value does not look like a valid CIDR network\n'),
  'pve-ipv4-config': (v) =>
    v === 'dhcp' || v === 'manual' || isCidr(v, 4) ? undefined : 'value does not look like a valid ipv4 network configuration\n',
  'pve-ipv6-config': (v) =>
    v === 'dhcp' || v === 'auto' || v === 'manual' || isCidr(v, 6)
      ? undefined
      : 'value does not look like a valid ipv6 network configuration\n',
  'disk-size': (v) => (SIZE_RE.test(v) ? undefined : `value does not look like a valid disk size: ${v}\n`),
  'pve-hotplug-features': (v) => {
    if (/^[01]$/.test(v)) return undefined;
    for (const f of v.split(',')) {
      if (!/^(network|disk|cpu|memory|usb|cloudinit)$/.test(f)) return `invalid hotplug feature '${f}'\n`;
    }
    return undefined;
  },
  // pve-common `pve_verify_urlencoded` (`sshkeys`, a disk's `serial`): no line feed gets through.
  urlencoded: (v) => (/^[-%a-zA-Z0-9_.!~*'()]*$/.test(v) ? undefined : `invalid urlencoded string: ${v}\n`),
  // pve-storage `verify_content` (`valid_content_types('dir')` plus `import`).
  'pve-storage-content': (v) => (STORAGE_CONTENT.has(v) ? undefined : `invalid content type '${v}'\n`),
  'pve-storage-content-list': (v) => {
    for (const ct of splitList(v)) if (!STORAGE_CONTENT.has(ct)) return `invalid content type '${ct}'\n`;
    return undefined;
  },
  // pve-common `verify_task_status_type`.
  'pve-task-status-type-list': (v) => {
    for (const status of splitList(v)) if (!/^(ok|error|warning|unknown)$/i.test(status)) return `invalid status '${status}'\n`;
    return undefined;
  },
  'pve-startup-order': (v) => (/^(?:(?:order=\d+|up=\d+|down=\d+|\d+)(?:,|$))+$/.test(v) ? undefined : 'unable to parse startup options\n'),
};

/** Named formats that are themselves property strings in Proxmox but appear by name in the dump. */
const NAMED_HASH_FORMATS: Record<string, Record<string, ParamSchema>> = {
  'pve-qm-ipconfig': {
    ip: { type: 'string', format: 'pve-ipv4-config', optional: 1 },
    gw: { type: 'string', format: 'ipv4', optional: 1 },
    ip6: { type: 'string', format: 'pve-ipv6-config', optional: 1 },
    gw6: { type: 'string', format: 'ipv6', optional: 1 },
  },
};
