/**
 * A guest's firewall as the kind compares it: the sections a spec manages (options, rules,
 * IPsets, aliases), each normalised the way Proxmox stores it so a spec and a live read compare
 * equal when Proxmox would write the same file (docs/proxmox-behaviour.md, FW-…): IPset entries
 * one per address and sorted, `/32` and `/128` dropped from single addresses, aliases keyed by
 * their lower-case name, a macro's name compared without regard to case. Pure.
 */
import type { FirewallAlias, FirewallIpEntry, FirewallIpset, FirewallOptions, FirewallRule } from './port.js';
import { RULE_FIELDS } from './port.js';

/** The sections of a guest's firewall, in the order they apply. */
export const SECTIONS = ['options', 'aliases', 'ipsets', 'rules'] as const;
export type Section = (typeof SECTIONS)[number];

/** The managed sections of one guest's firewall (a section left out is not managed). */
export interface FirewallState {
  options?: FirewallOptions;
  aliases?: Record<string, FirewallAlias>;
  ipsets?: Record<string, FirewallIpset>;
  rules?: FirewallRule[];
}

/** The guest-level options, in the order the plan shows them (`$vm_option_properties`). */
export const OPTION_NAMES = [
  'enable',
  'policy_in',
  'policy_out',
  'macfilter',
  'ipfilter',
  'dhcp',
  'ndp',
  'radv',
  'log_level_in',
  'log_level_out',
] as const;

/** `parse_ip_or_cidr`: a single address keeps no `/32` (IPv4) or `/128` (IPv6). */
export function normaliseCidr(cidr: string): string {
  return cidr.includes(':') ? cidr.replace(/\/128$/, '') : cidr.replace(/\/32$/, '');
}

/** The entries as the file keeps them: sorted by address (`$format_ipsets`). */
export function sortedEntries(entries: readonly FirewallIpEntry[]): FirewallIpEntry[] {
  return [...entries].sort((a, b) => (a.cidr < b.cidr ? -1 : a.cidr > b.cidr ? 1 : 0));
}

/** One rule's comparable form. */
export function ruleIdentity(rule: FirewallRule): string {
  const parts: string[] = [rule.type, rule.action, rule.enable ? '1' : '0'];
  for (const field of RULE_FIELDS) {
    const value = rule[field];
    parts.push(value === undefined ? '' : field === 'macro' ? value.toLowerCase() : value);
  }
  return JSON.stringify(parts);
}

export function sameRule(a: FirewallRule, b: FirewallRule): boolean {
  return ruleIdentity(a) === ruleIdentity(b);
}

/** A rule as a line of the `.fw` file, the way a reviewer who knows Proxmox reads it. */
export function ruleText(rule: FirewallRule): string {
  let text = `${rule.enable ? '' : '|'}${rule.type.toUpperCase()} ${rule.macro ? `${rule.macro}(${rule.action})` : rule.action}`;
  if (rule.iface) text += ` -i ${rule.iface}`;
  if (rule.source) text += ` -source ${rule.source}`;
  if (rule.dest) text += ` -dest ${rule.dest}`;
  if (rule.proto) text += ` -p ${rule.proto}`;
  if (rule.dport) text += ` -dport ${rule.dport}`;
  if (rule.sport) text += ` -sport ${rule.sport}`;
  if (rule.log) text += ` -log ${rule.log}`;
  if (rule['icmp-type']) text += ` -icmp-type ${rule['icmp-type']}`;
  if (rule.comment) text += ` # ${rule.comment}`;
  return text;
}

/** An option's value for the plan (`1`/`0` as Proxmox shows booleans). */
export function optionText(value: boolean | string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'boolean' ? (value ? '1' : '0') : value;
}

export function entryText(entry: FirewallIpEntry): string {
  return `${entry.nomatch ? '!' : ''}${entry.cidr}${entry.comment ? ` # ${entry.comment}` : ''}`;
}

export function ipsetText(set: FirewallIpset): string {
  const entries = set.entries.map(entryText).join(', ');
  return `${set.comment ? `(${set.comment}) ` : ''}[${entries}]`;
}

export function aliasText(alias: FirewallAlias): string {
  return `${alias.cidr}${alias.comment ? ` # ${alias.comment}` : ''}`;
}

export function sameEntry(a: FirewallIpEntry, b: FirewallIpEntry): boolean {
  return a.cidr === b.cidr && (a.nomatch ?? false) === (b.nomatch ?? false) && (a.comment ?? '') === (b.comment ?? '');
}

