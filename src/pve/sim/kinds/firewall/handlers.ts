/**
 * The guest firewall's handlers (pve-firewall `API2/Firewall/VM.pm` `get_options`/`set_options`,
 * `Rules.pm` `get_rules`/`get_rule`/`create_rule`/`update_rule`/`delete_rule`, `IPSet.pm`,
 * `Aliases.pm`, with `Firewall.pm` `verify_rule`, `copy_rule_data`, `delete_rule_properties`).
 * Synchronous, no task; every write reads the file, checks what it checks and saves it whole.
 * Proxmox's own asymmetry is kept: `PUT options`, `PUT`/`DELETE rules/{pos}`, the IPset entry and
 * alias writes compare the digest they are given, `POST rules` accepts one and never compares
 * it, always inserts at position 0 (its `pos` is accepted and unused), and stores `enable: 0`
 * when the caller leaves `enable` out (docs/proxmox-behaviour.md, FW-1…).
 */
import { splitList } from '../../../../core/proxmox-params.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, ParamError } from '../../errors.js';
import {
  aliasList,
  clusterFirewall,
  firewallFile,
  ipsetList,
  listDigest,
  objectDigest,
  type SimFirewallFile,
  type SimIpset,
  type SimRule,
  saveFirewallFile,
} from './state.js';

/** `vm` for a VM's file, `ct` for a container's (the rule environment). */
export type RuleEnv = 'vm' | 'ct';

/** `$vm_option_properties`: the booleans and the rest. */
const BOOLEAN_OPTIONS = ['enable', 'dhcp', 'ipfilter', 'macfilter', 'ndp', 'radv'] as const;
const OPTIONS = [...BOOLEAN_OPTIONS, 'policy_in', 'policy_out', 'log_level_in', 'log_level_out'] as const;

/** `$rule_properties` that a rule stores (`pos` and `digest` are parameters, never written). */
const RULE_FIELDS = [
  'type',
  'action',
  'macro',
  'iface',
  'source',
  'dest',
  'proto',
  'enable',
  'log',
  'sport',
  'dport',
  'comment',
  'icmp-type',
];

/** The macros `$pve_fw_macros` defines, by lower-case name (`$pve_fw_preferred_macro_names`). */
const MACROS = new Map(
  (
    'Amanda Auth BGP BitTorrent BitTorrent32 Ceph CVS Citrix DAAP DCC DHCPfwd DNS Distcc FTP Finger GNUnet GRE Git HKP HTTP ' +
    'HTTPS ICPV2 ICQ IMAP IMAPS IPIP IPsec IPsecah IPsecnat IRC Jetdirect L2TP LDAP LDAPS MSNP MSSQL Mail MDNS Munin MySQL ' +
    'NNTP NNTPS NTP OSPF OpenVPN PCA PMG POP3 POP3S PPtP Ping PostgreSQL Printer RDP RIP RNDC Razor Rdate Rsync SANE SMB ' +
    'SMBswat SMTP SMTPS SNMP SPAMD SSH SVN SixXS SPICEproxy Squid Submission Syslog TFTP Telnet Telnets Time Trcrt VNC VNCL ' +
    'Web Webcache Webmin Whois'
  )
    .split(' ')
    .map((name) => [name.toLowerCase(), name]),
);

const PROTOCOLS_WITH_PORTS = new Set(['tcp', 'udp', 'udplite', 'sctp', 'dccp', '6', '17', '136', '132', '33']);
const ALIAS_RE = /^(guest\/|dc\/)?([A-Za-z][A-Za-z0-9\-_]+)$/;
const IPSET_REF_RE = /^\+(guest\/|dc\/|sdn\/)?([A-Za-z][A-Za-z0-9\-_]+)$/;
const IPV4_RE = /^(\d{1,3}\.){3}\d{1,3}(\/\d+)?$/;
const IPV6_RE = /^[0-9a-fA-F:.]*:[0-9a-fA-F:.]*(\/\d+)?$/;

/** `assert_if_modified`: only a digest given is compared. */
function assertDigest(ctx: RequestContext, current: string): void {
  const given = ctx.params.digest;
  if (given && given !== current) throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
}

