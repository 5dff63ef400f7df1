/**
 * Which config keys a spec may set, per guest type, from Proxmox's own API schema
 * (`PUT /nodes/{node}/{qemu|lxc}/{vmid}/config`) plus what the product decides about them.
 */
import { configEndpoint, isServerManaged, optionNames, type OptionSchema } from '../config-options.js';
import { hostAccessOf } from '../key-rules.js';
import type { GuestType } from '../guest-flavours.js';
import { endpointSchema, INDEX_LIMITS } from '../proxmox-params.js';
import { NearestNames } from './nearest-name.js';
import { ContainerCreateOptions, VmCreateOptions } from './schema.js';

const endpointProperties: Partial<Record<GuestType, Record<string, OptionSchema>>> = {};

/** The config endpoint's parameters for a guest type (looked up once: every key of every spec asks). */
function configEndpointProperties(type: GuestType): Record<string, OptionSchema> {
  let props = endpointProperties[type];
  if (props === undefined) {
    props = endpointSchema(configEndpoint(type))?.parameters.properties ?? {};
    endpointProperties[type] = props;
  }
  return props;
}

/** Parameters of the config call that steer the call itself rather than name a guest option. */
const API_PARAMETERS = new Set(['delete', 'revert', 'skiplock', 'force', 'background_delay', 'import-working-storage']);

/** Document-level fields that users sometimes put under `config:` by mistake. */
const TOP_LEVEL_FIELDS = new Set(['vmid', 'node']);

/** Create-only options per guest type (the `create:` schemas): they go under `create:`, not `config:`. */
const CREATE_OPTIONS: Record<GuestType, ReadonlySet<string>> = {
  qemu: new Set(Object.keys(VmCreateOptions.shape)),
  lxc: new Set(Object.keys(ContainerCreateOptions.shape)),
};

/** Keys Proxmox knows but this product refuses, with the reason shown to the user. */
const REFUSED: Partial<Record<GuestType, Record<string, string>>> = {
  qemu: {
    cipassword:
      'cipassword cannot be managed from git: Proxmox never returns it (reads show **********) and a password does not belong in a repository; use sshkeys',
  },
};

/**
 * Most "did you mean" searches for one document: a document with more unknown keys than this is
 * not a few typos, and a bound here keeps the search off the cost of a hostile repository.
 */
export const MAX_SUGGESTIONS_PER_DOCUMENT = 10;

/** Hints for keys that are not config options but look like they belong somewhere. */
const HINTS: Record<string, string> = {
  start: 'use power: running',
  password: 'a password does not belong in a repository; use create.ssh-public-keys',
  archive: 'restoring from a backup is not supported',
};

/** The verdict on one config key for one guest type. */
export type KeyVerdict =
  | { kind: 'option'; schema: OptionSchema }
  | { kind: 'unknown'; hint?: string }
  | { kind: 'index-out-of-range'; prefix: string; count: number }
  | { kind: 'server-managed' }
  | { kind: 'api-parameter' }
  | { kind: 'top-level' }
  | { kind: 'create-only' }
  | { kind: 'refused'; reason: string };

const INDEXED_KEY = /^([a-z][a-z_-]*?)(0|[1-9][0-9]*)$/;

/** The verdict on most keys of a hostile repository: one object, not one a key. */
const UNKNOWN: KeyVerdict = Object.freeze({ kind: 'unknown' });

const verdictCache: Record<GuestType, Map<string, KeyVerdict>> = { qemu: new Map(), lxc: new Map() };
/** Far more than the keys of real specs (a few hundred options, a few thousand with indices). */
const MAX_CACHED_VERDICTS = 20_000;

/** Classifies a config key: a settable Proxmox option, or why it is not one. */
export function classifyConfigKey(type: GuestType, key: string): KeyVerdict {
  const cache = verdictCache[type];
  let verdict = cache.get(key);
  if (!verdict) {
    verdict = classifyUncached(type, key);
    // Keys are the repository's: a cache of every one ever seen would grow with each push of new ones.
    if (cache.size < MAX_CACHED_VERDICTS) cache.set(key, verdict);
  }
  return verdict;
}

