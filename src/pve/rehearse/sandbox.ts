/**
 * The rehearsal's sandbox: one simulator per copied cluster (`sim/`), in this process, on a
 * loopback port, with tasks that finish at once and an HA manager that acts on a request at once,
 * started from the copy (`core/rehearse/copy.ts`) — its guests and facts as a fixture, its objects
 * of other kinds (`core/rehearse/kinds-copy.ts`) written into the simulator's HA, firewall and
 * backup-job state — and the same cluster adapter the real apply uses, over HTTP to it. Closing
 * stops them all.
 */
import type { FirewallState } from '../../core/kinds/firewall/state.js';
import type { OpenSandbox, RehearsalSandbox } from '../../core/ports.js';
import { type ClusterCopy, type GuestCopy, waitedOutLocks } from '../../core/rehearse/copy.js';
import type { KindsCopy } from '../../core/rehearse/kinds-copy.js';
import { PveClient } from '../client.js';
import { PveClusterAdapter } from '../cluster-adapter.js';
import { emptySection, type ParsedConfig, serializeConfig } from '../sim/config-file.js';
import { type RunningSimulator, startSimulator } from '../sim/index.js';
import { clusterFirewall, type SimAlias, saveFirewallFile, SimFirewallFile } from '../sim/kinds/firewall/state.js';
import { haManager } from '../sim/kinds/ha/manager.js';
import { haConfig } from '../sim/kinds/ha/state.js';
import type { SimFixture } from '../sim/schema.js';
import type { Simulator } from '../sim/simulator.js';

/** A guest's config file as the copy holds it: the values in effect, then `[PENDING]`. */
function rawConfig(guest: GuestCopy): string {
  const parsed: ParsedConfig = { main: emptySection(), pending: emptySection(), special: new Map(), snapshots: new Map() };
  for (const [key, value] of Object.entries(guest.current)) parsed.main.values.set(key, value);
  for (const [key, value] of Object.entries(guest.pending)) parsed.pending.values.set(key, value);
  if (guest.pendingDelete.length > 0) parsed.pending.values.set('delete', guest.pendingDelete.join(','));
  return serializeConfig(parsed, guest.type);
}

/** The pools as listed, with the members the plan read of those the specs name. */
function poolsOf(listed: readonly string[], objects: KindsCopy): NonNullable<SimFixture['pools']> {
  return [...new Set([...listed, ...Object.keys(objects.pools)])].sort().map((poolid) => {
    const read = objects.pools[poolid];
    return read ? { poolid, ...read } : poolid;
  });
}

/** A firewall file as `load_vmfw_conf` would read it back: booleans `1`/`0`, an alias's IP version. */
function firewallFileOf(state: FirewallState): SimFirewallFile {
  const file = new SimFirewallFile();
  const flag = (value: boolean | string): string | number => (typeof value === 'boolean' ? (value ? 1 : 0) : value);
  file.options = Object.fromEntries(Object.entries(state.options ?? {}).map(([key, value]) => [key, flag(value)]));
  file.rules = (state.rules ?? []).map((rule) => {
    const out: Record<string, string | number> = {};
    for (const [key, value] of Object.entries(rule)) if (value !== undefined) out[key] = flag(value);
    return out;
  });
  for (const [name, set] of Object.entries(state.ipsets ?? {}))
    file.ipsets.set(name, {
      ...(set.comment ? { comment: set.comment } : {}),
      entries: set.entries.map((e) => ({
        cidr: e.cidr,
        ...(e.nomatch ? { nomatch: 1 as const } : {}),
        ...(e.comment ? { comment: e.comment } : {}),
      })),
    });
  for (const [key, alias] of Object.entries(state.aliases ?? {})) file.aliases.set(key, simAlias(alias));
  return file;
}

/** An alias as the file keeps it: its IP version from its address. */
function simAlias(alias: { name: string; cidr: string; comment?: string }): SimAlias {
  return { ...alias, ipversion: alias.cidr.includes(':') ? 6 : 4 };
}