/** A boolean parameter as `check_type` leaves it: 1 or 0. */
function bool(value: string): number {
  return /^(1|true|yes|on)$/i.test(value) ? 1 : 0;
}

function vmidOf(ctx: RequestContext): number {
  return Number(param(ctx, 'vmid'));
}

function load(ctx: RequestContext): SimFirewallFile {
  return firewallFile(ctx.sim, vmidOf(ctx));
}

function save(ctx: RequestContext, file: SimFirewallFile): void {
  saveFirewallFile(ctx.sim, vmidOf(ctx), file);
}

/** `parse_ip_or_cidr`: the address as the parser normalises it (`/32`, `/128` dropped) and its version. */
function parseIpOrCidr(cidr: string, field: string): { cidr: string; ipversion: number } {
  if (IPV4_RE.test(cidr)) return { cidr: cidr.replace(/\/32$/, ''), ipversion: 4 };
  if (IPV6_RE.test(cidr)) return { cidr: cidr.replace(/\/128$/, ''), ipversion: 6 };
  throw new ParamError({ [field]: 'value does not look like a valid IP address or CIDR network' });
}

// ---- options ----

/** `GET …/firewall/options` (`get_options`): the options with their digest. */
export function getOptions(ctx: RequestContext): HandlerResult {
  const options = load(ctx).options;
  return { data: { ...options, digest: objectDigest(options) } };
}

/** `PUT …/firewall/options` (`set_options`): the digest is checked, then `delete`, then the values. */
export function setOptions(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  assertDigest(ctx, objectDigest(file.options));
  for (const option of splitList(ctx.params.delete ?? '')) {
    if (!(OPTIONS as readonly string[]).includes(option)) throw new ParamError({ delete: `no such option '${option}'` });
    delete file.options[option];
  }
  for (const option of OPTIONS) {
    const value = ctx.params[option];
    if (value === undefined) continue;
    file.options[option] = (BOOLEAN_OPTIONS as readonly string[]).includes(option) ? bool(value) : value;
  }
  save(ctx, file);
  return { data: null };
}

// ---- rules ----

/** `copy_list_with_digest` over the rules, then `pos` on each. */
function rulesWithDigest(rules: readonly SimRule[]): Record<string, unknown>[] {
  const digest = listDigest(rules);
  return rules.map((rule, pos) => ({ ...rule, digest, pos }));
}

/** `GET …/firewall/rules` (`get_rules`). */
export function getRules(ctx: RequestContext): HandlerResult {
  return { data: rulesWithDigest(load(ctx).rules) };
}

function position(ctx: RequestContext, rules: readonly SimRule[]): number {
  const pos = Number(param(ctx, 'pos'));
  if (pos >= rules.length) throw new DieError(`no rule at position ${pos}\n`);
  return pos;
}

/** `GET …/firewall/rules/{pos}` (`get_rule`). */
export function getRule(ctx: RequestContext): HandlerResult {
  const rules = load(ctx).rules;
  const pos = position(ctx, rules);
  return { data: rulesWithDigest(rules)[pos] };
}

/** `copy_rule_data`: every rule property given; `''` or `-` deletes it. */
function copyRuleData(rule: SimRule, ctx: RequestContext): void {
  for (const field of RULE_FIELDS) {
    const value = ctx.params[field];
    if (value === undefined) continue;
    if (value === '' || value === '-') delete rule[field];
    else rule[field] = field === 'enable' ? Number(value) : value;
  }
}

/** `delete_rule_properties`. */
function deleteRuleProperties(rule: SimRule, list: string): void {
  for (const field of splitList(list)) {
    if (!RULE_FIELDS.includes(field) && field !== 'pos' && field !== 'digest')
      throw new ParamError({ delete: `no such property ('${field}')` });
    if (field === 'type' || field === 'action') throw new ParamError({ delete: `unable to delete required property '${field}'` });
    delete rule[field];
  }
}

/**
 * The ipset or alias a `source`/`dest` names must exist in the guest's file or the cluster's
 * (`$check_ipset_or_alias_property`: either file, whatever the `guest/` or `dc/` scope says; SDN
 * IPsets are not simulated).
 */
