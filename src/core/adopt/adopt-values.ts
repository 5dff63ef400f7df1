/**
 * A live config value, as Proxmox stores it, turned into what a person writes in a spec where the
 * spec already writes the key in a shape of its own (the shared forms: `../spec/live-forms.ts`): numbers
 * as YAML numbers, a list where the spec writes a list (`tags`, DNS
 * lists), a mapping where the spec writes a property string as one — each form the loader turns
 * back into the wire string the planner compares (`../spec/wire-values.ts`,
 * `../plan/values.ts`). The result is checked that way: a form that would not compare equal to the
 * live value falls back to the wire string itself.
 */
import { configOption, defaultSubKey, subOptions } from '../config-options.js';
import type { GuestType } from '../guest-flavours.js';
import { normaliseTags, parsePropertyString } from '../property-string.js';
import { DNS_LIST_KEYS, isBooleanWire, specTags } from '../spec/live-forms.js';
import { sameValue } from '../plan/values.js';
import { toWireValue } from '../spec/wire-values.js';
import type { SpecValue } from './yaml-edit.js';

/** How the spec writes the key today. */
export type WrittenShape = 'map' | 'seq' | 'bool' | 'scalar' | 'none';

const NUMERIC = /^-?\d+(\.\d+)?$/;

function isNumericType(type: string | undefined): boolean {
  return type === 'integer' || type === 'number';
}

/** A sub-value of a property string: a number where its sub-option is numeric or boolean. */
function subValue(schemaType: string | undefined, value: string): string | number {
  return (isNumericType(schemaType) || schemaType === 'boolean') && NUMERIC.test(value) ? Number(value) : value;
}

/** The value before checking: the form the spec's shape and the option's schema suggest. */
function preferredForm(type: GuestType, key: string, live: string, shape: WrittenShape, ownerTag: string): SpecValue | undefined {
  const schema = configOption(type, key);
  if (key === 'tags') {
    const tags = specTags(live, ownerTag);
    if (tags.length === 0) return undefined;
    return shape === 'scalar' ? tags.join(';') : tags;
  }
  if (DNS_LIST_KEYS.has(key) && shape === 'seq') return live.split(/\s+/).filter(Boolean);
  if (shape === 'map') {
    const subs = subOptions(schema);
    const head = defaultSubKey(schema);
    const ps = parsePropertyString(live);
    if (subs && (ps.head === undefined || head !== undefined)) {
      const mapping: Record<string, string | number> = {};
      if (ps.head !== undefined && head !== undefined) mapping[head] = subValue(subs[head]?.type, ps.head);
      for (const [k, v] of ps.pairs) mapping[k] = subValue(subs[k]?.type, v);
      return mapping;
    }
  }
  if (isBooleanWire(type, key, live)) return shape === 'bool' ? live === '1' : Number(live);
  // A number as a YAML number, whatever the option's type (`memory` is a property string whose
  // head is a number): the check below falls back to the text where the number would differ.
  if (NUMERIC.test(live) && Number.isFinite(Number(live))) return Number(live);
  return live;
}

/** True when `value`, loaded from a spec, compares equal to `live` as the planner compares. */
function comparesEqual(type: GuestType, key: string, value: SpecValue, live: string, ownerTag: string): boolean {
  if (value === null) return false;
  const wire = toWireValue(key, value as Parameters<typeof toWireValue>[1], configOption(type, key));
  if (!wire.ok) return false;
  if (key === 'tags') return normaliseTags([...wire.value.split(';'), ownerTag]) === normaliseTags(live);
  return sameValue(type, key, wire.value, live);
}

/**
 * The spec value that makes the planner see `live` for `key`: `{ value }`, or `{ remove: true }`
 * when the spec should not set the key at all (tags that are only the owner tag). Undefined when
 * no written form compares equal (the caller reports the key as not adopted).
 */
export function specValueOf(
  type: GuestType,
  key: string,
  live: string,
  shape: WrittenShape,
  ownerTag: string,
): { value: SpecValue } | { remove: true } | undefined {
  const preferred = preferredForm(type, key, live, shape, ownerTag);
  if (preferred === undefined) return { remove: true };
  if (comparesEqual(type, key, preferred, live, ownerTag)) return { value: preferred };
  if (comparesEqual(type, key, live, live, ownerTag)) return { value: live };
  return undefined;
}
