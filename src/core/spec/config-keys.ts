/**
 * Which config keys a spec may set, per guest type, from Proxmox's own API schema
 * (`PUT /nodes/{node}/{qemu|lxc}/{vmid}/config`) plus what the product decides about them.
 */
import { configEndpoint, defaultSubKey, isServerManaged, optionNames, type OptionSchema } from '../config-options.js';
import { hostAccessOf } from '../key-rules.js';
import type { GuestType } from '../model.js';
import { endpointSchema, INDEX_LIMITS } from '../proxmox-params.js';
import { ContainerCreateOptions, VmCreateOptions } from './schema.js';

export { defaultSubKey, type OptionSchema };

/** The config endpoint's parameters for a guest type. */
export function configEndpointProperties(type: GuestType): Record<string, OptionSchema> {
  return endpointSchema(configEndpoint(type))?.parameters.properties ?? {};
}

/** Parameters of the config call that steer the call itself rather than name a guest option. */
const API_PARAMETERS = new Set(['delete', 'revert', 'skiplock', 'force', 'background_delay', 'import-working-storage']);

/** Document-level fields that users sometimes put under `config:` by mistake. */
const TOP_LEVEL_FIELDS = new Set(['vmid', 'node']);

/** Create-only options per guest type (the `create:` schemas): they go under `create:`, not `config:`. */
export const CREATE_OPTIONS: Record<GuestType, readonly string[]> = {
  qemu: Object.keys(VmCreateOptions.shape),
  lxc: Object.keys(ContainerCreateOptions.shape),
};

/** Keys Proxmox knows but this product refuses, with the reason shown to the user. */
const REFUSED: Partial<Record<GuestType, Record<string, string>>> = {
  qemu: {
    cipassword:
      'cipassword cannot be managed from git: Proxmox never returns it (reads show **********) and a password does not belong in a repository; use sshkeys',
  },
};

/** Hints for keys that are not config options but look like they belong somewhere. */
const HINTS: Record<string, string> = {
  start: 'use power: running',
  password: 'a password does not belong in a repository; use create.ssh-public-keys',
  archive: 'restoring from a backup is not supported',
};

/** The verdict on one config key for one guest type. */
export type KeyVerdict =
  | { kind: 'option'; schema: OptionSchema }
  | { kind: 'unknown'; suggestion?: string; hint?: string }
  | { kind: 'index-out-of-range'; prefix: string; count: number }
  | { kind: 'server-managed' }
  | { kind: 'api-parameter' }
  | { kind: 'top-level' }
  | { kind: 'create-only' }
  | { kind: 'refused'; reason: string };

const INDEXED_KEY = /^([a-z][a-z_-]*?)(0|[1-9][0-9]*)$/;

const verdictCache: Record<GuestType, Map<string, KeyVerdict>> = { qemu: new Map(), lxc: new Map() };

/** Classifies a config key: a settable Proxmox option, or why it is not one. */
export function classifyConfigKey(type: GuestType, key: string): KeyVerdict {
  const cache = verdictCache[type];
  let verdict = cache.get(key);
  if (!verdict) {
    verdict = classifyUncached(type, key);
    cache.set(key, verdict);
  }
  return verdict;
}

function classifyUncached(type: GuestType, key: string): KeyVerdict {
  if (isServerManaged(key)) return { kind: 'server-managed' };
  if (API_PARAMETERS.has(key)) return { kind: 'api-parameter' };
  if (TOP_LEVEL_FIELDS.has(key)) return { kind: 'top-level' };
  const refused = REFUSED[type]?.[key];
  if (refused) return { kind: 'refused', reason: refused };
  // Raw `lxc.*` keys reach the host and are not part of Proxmox's API at all: only root writes
  // them, into the config file (key-rules.ts).
  if (type === 'lxc' && key.startsWith('lxc.')) {
    const finding = hostAccessOf(type, key, '');
    return { kind: 'refused', reason: `${key}: ${finding?.reason ?? 'a raw LXC key'}; Proxmox's API cannot set raw LXC keys` };
  }
  const props = configEndpointProperties(type);
  const direct = props[key];
  if (direct && !key.includes('[')) return { kind: 'option', schema: direct };
  const indexed = INDEXED_KEY.exec(key);
  if (indexed) {
    const [, prefix = '', digits = ''] = indexed;
    const schema = props[`${prefix}[n]`];
    if (schema) {
      const count = INDEX_LIMITS[type][prefix] ?? 0;
      return Number(digits) < count ? { kind: 'option', schema } : { kind: 'index-out-of-range', prefix, count };
    }
  }
  if (CREATE_OPTIONS[type].includes(key)) return { kind: 'create-only' };
  const hint = HINTS[key];
  const suggestion = suggestKey(type, key);
  return { kind: 'unknown', ...(suggestion ? { suggestion } : {}), ...(hint ? { hint } : {}) };
}

/** True when `key` names an option Proxmox keeps in this guest type's config (settable or not). */
export function isRealConfigKey(type: GuestType, key: string): boolean {
  const verdict = classifyConfigKey(type, key);
  return verdict.kind === 'option' || verdict.kind === 'server-managed' || verdict.kind === 'refused';
}

/** Closest known key within edit distance 2, for "did you mean". */
export function suggestKey(type: GuestType, key: string): string | undefined {
  const indexed = INDEXED_KEY.exec(key);
  const names = optionNames(type).filter((name) => !API_PARAMETERS.has(name) && !TOP_LEVEL_FIELDS.has(name) && !isServerManaged(name));
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of names) {
    // Indexed options are compared by prefix so `nett0` suggests `net0`, keeping the user's index.
    let distance: number;
    let suggestion: string;
    if (name.endsWith('[n]')) {
      if (!indexed) continue;
      const prefix = name.slice(0, -3);
      distance = editDistance(indexed[1] ?? '', prefix);
      suggestion = `${prefix}${indexed[2] ?? ''}`;
    } else {
      distance = editDistance(key, name);
      suggestion = name;
    }
    if (distance > 0 && distance < bestDistance) {
      bestDistance = distance;
      best = suggestion;
    }
  }
  return best;
}

/**
 * Edit distance counting an adjacent transposition as one edit (optimal string alignment), since
 * swapped letters (`nte0`) are the commonest typo. The strings are short option names.
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row[j] = j;
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const above = rows[i - 1] ?? [];
      let best = Math.min((above[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (above[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, (rows[i - 2]?.[j - 2] ?? 0) + 1);
      row[j] = best;
    }
    rows.push(row);
  }
  return rows[a.length]?.[b.length] ?? 0;
}