function addressProblem(value: string, file: SimFirewallFile, cluster: SimFirewallFile): string | undefined {
  if (value.startsWith('+')) {
    const match = IPSET_REF_RE.exec(value);
    if (!match) return `invalid ipset name '${value}'`;
    const name = match[2] as string;
    return file.ipsets.has(name) || cluster.ipsets.has(name) ? undefined : `no such ipset '${name}'`;
  }
  const alias = ALIAS_RE.exec(value);
  if (!alias) return undefined;
  const key = (alias[2] as string).toLowerCase();
  return file.aliases.has(key) || cluster.aliases.has(key) ? undefined : `no such alias '${value}'`;
}

/** The IP version of an alias a rule names: the guest's unless `dc/`, else the cluster's unless `guest/`. */
function aliasVersion(scope: string | undefined, key: string, file: SimFirewallFile, cluster: SimFirewallFile): number | undefined {
  const own = scope !== 'dc/' ? file.aliases.get(key) : undefined;
  return (own ?? (scope !== 'guest/' ? cluster.aliases.get(key) : undefined))?.ipversion;
}

/** `verify_rule` for a guest's rule environment: the first problem per field, as `raise_param_exc` reports them. */
function verifyRule(rule: SimRule, file: SimFirewallFile, cluster: SimFirewallFile, env: RuleEnv): void {
  const errors: Record<string, string> = {};
  const add = (field: string, message: string): void => {
    if (errors[field] === undefined) errors[field] = message;
  };
  const type = rule.type === undefined ? undefined : String(rule.type);
  const action = rule.action === undefined ? undefined : String(rule.action);
  if (!type) add('type', 'missing property');
  if (!action) add('action', 'missing property');
  if (type) {
    if (!['in', 'out', 'group'].includes(type)) add('type', `invalid rule type '${type}' for rule_env '${env}'`);
    else if (type !== 'group' && action && !/^(ACCEPT|DROP|REJECT)$/.test(action)) add('action', `unknown action '${action}'`);
  }
  if (rule.iface !== undefined && !/^net(\d+)$/.test(String(rule.iface))) add('iface', "value does not match the regex pattern 'net\\d+'");
  if (rule.macro !== undefined) {
    const preferred = MACROS.get(String(rule.macro).toLowerCase());
    if (preferred) rule.macro = preferred;
    else add('macro', `unknown macro '${rule.macro}'`);
  }
  const proto = rule.proto === undefined ? undefined : String(rule.proto);
  const icmp = proto === 'icmp' || proto === 'icmpv6' || proto === 'ipv6-icmp' || proto === '1' || proto === '58';
  for (const port of ['dport', 'sport'] as const) {
    if (rule[port] === undefined) continue;
    if (!proto) add('proto', `missing property - '${port}' requires this property`);
    else if (!PROTOCOLS_WITH_PORTS.has(proto) && !(port === 'dport' && icmp)) add(port, `protocol '${proto}' does not support ports`);
  }
  let ipversion: number | undefined = proto === 'icmp' ? 4 : proto === 'icmpv6' || proto === 'ipv6-icmp' ? 6 : undefined;
  for (const field of ['source', 'dest'] as const) {
    const value = rule[field];
    if (value === undefined) continue;
    const problem = addressProblem(String(value), file, cluster);
    if (problem) add(field, problem);
    const alias = ALIAS_RE.exec(String(value));
    const version = alias
      ? aliasVersion(alias[1], (alias[2] as string).toLowerCase(), file, cluster)
      : IPV4_RE.test(String(value).split(',')[0] ?? '')
        ? 4
        : String(value).includes(':')
          ? 6
          : undefined;
    if (version !== undefined && ipversion !== undefined && version !== ipversion)
      throw new DieError('detected mixed ipv4/ipv6 addresses in rule\n');
    ipversion ??= version;
  }
  if (Object.keys(errors).length > 0) throw new ParamError(errors);
  if (ipversion !== undefined) rule.ipversion = ipversion;
  else delete rule.ipversion;
}

