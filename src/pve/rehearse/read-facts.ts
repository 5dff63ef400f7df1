/**
 * The cluster facts of a rehearsal's copy (`core/rehearse/copy.ts`) read over the API, in
 * `2 + 2 × nodes` requests for the nodes of the touched guests, whatever the size of the estate:
 * `GET /nodes` (CPUs), per node `GET /nodes/{node}/storage` (type, content, enabled there) and
 * `GET /nodes/{node}/network?type=any_bridge` (bridges and VNets), and `GET /pools`; 2 more,
 * `GET /cluster/firewall/ipset` and `GET /cluster/firewall/aliases`, when the plan writes a
 * guest's firewall rule. docs/rehearsal.md says what the facts leave out.
 */
import type { ClusterFacts, ClusterFirewallFacts, StorageFact } from '../../core/rehearse/copy.js';
import type { FactsOptions } from '../../core/rehearse/kinds-copy.js';
import type { PveClient } from '../client.js';
import { PveError } from '../errors.js';

interface NodeEntry {
  node: string;
  maxcpu?: number;
}
interface StorageEntry {
  storage: string;
  type?: string;
  content?: string;
  shared?: number;
  enabled?: number;
}
interface NetworkEntry {
  iface: string;
}
interface PoolEntry {
  poolid: string;
}
interface IpsetEntry {
  name: string;
}
interface AliasEntry {
  name: string;
  cidr: string;
}

/** A read the token may lack the privilege for: undefined then, as the copy can go without it. */
function unlessForbidden<T>(read: Promise<T>): Promise<T | undefined> {
  return read.catch((err: unknown) => {
    if (err instanceof PveError && err.status === 403) return undefined;
    throw err;
  });
}

/** Reads the facts of `nodes` (the nodes of the guests the plan touches), and what `options` asks for. */
export async function readClusterFacts(client: PveClient, nodes: readonly string[], options: FactsOptions = {}): Promise<ClusterFacts> {
  let requests = 0;
  const get = async <T>(path: string, params?: Record<string, string>): Promise<T> => {
    requests += 1;
    return client.request<T>('GET', path, params);
  };
  // The datacenter's IPsets and aliases (Sys.Audit on `/`); without them the copy knows only the guests' own.
  const firewall = async (): Promise<ClusterFirewallFacts | undefined> => {
    const [ipsets, aliases] = await Promise.all([
      unlessForbidden(get<IpsetEntry[]>('/cluster/firewall/ipset')),
      unlessForbidden(get<AliasEntry[]>('/cluster/firewall/aliases')),
    ]);
    if (!ipsets || !aliases) return undefined;
    return { ipsets: ipsets.map((s) => s.name), aliases: aliases.map((a) => ({ name: a.name, cidr: a.cidr })) };
  };
  const [listed, perNode, pools, datacenter] = await Promise.all([
    get<NodeEntry[]>('/nodes'),
    Promise.all(
      nodes.map(async (node) => {
        const path = `/nodes/${encodeURIComponent(node)}`;
        const [storages, bridges] = await Promise.all([
          get<StorageEntry[]>(`${path}/storage`),
          get<NetworkEntry[]>(`${path}/network`, { type: 'any_bridge' }),
        ]);
        return { node, storages, bridges: bridges.map((b) => b.iface).sort() };
      }),
    ),
    // A token without Pool.Audit anywhere lists no pool: the copy then accepts any pool.
    unlessForbidden(get<PoolEntry[]>('/pools')).then((all) => all?.map((p) => p.poolid)),
    options.firewall ? firewall() : undefined,
  ]);
  const storages = new Map<string, StorageFact & { on: string[] }>();
  for (const { node, storages: entries } of perNode) {
    for (const e of entries) {
      let fact = storages.get(e.storage);
      if (!fact) {
        fact = {
          storage: e.storage,
          type: e.type ?? 'dir',
          content: (e.content ?? '').split(',').filter(Boolean).sort(),
          shared: e.shared === 1,
          on: [],
        };
        storages.set(e.storage, fact);
      }
      if (e.enabled !== 0) fact.on.push(node);
    }
  }
  const all = listed.map((n) => n.node);
  // A storage enabled on none of the nodes read is on the others (or disabled) as far as the copy goes.
  const elsewhere = all.filter((n) => !nodes.includes(n));
  const placed = (on: string[]): string[] | undefined => (on.length === nodes.length ? undefined : on.length > 0 ? on : elsewhere);
  return {
    nodes: listed.map((n) => ({ node: n.node, ...(typeof n.maxcpu === 'number' ? { cpus: n.maxcpu } : {}) })),
    storages: [...storages.values()].flatMap(({ on, ...fact }) => {
      const where = placed(on);
      if (where === undefined) return [fact];
      return where.length > 0 ? [{ ...fact, nodes: where }] : [];
    }),
    bridges: Object.fromEntries(perNode.map((n) => [n.node, n.bridges])),
    ...(pools ? { pools } : {}),
    ...(datacenter ? { firewall: datacenter } : {}),
    requests,
  };
}
