/**
 * A guest's live firewall as the `firewall:` a person writes: the inverse of `wantedState`
 * (`spec.ts`), so that the key written from a read compares equal to that read, section by
 * section (`sameSection`). Used by `pve-gitops import` (a whole `firewall:`) and by adopting drift
 * (one option, alias, IPset or the rule list). Short forms where they mean the same: an alias or an
 * IPset entry without a comment is its CIDR, a rule's `enable` is written only when it is off
 * (a spec's rule is on unless it says not). Pure.
 */
import type { FirewallAlias, FirewallIpEntry, FirewallIpset, FirewallRule } from './port.js';
import { RULE_FIELDS } from './port.js';
import { type FirewallState, OPTION_NAMES, SECTIONS, type Section, sortedEntries } from './state.js';

/** A value inside `firewall:` as YAML writes it. */
export type FirewallDocumentValue =
  | string
  | number
  | boolean
  | readonly FirewallDocumentValue[]
  | { readonly [key: string]: FirewallDocumentValue };

/** Fields a person writes as numbers when they are one (`dport: 22`); the spec reads them back as text. */
const NUMERIC_FIELDS = new Set(['proto', 'dport', 'sport']);

function fieldValue(field: string, value: string): string | number {
  return NUMERIC_FIELDS.has(field) && /^(0|[1-9]\d{0,8})$/.test(value) ? Number(value) : value;
}

/** One rule: `type`, `action`, `enable: false` when it is off, then its fields in the file's order. */
export function ruleDocument(rule: FirewallRule): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = { type: rule.type, action: rule.action };
  if (!rule.enable) out.enable = false;
  for (const field of RULE_FIELDS) {
    const value = rule[field];
    if (value !== undefined && value !== '') out[field] = fieldValue(field, value);
  }
  return out;
}

function entryDocument(entry: FirewallIpEntry): FirewallDocumentValue {
  if (!entry.nomatch && !entry.comment) return entry.cidr;
  return { cidr: entry.cidr, ...(entry.nomatch ? { nomatch: true } : {}), ...(entry.comment ? { comment: entry.comment } : {}) };
}

/** One IPset: its entries (sorted, as the file keeps them), with its comment when it has one. */
export function ipsetDocument(set: FirewallIpset): FirewallDocumentValue {
  const entries = sortedEntries(set.entries).map(entryDocument);
  return set.comment ? { comment: set.comment, entries } : entries;
}

/** One alias: its CIDR, with its comment when it has one. */
export function aliasDocument(alias: FirewallAlias): FirewallDocumentValue {
  return alias.comment ? { cidr: alias.cidr, comment: alias.comment } : alias.cidr;
}

/** The options section: the options the file sets, in the order the plan shows them. */
export function optionsDocument(options: Readonly<Record<string, boolean | string>>): Record<string, boolean | string> {
  const out: Record<string, boolean | string> = {};
  for (const name of OPTION_NAMES) {
    const value = options[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** One section of `live` as `firewall:` writes it. */
export function sectionDocument(section: Section, live: FirewallState): FirewallDocumentValue {
  if (section === 'options') return optionsDocument(live.options ?? {});
  if (section === 'rules') return (live.rules ?? []).map(ruleDocument);
  if (section === 'ipsets')
    return Object.fromEntries(
      Object.entries(live.ipsets ?? {})
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([name, set]) => [name, ipsetDocument(set)]),
    );
  return Object.fromEntries(
    Object.values(live.aliases ?? {})
      .sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1))
      .map((alias) => [alias.name, aliasDocument(alias)]),
  );
}

/** Whether a live section holds anything (an options section with no option set is Proxmox's defaults). */
function holdsSomething(section: Section, live: FirewallState): boolean {
  const value = live[section];
  if (value === undefined) return false;
  return Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0;
}

/**
 * The `firewall:` of a guest whose firewall was read: the sections that hold something, in the
 * order a person reads them (options, aliases, IPsets, rules); undefined when the guest has no
 * firewall file (every section empty), so its spec leaves the firewall alone.
 */
export function firewallDocument(live: FirewallState): Record<string, FirewallDocumentValue> | undefined {
  const out: Record<string, FirewallDocumentValue> = {};
  for (const section of SECTIONS) if (holdsSomething(section, live)) out[section] = sectionDocument(section, live);
  return Object.keys(out).length > 0 ? out : undefined;
}
