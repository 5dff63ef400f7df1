/**
 * The firewall kind's port (`core/kinds/firewall/port.ts`) over the Proxmox API (pve-firewall
 * `API2/Firewall/VM.pm`, `Rules.pm`, `IPSet.pm`, `Aliases.pm`; docs/proxmox-behaviour.md, FW-1…).
 * Every call is synchronous (no task). Reads keep the digests Proxmox returns; writes send them
 * where Proxmox checks one. A rule is always written whole: its `enable` is sent (`POST rules`
 * stores 0 when it is left out) and a field it lacks is deleted. Errors are the port's.
 */
import { z } from 'zod';
import {
  type Digested,
  type FirewallAlias,
  type FirewallIpEntry,
  type FirewallIpset,
  type FirewallOptions,
  type FirewallPort,
  type FirewallRule,
  type FirewallTarget,
  RULE_FIELDS,
} from '../../core/kinds/firewall/port.js';
import type { PveClient } from '../client.js';
import { portCall } from '../to-port-error.js';

const Text = z.union([z.string(), z.number()]).transform(String);
const Flag = z.union([z.boolean(), z.coerce.number()]).transform((v) => v === true || v === 1);

const Rule = z.looseObject({
  type: z.string(),
  action: z.string(),
  enable: Flag.optional(),
  digest: z.string().optional(),
  ...Object.fromEntries(RULE_FIELDS.map((f) => [f, Text.optional()])),
});
const Entry = z.looseObject({ cidr: z.string(), nomatch: Flag.optional(), comment: z.string().optional(), digest: z.string().optional() });
const IpsetItem = z.looseObject({ name: z.string(), comment: z.string().optional(), digest: z.string().optional() });
const Alias = z.looseObject({ name: z.string(), cidr: z.string(), comment: z.string().optional(), digest: z.string().optional() });

/**
 * The digest of an empty list: `copy_list_with_digest` over no entry is the SHA-1 of nothing, and
 * with no entry to carry it Proxmox returns none.
 */
const EMPTY_LIST_DIGEST = 'da39a3ee5e6b4b0d3255bfef95601890afd80709';

/** `$vm_option_properties`: the booleans (stored `0`/`1`) and the words. */
const BOOLEAN_OPTIONS = new Set(['enable', 'dhcp', 'ipfilter', 'macfilter', 'ndp', 'radv']);
const WORD_OPTIONS = new Set(['policy_in', 'policy_out', 'log_level_in', 'log_level_out']);

function toRule(raw: z.infer<typeof Rule>): FirewallRule {
  // A rule read from the file always has `enable`; one without is the parser's default, enabled.
  const rule: FirewallRule = { type: raw.type, action: raw.action, enable: raw.enable ?? true };
  for (const field of RULE_FIELDS) {
    const value = (raw as Record<string, unknown>)[field];
    if (typeof value === 'string' && value !== '') rule[field] = value;
  }
  return rule;
}

function ruleParams(rule: FirewallRule): Record<string, string | number | undefined> {
  const params: Record<string, string | number | undefined> = { type: rule.type, action: rule.action, enable: rule.enable ? 1 : 0 };
  for (const field of RULE_FIELDS) params[field] = rule[field];
  return params;
}

function entryParams(entry: FirewallIpEntry): Record<string, string | number | undefined> {
  return { nomatch: entry.nomatch ? 1 : undefined, comment: entry.comment };
}

export class FirewallAdapter implements FirewallPort {
  readonly #client: PveClient;

  constructor(client: PveClient) {
    this.#client = client;
  }