function classifyUncached(type: GuestType, key: string): KeyVerdict {
  if (isServerManaged(key)) return { kind: 'server-managed' };
  if (API_PARAMETERS.has(key)) return { kind: 'api-parameter' };
  if (TOP_LEVEL_FIELDS.has(key)) return { kind: 'top-level' };
  // Own properties only: the keys are the repository's, and `constructor` or `toString` would
  // otherwise find Object.prototype's functions and be shown as their source.
  const refusedKeys = REFUSED[type];
  const refused = refusedKeys && Object.hasOwn(refusedKeys, key) ? refusedKeys[key] : undefined;
  if (refused) return { kind: 'refused', reason: refused };
  // Raw `lxc.*` keys reach the host and are not part of Proxmox's API at all: only root writes
  // them, into the config file (key-rules.ts).
  if (type === 'lxc' && key.startsWith('lxc.')) {
    const finding = hostAccessOf(type, key, '');
    return { kind: 'refused', reason: `${key}: ${finding?.reason ?? 'a raw LXC key'}; Proxmox's API cannot set raw LXC keys` };
  }
  const props = configEndpointProperties(type);
  const direct = Object.hasOwn(props, key) ? props[key] : undefined;
  if (direct && !key.includes('[')) return { kind: 'option', schema: direct };
  const indexed = INDEXED_KEY.exec(key);
  if (indexed) {
    const [, prefix = '', digits = ''] = indexed;
    const schema = Object.hasOwn(props, `${prefix}[n]`) ? props[`${prefix}[n]`] : undefined;
    if (schema) {
      const count = INDEX_LIMITS[type][prefix] ?? 0;
      return Number(digits) < count ? { kind: 'option', schema } : { kind: 'index-out-of-range', prefix, count };
    }
  }
  if (CREATE_OPTIONS[type].has(key)) return { kind: 'create-only' };
  const hint = Object.hasOwn(HINTS, key) ? HINTS[key] : undefined;
  // No "did you mean" here: callers ask `suggestKey` for the few unknown keys of a document they show one for.
  return hint ? { kind: 'unknown', hint } : UNKNOWN;
}

/** True when `key` names an option Proxmox keeps in this guest type's config (settable or not). */
export function isRealConfigKey(type: GuestType, key: string): boolean {
  const verdict = classifyConfigKey(type, key);
  return verdict.kind === 'option' || verdict.kind === 'server-managed' || verdict.kind === 'refused';
}

/** A type's suggestible option names, indexed once: plain names, and the prefixes of indexed ones (`net` of `net[n]`). */
interface SuggestionIndex {
  plain: NearestNames;
  /** Position in the option list of each plain name and of each indexed prefix, for its order of preference. */
  plainOrder: number[];
  indexed: NearestNames;
  indexedOrder: number[];
}

const suggestionIndexes: Partial<Record<GuestType, SuggestionIndex>> = {};

function suggestionIndex(type: GuestType): SuggestionIndex {
  let index = suggestionIndexes[type];
  if (!index) {
    const names = optionNames(type).filter((name) => !API_PARAMETERS.has(name) && !TOP_LEVEL_FIELDS.has(name) && !isServerManaged(name));
    const plain: string[] = [];
    const plainOrder: number[] = [];
    const prefixes: string[] = [];
    const indexedOrder: number[] = [];
    names.forEach((name, position) => {
      if (name.endsWith('[n]')) {
        prefixes.push(name.slice(0, -3));
        indexedOrder.push(position);
      } else {
        plain.push(name);
        plainOrder.push(position);
      }
    });
    index = { plain: new NearestNames(plain), plainOrder, indexed: new NearestNames(prefixes), indexedOrder };
    suggestionIndexes[type] = index;
  }
  return index;
}

/**
 * Closest known key within edit distance 2, for "did you mean": of equally close ones, the first
 * in Proxmox's option list. Indexed options are compared by prefix, so `nett0` suggests `net0`,
 * keeping the user's index. Its cost is bounded whatever the key (`nearest-name.ts`).
 */
export function suggestKey(type: GuestType, key: string): string | undefined {
  const index = suggestionIndex(type);
  const indexed = INDEXED_KEY.exec(key);
  const plain = index.plain.find(key);
  const prefixed = indexed ? index.indexed.find(indexed[1] ?? '') : undefined;
  const plainRank = plain && { distance: plain.distance, position: index.plainOrder[plain.index] ?? 0 };
  const prefixedRank = prefixed && { distance: prefixed.distance, position: index.indexedOrder[prefixed.index] ?? 0 };
  const usePrefix =
    prefixedRank !== undefined &&
    (plainRank === undefined ||
      prefixedRank.distance < plainRank.distance ||
      (prefixedRank.distance === plainRank.distance && prefixedRank.position < plainRank.position));
  if (usePrefix && prefixed) return `${index.indexed.names[prefixed.index]}${indexed?.[2] ?? ''}`;
  return plain ? index.plain.names[plain.index] : undefined;
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
