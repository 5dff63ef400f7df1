/**
 * The simulated guest firewall files, `/etc/pve/firewall/<vmid>.fw` (pve-firewall `Firewall.pm`,
 * `load_vmfw_conf`, `save_vmfw_conf`): one file per VMID with its options, its rules in order,
 * its IPsets and its aliases, kept as Proxmox reads them back after a write (a rule's `enable`
 * always set, IPset entries sorted by CIDR, `/32` dropped from an alias). The digests are
 * `copy_opject_with_digest` and `copy_list_with_digest`: SHA-1 over each entry's sorted
 * `key:value` lines. A file separate from the guest config, so its digests are its own.
 * `copyFirewall` is the clone's `clone_vmfw_conf`, `dropFirewall` the destroy's
 * `remove_vmfw_conf` (docs/proxmox-behaviour.md, FW-1…). Tests reach it through `firewallFile`.
 */
import { createHash } from 'node:crypto';
import type { Simulator } from '../../simulator.js';

/** One rule as stored: `type`, `action`, `enable` and the optional fields, all as strings or numbers. */
export type SimRule = Record<string, string | number>;

/** One IPset entry. */
export interface SimIpsetEntry {
  cidr: string;
  nomatch?: 1;
  comment?: string;
}

/** One IPset: its entries and the comment on its header line. */
export interface SimIpset {
  entries: SimIpsetEntry[];
  comment?: string;
}

/** One alias, keyed by its lower-case name; `name` keeps the case it was written in. */
export interface SimAlias {
  name: string;
  cidr: string;
  ipversion: number;
  comment?: string;
}

/** One guest's firewall file. */
export class SimFirewallFile {
  options: Record<string, string | number> = {};
  rules: SimRule[] = [];
  readonly ipsets = new Map<string, SimIpset>();
  readonly aliases = new Map<string, SimAlias>();

  /** Whether `save_vmfw_conf` would write anything (an empty file is unlinked). */
  empty(): boolean {
    return Object.keys(this.options).length === 0 && this.rules.length === 0 && this.ipsets.size === 0 && this.aliases.size === 0;
  }

  clone(): SimFirewallFile {
    const copy = new SimFirewallFile();
    copy.options = { ...this.options };
    copy.rules = this.rules.map((r) => ({ ...r }));
    for (const [name, set] of this.ipsets) copy.ipsets.set(name, { ...set, entries: set.entries.map((e) => ({ ...e })) });
    for (const [name, alias] of this.aliases) copy.aliases.set(name, { ...alias });
    return copy;
  }
}

/** `copy_opject_with_digest`: the SHA-1 of `key:value\n` over the sorted keys. */
export function objectDigest(object: Record<string, unknown>): string {
  const sha = createHash('sha1');
  for (const key of Object.keys(object).sort()) {
    const value = object[key];
    if (value !== undefined && value !== null) sha.update(`${key}:${String(value)}\n`);
  }
  return sha.digest('hex');
}

/** `copy_list_with_digest`: one SHA-1 over every entry's sorted `key:value\n` lines, in list order. */
export function listDigest(list: readonly Record<string, unknown>[]): string {
  const sha = createHash('sha1');
  for (const entry of list)
    for (const key of Object.keys(entry).sort()) {
      const value = entry[key];
      if (value !== undefined && value !== null && typeof value !== 'object') sha.update(`${key}:${String(value)}\n`);
    }
  return sha.digest('hex');
}

/** `$get_ipset_list`: the IPsets by name (sorted) with their comments. */
export function ipsetList(file: SimFirewallFile): Record<string, string>[] {
  return [...file.ipsets.keys()].sort().map((name) => {
    const comment = file.ipsets.get(name)?.comment;
    const entry: Record<string, string> = { name };
    if (comment) entry.comment = comment;
    return entry;
  });
}

/** `$aliases_to_list`: the aliases sorted by their lower-case key. */
export function aliasList(file: SimFirewallFile): SimAlias[] {
  return [...file.aliases.keys()].sort().map((key) => file.aliases.get(key) as SimAlias);
}

const FILES = new WeakMap<Simulator, Map<number, SimFirewallFile>>();

function files(sim: Simulator): Map<number, SimFirewallFile> {
  let map = FILES.get(sim);
  if (!map) {
    map = new Map();
    FILES.set(sim, map);
  }
  return map;
}

/** The firewall file of `vmid` as `load_vmfw_conf` reads it: empty when there is none. */
export function firewallFile(sim: Simulator, vmid: number): SimFirewallFile {
  return files(sim).get(vmid)?.clone() ?? new SimFirewallFile();
}

/** Whether `vmid` has a firewall file. */
export function hasFirewallFile(sim: Simulator, vmid: number): boolean {
  return files(sim).has(vmid);
}

/** `save_vmfw_conf`: writes the file, or removes it when nothing is left in it. */
export function saveFirewallFile(sim: Simulator, vmid: number, file: SimFirewallFile): void {
  if (file.empty()) files(sim).delete(vmid);
  else files(sim).set(vmid, file.clone());
}

/** `clone_vmfw_conf($vmid, $newid)`: the target's file is replaced by a copy of the source's, or removed. */
export function copyFirewall(sim: Simulator, from: number, to: number): void {
  const source = files(sim).get(from);
  if (source) files(sim).set(to, source.clone());
  else files(sim).delete(to);
}

/** `remove_vmfw_conf($vmid)`: a destroyed guest's file goes with it. */
export function dropFirewall(sim: Simulator, vmid: number): void {
  files(sim).delete(vmid);
}

const CLUSTER_FILES = new WeakMap<Simulator, SimFirewallFile>();

/**
 * The datacenter's firewall file, `/etc/pve/firewall/cluster.fw` (`load_clusterfw_conf`), as far
 * as guests see it: its IPsets and aliases, which a guest's rule may name as well as its own
 * (`verify_rule`, RHK-5). The file itself, not a copy: tests and the rehearsal's copy fill it; the
 * simulator serves only its reads (RHK-4).
 */
export function clusterFirewall(sim: Simulator): SimFirewallFile {
  let file = CLUSTER_FILES.get(sim);
  if (!file) {
    file = new SimFirewallFile();
    CLUSTER_FILES.set(sim, file);
  }
  return file;
}
