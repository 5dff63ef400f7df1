/**
 * The cluster facts of a rehearsal's copy (`core/rehearse/copy.ts`) read over the API, in
 * `3 + nodes` requests for the nodes of the touched guests (2 without one), whatever the size of the estate:
 * `GET /nodes` (CPUs), `GET /cluster/resources?type=storage` (per storage and node it is enabled
 * on: type, content, shared, bytes used and in all — RHM-6), per node
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
/** A `type=storage` entry of `/cluster/resources`: one per storage and node it is enabled on. */
interface StorageEntry {
  storage: string;
  node: string;
  plugintype?: string;
  content?: string;
  shared?: number;
  /** Bytes used and in all, from pvestatd's RRD; absent while the storage's status is `unknown`. */
  disk?: number;
  maxdisk?: number;
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
  const [listed, entries, perNode, pools, datacenter] = await Promise.all([
    get<NodeEntry[]>('/nodes'),
    // Only guests allocate on storages: a plan of other kinds alone needs none.
    nodes.length > 0 ? get<StorageEntry[]>('/cluster/resources', { type: 'storage' }) : [],
    Promise.all(
      nodes.map(async (node) => {
        const bridges = await get<NetworkEntry[]>(`/nodes/${encodeURIComponent(node)}/network`, { type: 'any_bridge' });
        return { node, bridges: bridges.map((b) => b.iface).sort() };
      }),
    ),
    // A token without Pool.Audit anywhere lists no pool: the copy then accepts any pool.
    unlessForbidden(get<PoolEntry[]>('/pools')).then((all) => all?.map((p) => p.poolid)),
    options.firewall ? firewall() : undefined,
  ]);
  return {
    nodes: listed.map((n) => ({ node: n.node, ...(typeof n.maxcpu === 'number' ? { cpus: n.maxcpu } : {}) })),
    storages: storageFacts(entries, listed.length, nodes),
    bridges: Object.fromEntries(perNode.map((n) => [n.node, n.bridges])),
    ...(pools ? { pools } : {}),
    ...(datacenter ? { firewall: datacenter } : {}),
    requests,
  };
}

/**
 * The storages of the copy from `/cluster/resources` entries: enabled on the nodes listed (all of
 * the cluster's `nodeCount`: no restriction), with their size and use where one figure holds for
 * every node the apply allocates on — a shared storage, or one enabled on only one of the
 * touched `nodes` (the simulator keeps one volume group per storage).
 */
function storageFacts(entries: readonly StorageEntry[], nodeCount: number, nodes: readonly string[]): StorageFact[] {
  const byId = new Map<string, StorageEntry[]>();
  for (const e of entries) byId.set(e.storage, [...(byId.get(e.storage) ?? []), e]);
  return [...byId.values()].map((on) => {
    const first = on[0] as StorageEntry;
    const touched = on.filter((e) => nodes.includes(e.node));
    const sized = first.shared === 1 ? first : touched.length === 1 ? touched[0] : undefined;
    return {
      storage: first.storage,
      type: first.plugintype ?? 'dir',
      content: (first.content ?? '').split(',').filter(Boolean).sort(),
      shared: first.shared === 1,
      ...(on.length === nodeCount ? {} : { nodes: on.map((e) => e.node) }),
      ...(sized?.maxdisk !== undefined && sized.disk !== undefined ? { total: sized.maxdisk, used: sized.disk } : {}),
    };
  });
}