/** What the file holds once it is read back: `enable` is 1 unless the line was disabled. */
function asReadBack(rule: SimRule): SimRule {
  const out: SimRule = {};
  for (const [key, value] of Object.entries(rule)) if (value !== '' && key !== 'pos' && key !== 'digest') out[key] = value;
  out.enable = rule.enable === undefined || Number(rule.enable) !== 0 ? 1 : 0;
  if (typeof out.comment === 'string' && /^\s*$/.test(out.comment)) delete out.comment;
  return out;
}

/** `POST …/firewall/rules` (`create_rule`): no digest check, position 0, `enable` 0 unless given. */
export function createRule(env: RuleEnv) {
  return (ctx: RequestContext): HandlerResult => {
    const file = load(ctx);
    const rule: SimRule = {};
    copyRuleData(rule, ctx);
    verifyRule(rule, file, clusterFirewall(ctx.sim), env);
    if (ctx.params.enable === undefined) rule.enable = 0;
    file.rules.unshift(asReadBack(rule));
    save(ctx, file);
    return { data: null };
  };
}

/** `PUT …/firewall/rules/{pos}` (`update_rule`): the digest, then `moveto` (other fields ignored) or the fields. */
export function updateRule(env: RuleEnv) {
  return (ctx: RequestContext): HandlerResult => {
    const file = load(ctx);
    assertDigest(ctx, listDigest(file.rules));
    const pos = position(ctx, file.rules);
    const rule = file.rules[pos] as SimRule;
    const moveto = ctx.params.moveto === undefined ? undefined : Number(ctx.params.moveto);
    if (moveto !== undefined && moveto !== pos) {
      // Placed before the rule that stood at `moveto`; at the end when `moveto` is past the last.
      const moved: SimRule[] = [];
      file.rules.forEach((other, i) => {
        if (i === pos) return;
        if (i === moveto) moved.push(rule);
        moved.push(other);
      });
      if (moveto >= file.rules.length) moved.push(rule);
      file.rules = moved;
    } else {
      copyRuleData(rule, ctx);
      if (ctx.params.delete) deleteRuleProperties(rule, ctx.params.delete);
      verifyRule(rule, file, clusterFirewall(ctx.sim), env);
      file.rules[pos] = asReadBack(rule);
    }
    save(ctx, file);
    return { data: null };
  };
}

/** `DELETE …/firewall/rules/{pos}` (`delete_rule`): the digest, then the position. */
export function deleteRule(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  assertDigest(ctx, listDigest(file.rules));
  const pos = position(ctx, file.rules);
  file.rules.splice(pos, 1);
  save(ctx, file);
  return { data: null };
}

// ---- IPsets ----

/** `$get_ipset_list` with its digest on every entry. */
function ipsetsWithDigest(file: SimFirewallFile): Record<string, unknown>[] {
  const list = ipsetList(file);
  const digest = listDigest(list);
  return list.map((entry) => ({ ...entry, digest }));
}

/** `GET …/firewall/ipset` (`ipset_index`). */
export function listIpsets(ctx: RequestContext): HandlerResult {
  return { data: ipsetsWithDigest(load(ctx)) };
}

/** `GET /cluster/firewall/ipset` (`ClusterIPSetList`, `ipset_index`): the datacenter's IPsets. */
export function listClusterIpsets(ctx: RequestContext): HandlerResult {
  return { data: ipsetsWithDigest(clusterFirewall(ctx.sim)) };
}

/** `GET /cluster/firewall/aliases` (`ClusterAliases`, `get_aliases`): the datacenter's aliases. */
export function getClusterAliases(ctx: RequestContext): HandlerResult {
  return { data: aliasesWithDigest(clusterFirewall(ctx.sim)) };
}

