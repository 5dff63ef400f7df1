/**
 * A live config value, as Proxmox stores it, in the form a person writes it in a spec: the inverse
 * of `wire-values.ts`, and the one home of that conversion. `pve-gitops import` writes a whole
 * document with `documentValue` (`../import/guest-document.ts`); adopting drift
 * (`../adopt/adopt-values.ts`) builds on the same pieces and then follows how the spec already
 * writes the key. Each form turns back, through `toWireValue`, into the wire string it came from.
 */
import { configOption, defaultSubKey, type OptionSchema, subOptions } from '../config-options.js';
import type { GuestType } from '../guest-flavours.js';
import { isDiskKey, isNicKey } from '../key-rules.js';
import { normaliseTags } from '../property-string.js';

/** A `config:` value as the document holds it: what YAML writes, converted back by `wire-values.ts`. */
export type DocumentValue = string | number | boolean | string[];

/** Options Proxmox and the spec both take as a list (space-separated on the wire). */
export const DNS_LIST_KEYS: ReadonlySet<string> = new Set(['nameserver', 'searchdomain']);

const NUMBER_TEXT = /^-?(0|[1-9]\d*)(\.\d+)?$/;

/** The tags a spec writes: Proxmox's stored form, without the owner tag (the planner adds it, `desiredConfig`). */
export function specTags(live: string, ownerTag: string): string[] {
  return normaliseTags(live)
    .split(';')
    .filter((tag) => tag !== '' && tag !== ownerTag.toLowerCase());
}

/** Whether the option is a boolean and the value one of the `0`/`1` Proxmox stores for it. */
export function isBooleanWire(type: GuestType, key: string, wire: string): boolean {
  return configOption(type, key)?.type === 'boolean' && (wire === '0' || wire === '1');
}

/** A wire value in the form a person writes it, which `toWireValue` turns back into the same wire string. */
export function documentValue(type: GuestType, key: string, wire: string): DocumentValue {
  if (key === 'sshkeys') {
    let plain = wire;
    try {
      plain = decodeURIComponent(wire);
    } catch {
      // Not encoded: kept as read.
    }
    return plain
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== '');
  }
  if (DNS_LIST_KEYS.has(key) && /\s/.test(wire.trim())) return wire.trim().split(/[\s,;]+/);
  if (isDiskKey(type, key) || isNicKey(key)) return wire;
  if (isBooleanWire(type, key, wire)) return wire === '1';
  const schema = configOption(type, key);
  // A property string whose lead value is a number (`memory` is `[current=]<integer>`) is written as the number too.
  const numeric = (s: OptionSchema | undefined): boolean => s?.type === 'integer' || s?.type === 'number';
  const lead = subOptions(schema)?.[defaultSubKey(schema) ?? ''];
  if ((numeric(schema) || numeric(lead)) && NUMBER_TEXT.test(wire) && String(Number(wire)) === wire) {
    return Number(wire);
  }
  return wire;
}
