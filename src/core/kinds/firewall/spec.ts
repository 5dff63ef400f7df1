/**
 * The guest key `firewall:` as users write it, and what it means as a `FirewallState`. A section
 * left out (`options`, `rules`, `ipsets`, `aliases`) is not managed; a section written is exact:
 * the rules are these, in this order; the IPsets and aliases are these and no others; the options
 * are these, and an option left out is returned to Proxmox's default (deleted from the file).
 * A rule's `enable` defaults to true here, unlike `POST rules` (docs/proxmox-behaviour.md, FW-…),
 * since a rule written in a spec is meant to act; the executor always sends it.
 */
import { z } from 'zod';
import type { FirewallAlias, FirewallIpEntry, FirewallIpset, FirewallOptions, FirewallRule } from './port.js';
import { RULE_FIELDS } from './port.js';
import { type FirewallState, normaliseCidr, sortedEntries } from './state.js';

const LOG_LEVELS = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug', 'nolog'] as const;
const POLICIES = ['ACCEPT', 'REJECT', 'DROP'] as const;
/** `$security_group_name_pattern`, `$ipset_name_pattern`, `$ip_alias_pattern` (the same words). */
const NAME = /^[A-Za-z][A-Za-z0-9\-_]+$/;
const Text = z.union([z.string().min(1), z.number()]).transform(String);

const Options = z.strictObject({
  enable: z.boolean().optional(),
  policy_in: z.enum(POLICIES).optional(),
  policy_out: z.enum(POLICIES).optional(),
  macfilter: z.boolean().optional(),
  ipfilter: z.boolean().optional(),
  dhcp: z.boolean().optional(),
  ndp: z.boolean().optional(),
  radv: z.boolean().optional(),
  log_level_in: z.enum(LOG_LEVELS).optional(),
  log_level_out: z.enum(LOG_LEVELS).optional(),
});

const Rule = z
  .strictObject({
    type: z.enum(['in', 'out', 'group']),
    action: z.string().min(2).max(20).regex(NAME, 'an action is ACCEPT, DROP, REJECT or a security group name'),
    enable: z.boolean().optional(),
    macro: z.string().max(128).optional(),
    iface: z
      .string()
      .regex(/^net\d+$/, "a guest rule's iface is a network device key (net0, net1, …)")
      .optional(),
    source: z.string().max(512).optional(),
    dest: z.string().max(512).optional(),
    proto: Text.optional(),
    dport: Text.optional(),
    sport: Text.optional(),
    log: z.enum(LOG_LEVELS).optional(),
    'icmp-type': z.string().optional(),
    comment: z.string().optional(),
  })
  .superRefine((rule, ctx) => {
    if (rule.type !== 'group' && !/^(ACCEPT|DROP|REJECT)$/.test(rule.action))
      ctx.addIssue({ code: 'custom', path: ['action'], message: `unknown action '${rule.action}' (ACCEPT, DROP or REJECT)` });
    for (const port of ['dport', 'sport'] as const)
      if (rule[port] !== undefined && rule.proto === undefined && rule.macro === undefined)
        ctx.addIssue({ code: 'custom', path: [port], message: `'${port}' requires 'proto'` });
  });

const IpEntry = z.union([
  z.string().min(1),
  z.strictObject({ cidr: z.string().min(1), nomatch: z.boolean().optional(), comment: z.string().optional() }),
]);
const Ipset = z.union([z.array(IpEntry), z.strictObject({ comment: z.string().optional(), entries: z.array(IpEntry) })]);
const Alias = z.union([z.string().min(1), z.strictObject({ cidr: z.string().min(1), comment: z.string().optional() })]);

/** The value of `firewall:` on a VM or Container document. */
export const FirewallKey = z.strictObject({
  options: Options.optional(),
  rules: z.array(Rule).optional(),
  ipsets: z.record(z.string().regex(NAME, 'an IPset name is a letter, then letters, digits, - or _').max(64), Ipset).optional(),
  aliases: z.record(z.string().regex(NAME, 'an alias name is a letter, then letters, digits, - or _'), Alias).optional(),
});
export type FirewallKey = z.infer<typeof FirewallKey>;

function toRule(rule: z.infer<typeof Rule>): FirewallRule {
  const out: FirewallRule = { type: rule.type, action: rule.action, enable: rule.enable ?? true };
  for (const field of RULE_FIELDS) if (rule[field] !== undefined && rule[field] !== '') out[field] = rule[field];
  return out;
}

function toEntry(entry: z.infer<typeof IpEntry>): FirewallIpEntry {
  if (typeof entry === 'string') return { cidr: normaliseCidr(entry) };
  return {
    cidr: normaliseCidr(entry.cidr),
    ...(entry.nomatch ? { nomatch: true } : {}),
    ...(entry.comment ? { comment: entry.comment } : {}),
  };
}

function toIpset(value: z.infer<typeof Ipset>): FirewallIpset {
  const entries = Array.isArray(value) ? value : value.entries;
  const comment = Array.isArray(value) ? undefined : value.comment;
  return { ...(comment ? { comment } : {}), entries: sortedEntries(entries.map(toEntry)) };
}

function toAlias(name: string, value: z.infer<typeof Alias>): FirewallAlias {
  if (typeof value === 'string') return { name, cidr: normaliseCidr(value) };
  return { name, cidr: normaliseCidr(value.cidr), ...(value.comment ? { comment: value.comment } : {}) };
}

/** What a guest's `firewall:` asks for, as the kind compares it. */
export function wantedState(value: unknown): FirewallState {
  const key = FirewallKey.parse(value);
  const state: FirewallState = {};
  if (key.options) {
    const options: FirewallOptions = {};
    for (const [name, v] of Object.entries(key.options)) if (v !== undefined) options[name] = v;
    state.options = options;
  }
  if (key.aliases)
    state.aliases = Object.fromEntries(Object.entries(key.aliases).map(([name, v]) => [name.toLowerCase(), toAlias(name, v)]));
  if (key.ipsets) state.ipsets = Object.fromEntries(Object.entries(key.ipsets).map(([name, v]) => [name, toIpset(v)]));
  if (key.rules) state.rules = key.rules.map(toRule);
  return state;
}

/** Names a rule refers to that the spec's own managed sections do not define: `+set` and aliases. */
export function missingReferences(state: FirewallState): string[] {
  const problems: string[] = [];
  for (const [i, rule] of (state.rules ?? []).entries()) {
    for (const field of ['source', 'dest'] as const) {
      const value = rule[field];
      if (value === undefined) continue;
      const set = /^\+(?:guest\/)?([A-Za-z][A-Za-z0-9\-_]+)$/.exec(value);
      if (set && state.ipsets && !Object.hasOwn(state.ipsets, set[1] as string))
        problems.push(`firewall rule ${i + 1}: ${field} names IPset '${set[1]}', which firewall.ipsets does not define`);
      const alias = /^(?:guest\/)?([A-Za-z][A-Za-z0-9\-_]+)$/.exec(value);
      if (alias && state.aliases && !Object.hasOwn(state.aliases, (alias[1] as string).toLowerCase()))
        problems.push(`firewall rule ${i + 1}: ${field} names alias '${alias[1]}', which firewall.aliases does not define`);
    }
  }
  return problems;
}