/** `POST …/firewall/ipset` (`create_ipset`): a new set, or with `rename` a renamed one (digest checked only then). */
export function createIpset(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  const name = param(ctx, 'name');
  const rename = ctx.params.rename;
  if (rename) {
    assertDigest(ctx, listDigest(ipsetList(file)));
    const set = file.ipsets.get(rename);
    if (!set) throw new ParamError({ name: `IPSet '${rename}' does not exist` });
    if (file.ipsets.has(name) && name !== rename) throw new ParamError({ name: `IPSet '${name}' does already exist` });
    file.ipsets.delete(rename);
    file.ipsets.set(name, ctx.params.comment !== undefined ? { ...set, comment: ctx.params.comment } : set);
  } else {
    if (file.ipsets.has(name)) throw new ParamError({ name: `IPSet '${name}' already exists` });
    file.ipsets.set(name, { entries: [], ...(ctx.params.comment ? { comment: ctx.params.comment } : {}) });
  }
  for (const set of file.ipsets.values()) if (set.comment === '') delete set.comment;
  save(ctx, file);
  return { data: null };
}

function ipsetOf(ctx: RequestContext, file: SimFirewallFile): SimIpset {
  const name = param(ctx, 'name');
  const set = file.ipsets.get(name);
  if (!set) throw new DieError(`no such IPSet '${name}'\n`);
  return set;
}

function entriesWithDigest(set: SimIpset): Record<string, unknown>[] {
  const digest = listDigest(set.entries as unknown as Record<string, unknown>[]);
  return set.entries.map((entry) => ({ ...entry, digest }));
}

/** `GET …/firewall/ipset/{name}` (`get_ipset`): the entries with their digest. */
export function getIpset(ctx: RequestContext): HandlerResult {
  return { data: entriesWithDigest(ipsetOf(ctx, load(ctx))) };
}

/** `DELETE …/firewall/ipset/{name}` (`delete_ipset`): refused while it has entries, unless `force`. */
export function deleteIpset(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  const set = ipsetOf(ctx, file);
  const force = ctx.params.force !== undefined && bool(ctx.params.force) === 1;
  if (set.entries.length > 0 && !force) throw new DieError(`IPSet '${param(ctx, 'name')}' is not empty\n`);
  file.ipsets.delete(param(ctx, 'name'));
  save(ctx, file);
  return { data: null };
}

/** The entries as the file keeps them: one per CIDR, sorted (`$format_ipsets`). */
function sortEntries(set: SimIpset): void {
  set.entries.sort((a, b) => (a.cidr < b.cidr ? -1 : a.cidr > b.cidr ? 1 : 0));
}

/** `POST …/firewall/ipset/{name}` (`create_ip`): an alias must exist; an address is normalised; no duplicate, no `/0`. */
export function createIp(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  const set = ipsetOf(ctx, file);
  let cidr = param(ctx, 'cidr');
  const alias = ALIAS_RE.exec(cidr);
  if (alias) {
    if (alias[1] === 'dc/' || !file.aliases.has((alias[2] as string).toLowerCase())) throw new DieError(`no such alias '${alias[2]}'\n`);
  } else cidr = parseIpOrCidr(cidr, 'cidr').cidr;
  if (set.entries.some((entry) => entry.cidr === cidr)) throw new ParamError({ cidr: `address '${cidr}' already exists` });
  if (/\/0+$/.test(cidr)) throw new ParamError({ cidr: 'a zero prefix is not allowed in ipset entries' });
  set.entries.unshift({
    cidr,
    ...(ctx.params.nomatch !== undefined && bool(ctx.params.nomatch) === 1 ? { nomatch: 1 as const } : {}),
    ...(ctx.params.comment && !/^\s*$/.test(ctx.params.comment) ? { comment: ctx.params.comment } : {}),
  });
  sortEntries(set);
  save(ctx, file);
  return { data: null };
}

/** `GET …/firewall/ipset/{name}/{cidr}` (`read_ip`). */
export function readIp(ctx: RequestContext): HandlerResult {
  const entry = entriesWithDigest(ipsetOf(ctx, load(ctx))).find((e) => e.cidr === param(ctx, 'cidr'));
  if (!entry) throw new ParamError({ cidr: 'no such IP/Network' });
  return { data: entry };
}