export function sameIpset(a: FirewallIpset, b: FirewallIpset): boolean {
  return (
    (a.comment ?? '') === (b.comment ?? '') &&
    a.entries.length === b.entries.length &&
    a.entries.every((entry, i) => sameEntry(entry, b.entries[i] as FirewallIpEntry))
  );
}

export function sameAlias(a: FirewallAlias, b: FirewallAlias): boolean {
  return a.name.toLowerCase() === b.name.toLowerCase() && a.cidr === b.cidr && (a.comment ?? '') === (b.comment ?? '');
}

function sameRecord<T>(a: Record<string, T>, b: Record<string, T>, same: (x: T, y: T) => boolean): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && same(a[k] as T, b[k] as T));
}

/** Whether two states agree on one section. */
export function sameSection(section: Section, a: FirewallState, b: FirewallState): boolean {
  if (section === 'options') {
    const x = a.options ?? {};
    const y = b.options ?? {};
    return OPTION_NAMES.every((o) => optionText(x[o]) === optionText(y[o]));
  }
  if (section === 'rules') {
    const x = a.rules ?? [];
    const y = b.rules ?? [];
    return x.length === y.length && x.every((rule, i) => sameRule(rule, y[i] as FirewallRule));
  }
  if (section === 'ipsets') return sameRecord(a.ipsets ?? {}, b.ipsets ?? {}, sameIpset);
  return sameRecord(a.aliases ?? {}, b.aliases ?? {}, sameAlias);
}

/** The sections a state manages. */
export function sectionsOf(state: FirewallState): Section[] {
  return SECTIONS.filter((s) => state[s] !== undefined);
}

/** Whether `live` agrees with `state` on every section `state` manages. */
export function agrees(state: FirewallState, live: FirewallState): boolean {
  return sectionsOf(state).every((s) => sameSection(s, state, live));
}

/** Only the sections `like` manages, taken from `live`. */
export function managedPart(live: FirewallState, like: FirewallState): FirewallState {
  const out: FirewallState = {};
  for (const section of sectionsOf(like)) (out as Record<string, unknown>)[section] = live[section] ?? emptySection(section);
  return out;
}

function emptySection(section: Section): unknown {
  return section === 'rules' ? [] : {};
}

/** `value` is `a` or `b` (each possibly absent), by `same`. */
function either<T>(value: T | undefined, a: T | undefined, b: T | undefined, same: (x: T, y: T) => boolean): boolean {
  const is = (other: T | undefined): boolean => (value === undefined ? other === undefined : other !== undefined && same(value, other));
  return is(a) || is(b);
}

function keysOf(...records: (Record<string, unknown> | undefined)[]): Set<string> {
  return new Set(records.flatMap((r) => Object.keys(r ?? {})));
}

/** Every entry and the comment of one IPset at its reviewed or its planned value. */
function ipsetBetween(live: FirewallIpset | undefined, from: FirewallIpset | undefined, to: FirewallIpset | undefined): boolean {
  if (live === undefined || from === undefined || to === undefined) return either(live, from, to, sameIpset);
  if (!either(live.comment ?? '', from.comment ?? '', to.comment ?? '', (x, y) => x === y)) return false;
  const byCidr = (set: FirewallIpset) => Object.fromEntries(set.entries.map((e) => [e.cidr, e]));
  const [l, f, t] = [byCidr(live), byCidr(from), byCidr(to)];
  return [...keysOf(l, f, t)].every((cidr) => either(l[cidr], f[cidr], t[cidr], sameEntry));
}

/**
 * Whether one section of `live` is where an apply from `from` to `to` may have stopped: every
 * option, alias, IPset entry at its reviewed or its planned value, and the rules one of the lists
 * the rule writes pass through (`between`). What is left after a partial apply is no conflict.
 */
export function sectionBetween(
  section: Section,
  live: FirewallState,
  from: FirewallState,
  to: FirewallState,
  rulesBetween: (live: readonly FirewallRule[]) => boolean,
): boolean {
  if (section === 'options')
    return OPTION_NAMES.every((o) =>
      either(optionText(live.options?.[o]), optionText(from.options?.[o]), optionText(to.options?.[o]), (x, y) => x === y),
    );
  if (section === 'aliases')
    return [...keysOf(live.aliases, from.aliases, to.aliases)].every((k) =>
      either(live.aliases?.[k], from.aliases?.[k], to.aliases?.[k], sameAlias),
    );
  if (section === 'ipsets')
    return [...keysOf(live.ipsets, from.ipsets, to.ipsets)].every((k) => ipsetBetween(live.ipsets?.[k], from.ipsets?.[k], to.ipsets?.[k]));
  return rulesBetween(live.rules ?? []);
}