/** Writes the copy's objects of other kinds and the datacenter's IPsets and aliases into `sim`, as Proxmox keeps them. */
function seedObjects(sim: Simulator, objects: KindsCopy, facts: ClusterCopy['facts']): void {
  const datacenter = clusterFirewall(sim);
  for (const name of facts.firewall?.ipsets ?? []) datacenter.ipsets.set(name, { entries: [] });
  for (const alias of facts.firewall?.aliases ?? []) datacenter.aliases.set(alias.name.toLowerCase(), simAlias(alias));
  const ha = haConfig(sim);
  for (const { sid, ...fields } of objects.ha) {
    const options: Record<string, string> = {};
    for (const [key, value] of Object.entries(fields))
      if (value !== undefined) options[key] = typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
    ha.ids.set(sid, { type: sid.slice(0, sid.indexOf(':')), options });
  }
  for (const sid of objects.haErrors) ha.errorState.add(sid);
  // The copy's tasks finish at once; so do the HA manager's rounds (`setRoundMs(0)`).
  haManager(sim).setRoundMs(0);
  for (const [vmid, state] of Object.entries(objects.firewalls)) saveFirewallFile(sim, Number(vmid), firewallFileOf(state));
  for (const [id, values] of Object.entries(objects.backupJobs)) sim.backupJobs.set(id, { ...values });
}

/** The simulator fixture of one copied cluster. */
export function fixtureOf(copy: ClusterCopy): SimFixture {
  const { facts } = copy;
  const nodeCpus = Object.fromEntries(facts.nodes.flatMap((n) => (n.cpus !== undefined ? [[n.node, n.cpus]] : [])));
  return {
    clusterName: copy.cluster,
    nodes: facts.nodes.map((n) => n.node),
    // A storage whose free space the copy does not know is never full there.
    ...(facts.storages.length > 0
      ? { storages: facts.storages.map((s) => (s.total === undefined ? { ...s, total: Number.MAX_SAFE_INTEGER, used: 0 } : s)) }
      : {}),
    ...(facts.pools ? { pools: poolsOf(facts.pools, copy.objects) } : {}),
    bridges: facts.bridges,
    nodeCpus,
    guests: copy.guests.map((g) => ({ vmid: g.vmid, type: g.type, node: g.node, running: g.running, config: rawConfig(g) })),
  };
}

/** Starts the copies; see the file comment. */
export const openRehearsalSandbox: OpenSandbox = async (copies: readonly ClusterCopy[]): Promise<RehearsalSandbox> => {
  const running: RunningSimulator[] = [];
  const clients: PveClient[] = [];
  let closing: Promise<void> | undefined;
  // Idempotent, every step attempted: the clients first, then the simulators they talk to.
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await Promise.allSettled(clients.map((c) => c.close()));
      await Promise.allSettled(running.map((sim) => sim.close()));
    })();
    return closing;
  };
  try {
    const writers: RehearsalSandbox['writers'] = {};
    // The locks held when the plan was made: each ends once the apply has waited (the clock skipped).
    const planned: (() => void)[] = [];
    for (const copy of copies) {
      const sim = await startSimulator({ port: 0, taskMs: 0, fixture: fixtureOf(copy) });
      running.push(sim);
      for (const [vmid, lock] of waitedOutLocks(copy)) planned.push(() => sim.sim.endPlannedLock(vmid, lock));
      seedObjects(sim.sim, copy.objects, copy.facts);
      const client = new PveClient({ cluster: copy.cluster, url: sim.url, token: sim.token, retries: 0 });
      clients.push(client);
      writers[copy.cluster] = new PveClusterAdapter(client, { wait: { fastIntervalMs: 1, intervalMs: 5 } });
    }
    const skip = (): void => {
      for (const end of planned.splice(0)) end();
    };
    return { writers, skip, close };
  } catch (err) {
    await close();
    throw err;
  }
};