/** `PUT …/firewall/ipset/{name}/{cidr}` (`update_ip`): the digest, then `nomatch` and `comment` both replaced. */
export function updateIp(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  const set = ipsetOf(ctx, file);
  assertDigest(ctx, listDigest(set.entries as unknown as Record<string, unknown>[]));
  const index = set.entries.findIndex((e) => e.cidr === param(ctx, 'cidr'));
  if (index < 0) throw new ParamError({ cidr: 'no such IP/Network' });
  const cidr = param(ctx, 'cidr');
  set.entries[index] = {
    cidr,
    ...(ctx.params.nomatch !== undefined && bool(ctx.params.nomatch) === 1 ? { nomatch: 1 as const } : {}),
    ...(ctx.params.comment && !/^\s*$/.test(ctx.params.comment) ? { comment: ctx.params.comment } : {}),
  };
  save(ctx, file);
  return { data: null };
}

/** `DELETE …/firewall/ipset/{name}/{cidr}` (`remove_ip`): the digest, then the entry goes (absent: nothing happens). */
export function removeIp(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  const set = ipsetOf(ctx, file);
  assertDigest(ctx, listDigest(set.entries as unknown as Record<string, unknown>[]));
  set.entries = set.entries.filter((e) => e.cidr !== param(ctx, 'cidr'));
  save(ctx, file);
  return { data: null };
}

// ---- aliases ----

function aliasesWithDigest(file: SimFirewallFile): Record<string, unknown>[] {
  const list = aliasList(file) as unknown as Record<string, unknown>[];
  const digest = listDigest(list);
  return list.map((alias) => ({ ...alias, digest }));
}

/** `GET …/firewall/aliases` (`get_aliases`). */
export function getAliases(ctx: RequestContext): HandlerResult {
  return { data: aliasesWithDigest(load(ctx)) };
}

function aliasEntry(name: string, cidr: string, comment: string | undefined) {
  const parsed = parseIpOrCidr(cidr, 'cidr');
  return { name, cidr: parsed.cidr, ipversion: parsed.ipversion, ...(comment && !/^\s*$/.test(comment) ? { comment } : {}) };
}

/** `POST …/firewall/aliases` (`create_alias`): names are unique without regard to case. */
export function createAlias(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  const name = param(ctx, 'name');
  if (file.aliases.has(name.toLowerCase())) throw new ParamError({ name: `alias '${name}' already exists` });
  file.aliases.set(name.toLowerCase(), aliasEntry(name, param(ctx, 'cidr'), ctx.params.comment));
  save(ctx, file);
  return { data: null };
}

/** `GET …/firewall/aliases/{name}` (`read_alias`). */
export function readAlias(ctx: RequestContext): HandlerResult {
  const alias = load(ctx).aliases.get(param(ctx, 'name').toLowerCase());
  if (!alias) throw new ParamError({ name: 'no such alias' });
  return { data: alias };
}

/** `PUT …/firewall/aliases/{name}` (`update_alias`): the digest, then `cidr` and `comment` replaced, `rename` last. */
export function updateAlias(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  assertDigest(ctx, listDigest(aliasList(file) as unknown as Record<string, unknown>[]));
  const name = param(ctx, 'name');
  const key = name.toLowerCase();
  if (!file.aliases.has(key)) throw new ParamError({ name: 'no such alias' });
  const entry = aliasEntry(name, param(ctx, 'cidr'), ctx.params.comment);
  file.aliases.set(key, entry);
  const rename = ctx.params.rename;
  if (rename && rename.toLowerCase() !== key) {
    if (file.aliases.has(rename.toLowerCase())) throw new ParamError({ name: `alias '${rename}' already exists` });
    file.aliases.delete(key);
    file.aliases.set(rename.toLowerCase(), { ...entry, name: rename });
  }
  save(ctx, file);
  return { data: null };
}

/** `DELETE …/firewall/aliases/{name}` (`remove_alias`): the digest, then the alias goes (absent: nothing happens). */
export function removeAlias(ctx: RequestContext): HandlerResult {
  const file = load(ctx);
  assertDigest(ctx, listDigest(aliasList(file) as unknown as Record<string, unknown>[]));
  file.aliases.delete(param(ctx, 'name').toLowerCase());
  save(ctx, file);
  return { data: null };
}