  #base(target: FirewallTarget): string {
    return `/nodes/${encodeURIComponent(target.node)}/${target.type}/${target.vmid}/firewall`;
  }

  guestLocations(): Promise<Map<number, { node: string; type: 'qemu' | 'lxc' }>> {
    return portCall(async () => new Map((await this.#client.clusterResources()).map((g) => [g.vmid, { node: g.node, type: g.type }])));
  }

  readOptions(target: FirewallTarget): Promise<Digested<FirewallOptions>> {
    return portCall(async () => {
      const raw = z.record(z.string(), z.unknown()).parse(await this.#client.request('GET', `${this.#base(target)}/options`));
      const value: FirewallOptions = {};
      for (const [key, v] of Object.entries(raw)) {
        if (BOOLEAN_OPTIONS.has(key)) value[key] = v === true || Number(v) === 1;
        else if (WORD_OPTIONS.has(key) && typeof v === 'string' && v !== '') value[key] = v;
      }
      return { value, digest: typeof raw.digest === 'string' ? raw.digest : '' };
    });
  }

  setOptions(target: FirewallTarget, set: FirewallOptions, remove: readonly string[], digest: string): Promise<void> {
    return portCall(async () => {
      const params: Record<string, string | number | undefined> = {};
      for (const [key, value] of Object.entries(set)) params[key] = typeof value === 'boolean' ? (value ? 1 : 0) : value;
      await this.#client.request('PUT', `${this.#base(target)}/options`, {
        ...params,
        delete: remove.length > 0 ? remove.join(',') : undefined,
        digest,
      });
    });
  }

  readRules(target: FirewallTarget): Promise<Digested<FirewallRule[]>> {
    return portCall(async () => {
      const raw = z.array(Rule).parse(await this.#client.request('GET', `${this.#base(target)}/rules`));
      return { value: raw.map(toRule), digest: raw[0]?.digest ?? EMPTY_LIST_DIGEST };
    });
  }

  createRule(target: FirewallTarget, rule: FirewallRule): Promise<void> {
    return portCall(async () => {
      await this.#client.request('POST', `${this.#base(target)}/rules`, ruleParams(rule));
    });
  }

  updateRule(target: FirewallTarget, pos: number, rule: FirewallRule, digest: string): Promise<void> {
    return portCall(async () => {
      const params = ruleParams(rule);
      const remove = RULE_FIELDS.filter((f) => rule[f] === undefined);
      await this.#client.request('PUT', `${this.#base(target)}/rules/${pos}`, {
        ...params,
        delete: remove.length > 0 ? remove.join(',') : undefined,
        digest,
      });
    });
  }

  moveRule(target: FirewallTarget, pos: number, moveto: number, digest: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('PUT', `${this.#base(target)}/rules/${pos}`, { moveto, digest });
    });
  }

  deleteRule(target: FirewallTarget, pos: number, digest: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('DELETE', `${this.#base(target)}/rules/${pos}`, { digest });
    });
  }

  readIpsets(target: FirewallTarget): Promise<Record<string, Digested<FirewallIpset>>> {
    return portCall(async () => {
      const list = z.array(IpsetItem).parse(await this.#client.request('GET', `${this.#base(target)}/ipset`));
      const out: Record<string, Digested<FirewallIpset>> = {};
      for (const item of list) {
        const raw = z.array(Entry).parse(await this.#client.request('GET', `${this.#base(target)}/ipset/${encodeURIComponent(item.name)}`));
        const entries = raw.map((e) => ({
          cidr: e.cidr,
          ...(e.nomatch ? { nomatch: true } : {}),
          ...(e.comment ? { comment: e.comment } : {}),
        }));
        out[item.name] = {
          value: { ...(item.comment ? { comment: item.comment } : {}), entries },
          digest: raw[0]?.digest ?? EMPTY_LIST_DIGEST,
        };
      }
      return out;
    });
  }

  createIpset(target: FirewallTarget, name: string, comment: string | undefined): Promise<void> {
    return portCall(async () => {
      await this.#client.request('POST', `${this.#base(target)}/ipset`, { name, comment });
    });
  }

  setIpsetComment(target: FirewallTarget, name: string, comment: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('POST', `${this.#base(target)}/ipset`, { name, rename: name, comment });
    });
  }

  deleteIpset(target: FirewallTarget, name: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('DELETE', `${this.#base(target)}/ipset/${encodeURIComponent(name)}`, { force: 1 });
    });
  }

  addIp(target: FirewallTarget, name: string, entry: FirewallIpEntry): Promise<void> {
    return portCall(async () => {
      await this.#client.request('POST', `${this.#base(target)}/ipset/${encodeURIComponent(name)}`, {
        cidr: entry.cidr,
        ...entryParams(entry),
      });
    });
  }

  updateIp(target: FirewallTarget, name: string, entry: FirewallIpEntry, digest: string): Promise<void> {
    return portCall(async () => {
      const path = `${this.#base(target)}/ipset/${encodeURIComponent(name)}/${encodeURIComponent(entry.cidr)}`;
      await this.#client.request('PUT', path, { ...entryParams(entry), digest });
    });
  }

  removeIp(target: FirewallTarget, name: string, cidr: string, digest: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('DELETE', `${this.#base(target)}/ipset/${encodeURIComponent(name)}/${encodeURIComponent(cidr)}`, {
        digest,
      });
    });
  }

  readAliases(target: FirewallTarget): Promise<Digested<Record<string, FirewallAlias>>> {
    return portCall(async () => {
      const raw = z.array(Alias).parse(await this.#client.request('GET', `${this.#base(target)}/aliases`));
      const value: Record<string, FirewallAlias> = {};
      for (const a of raw) value[a.name.toLowerCase()] = { name: a.name, cidr: a.cidr, ...(a.comment ? { comment: a.comment } : {}) };
      return { value, digest: raw[0]?.digest ?? EMPTY_LIST_DIGEST };
    });
  }

  createAlias(target: FirewallTarget, alias: FirewallAlias): Promise<void> {
    return portCall(async () => {
      await this.#client.request('POST', `${this.#base(target)}/aliases`, { name: alias.name, cidr: alias.cidr, comment: alias.comment });
    });
  }

  updateAlias(target: FirewallTarget, alias: FirewallAlias, digest: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('PUT', `${this.#base(target)}/aliases/${encodeURIComponent(alias.name)}`, {
        cidr: alias.cidr,
        comment: alias.comment,
        digest,
      });
    });
  }

  removeAlias(target: FirewallTarget, name: string, digest: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('DELETE', `${this.#base(target)}/aliases/${encodeURIComponent(name)}`, { digest });
    });
  }
}
