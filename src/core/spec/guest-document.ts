/**
 * The shape check of a VM or Container document for the common case: a document the schema
 * accepts is checked here by hand and built exactly as the schema builds it (defaults filled in,
 * lists and mappings copied). zod's unions build an issue object with a message for every option a
 * value does not match — a number under `config` fails `string` first — and on 10,000 guests that
 * was a fifth of the time of loading and most of its garbage.
 *
 * It never accepts what the schema refuses: anything it is not sure of (an unknown key, a wrong
 * type, a value out of range, an unusual object) returns `undefined`, and the schema in
 * `schema.ts` then checks the document and reports its errors. `guest-document.test.ts` compares
 * both on generated documents.
 */
import { type ContainerDocument, VMID_MAX, VMID_MIN, type VmDocument } from './schema.js';
import { keyedRecord } from './keyed-record.js';

const GUEST_KEYS: ReadonlySet<string> = new Set([
  'kind',
  'name',
  'cluster',
  'node',
  'vmid',
  'power',
  'state',
  'adopt',
  'ignore',
  'config',
  'create',
]);
const POWER: ReadonlySet<unknown> = new Set(['running', 'stopped', 'ignore']);
const STATE: ReadonlySet<unknown> = new Set(['present', 'absent']);

type Scalar = string | number | boolean;
type ConfigValue = VmDocument['config'][string];

const isNonEmpty = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isScalar = (value: unknown): value is Scalar => typeof value === 'string' || typeof value === 'boolean' || isNumber(value);

/** A mapping as YAML gives it: a plain object, none of whose keys the schema would treat specially. */
function isMapping(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype)
    return false;
  return !Object.hasOwn(value, '__proto__');
}

/** A copy of one `config` value, or undefined when it is not one the schema accepts. */
function configValue(value: unknown): ConfigValue | undefined {
  if (isScalar(value)) return value;
  if (Array.isArray(value)) {
    for (const item of value) if (typeof item !== 'string' && !isNumber(item)) return undefined;
    return [...(value as (string | number)[])];
  }
  if (!isMapping(value)) return undefined;
  const copy: Record<string, Scalar> = {};
  for (const key in value) {
    const sub = value[key];
    if (!isScalar(sub)) return undefined;
    copy[key] = sub;
  }
  return copy;
}

function config(value: unknown): Record<string, ConfigValue> | undefined {
  if (value === undefined) return {};
  if (!isMapping(value)) return undefined;
  const copy = keyedRecord<ConfigValue>();
  for (const key in value) {
    const converted = configValue(value[key]);
    if (converted === undefined) return undefined;
    copy[key] = converted;
  }
  return copy;
}

function create(value: unknown, kind: 'VM' | 'Container'): Record<string, string | string[]> | undefined {
  if (value === undefined) return {};
  if (!isMapping(value)) return undefined;
  const copy: Record<string, string | string[]> = {};
  for (const key in value) {
    const option = value[key];
    if (key === 'pool' || key === 'storage' || (kind === 'Container' && key === 'ostemplate')) {
      if (!isNonEmpty(option)) return undefined;
      copy[key] = option;
    } else if (kind === 'Container' && key === 'ssh-public-keys') {
      if (typeof option === 'string') copy[key] = option;
      else if (Array.isArray(option) && option.every((item) => typeof item === 'string')) copy[key] = [...(option as string[])];
      else return undefined;
    } else {
      return undefined;
    }
  }
  return copy;
}

/**
 * `raw` as the schema of `kind` parses it, when it is a document the schema accepts and this
 * check is sure of; otherwise undefined, and the schema decides.
 */
export function quickGuestDocument(raw: Record<string, unknown>, kind: 'VM' | 'Container'): VmDocument | ContainerDocument | undefined {
  if (!isMapping(raw) || raw.kind !== kind) return undefined;
  for (const key in raw) if (!GUEST_KEYS.has(key)) return undefined;
  const { name, cluster, node, vmid, power, state, adopt, ignore } = raw;
  if (!isNonEmpty(name) || !isNonEmpty(cluster) || !isNonEmpty(node)) return undefined;
  if (vmid !== undefined && !(Number.isSafeInteger(vmid) && (vmid as number) >= VMID_MIN && (vmid as number) <= VMID_MAX)) return undefined;
  if (power !== undefined && !POWER.has(power)) return undefined;
  if (state !== undefined && !STATE.has(state)) return undefined;
  if (adopt !== undefined && typeof adopt !== 'boolean') return undefined;
  if (ignore !== undefined && !(Array.isArray(ignore) && ignore.every(isNonEmpty))) return undefined;
  const configCopy = config(raw.config);
  const createCopy = create(raw.create, kind);
  if (configCopy === undefined || createCopy === undefined) return undefined;
  return {
    kind,
    name,
    cluster,
    node,
    ...(vmid !== undefined ? { vmid: vmid as number } : {}),
    power: (power ?? 'ignore') as VmDocument['power'],
    state: (state ?? 'present') as VmDocument['state'],
    adopt: adopt ?? false,
    ignore: ignore ? [...(ignore as string[])] : [],
    config: configCopy,
    create: createCopy,
  } as VmDocument | ContainerDocument;
}
