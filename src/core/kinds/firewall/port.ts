/**
 * The firewall kind's port: what its observe and its executor need from a cluster, in the core's
 * words. Declared here, implemented over the Proxmox API by `pve/kinds/firewall-adapter.ts`.
 * Every read that Proxmox gives a digest carries it, and every write that Proxmox checks a digest
 * on takes one. Failures are the core's port errors (`core/port-errors.ts`): a refused privilege is
 * a `PermissionDeniedError`, a stale digest a `DigestConflictError`, every other refusal a
 * `PortError` with Proxmox's own text.
 */

/** Which guest's file: its node (where the API proxies to), its flavour and its VMID. */
export interface FirewallTarget {
  node: string;
  type: 'qemu' | 'lxc';
  vmid: number;
}

/** One rule as the kind compares it: `enable` a boolean, every other field as Proxmox stores it. */
export interface FirewallRule {
  type: string;
  action: string;
  enable: boolean;
  macro?: string;
  iface?: string;
  source?: string;
  dest?: string;
  proto?: string;
  dport?: string;
  sport?: string;
  log?: string;
  'icmp-type'?: string;
  comment?: string;
}

/** The optional fields of a rule, in the order the file writes them. */
export const RULE_FIELDS = ['macro', 'iface', 'source', 'dest', 'proto', 'dport', 'sport', 'log', 'icmp-type', 'comment'] as const;
export type RuleField = (typeof RULE_FIELDS)[number];

/** An IPset entry. */
export interface FirewallIpEntry {
  cidr: string;
  nomatch?: boolean;
  comment?: string;
}

/** An IPset with its entries (sorted by CIDR, as the file keeps them). */
export interface FirewallIpset {
  comment?: string;
  entries: FirewallIpEntry[];
}

/** An alias; `name` as written (Proxmox keys aliases by the lower-case name). */
export interface FirewallAlias {
  name: string;
  cidr: string;
  comment?: string;
}

/** The guest-level options this kind manages: booleans and the policy and log-level words. */
export type FirewallOptions = Record<string, boolean | string>;

/** A section read with the digest its writes check. */
export interface Digested<T> {
  value: T;
  digest: string;
}

/** The cluster as the firewall kind reads and writes it. */
export interface FirewallPort {
  /** Where each guest of the cluster is (VMID → node and flavour), from the cluster's resource list. */
  guestLocations(): Promise<Map<number, { node: string; type: 'qemu' | 'lxc' }>>;
  readOptions(target: FirewallTarget): Promise<Digested<FirewallOptions>>;
  /** Sets `set`, deletes `remove`, refused (DigestConflictError) when the options moved past `digest`. */
  setOptions(target: FirewallTarget, set: FirewallOptions, remove: readonly string[], digest: string): Promise<void>;
  /** The rules in order, with the one digest of the whole list. */
  readRules(target: FirewallTarget): Promise<Digested<FirewallRule[]>>;
  /** `POST rules`: inserted at position 0. Proxmox checks no digest here: the caller re-reads to confirm. */
  createRule(target: FirewallTarget, rule: FirewallRule): Promise<void>;
  /** Replaces the rule at `pos` with `rule` (fields it lacks are deleted), checked against `digest`. */
  updateRule(target: FirewallTarget, pos: number, rule: FirewallRule, digest: string): Promise<void>;
  /** Moves the rule at `pos` to end up before the rule now at `moveto` (past the end: last), checked against `digest`. */
  moveRule(target: FirewallTarget, pos: number, moveto: number, digest: string): Promise<void>;
  deleteRule(target: FirewallTarget, pos: number, digest: string): Promise<void>;
  /** Every IPset by name with its entries, and the digest of each set's entries. */
  readIpsets(target: FirewallTarget): Promise<Record<string, Digested<FirewallIpset>>>;
  createIpset(target: FirewallTarget, name: string, comment: string | undefined): Promise<void>;
  /** Sets the comment of an IPset (Proxmox's rename to the same name). */
  setIpsetComment(target: FirewallTarget, name: string, comment: string): Promise<void>;
  /** Removes an IPset with whatever entries it still holds. */
  deleteIpset(target: FirewallTarget, name: string): Promise<void>;
  addIp(target: FirewallTarget, name: string, entry: FirewallIpEntry): Promise<void>;
  updateIp(target: FirewallTarget, name: string, entry: FirewallIpEntry, digest: string): Promise<void>;
  removeIp(target: FirewallTarget, name: string, cidr: string, digest: string): Promise<void>;
  /** The aliases by lower-case name, with the digest of the list. */
  readAliases(target: FirewallTarget): Promise<Digested<Record<string, FirewallAlias>>>;
  createAlias(target: FirewallTarget, alias: FirewallAlias): Promise<void>;
  updateAlias(target: FirewallTarget, alias: FirewallAlias, digest: string): Promise<void>;
  removeAlias(target: FirewallTarget, name: string, digest: string): Promise<void>;
}
