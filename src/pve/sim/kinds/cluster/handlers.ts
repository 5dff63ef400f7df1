/**
 * The cluster kind's handlers: `/version`, `/nodes`, `/nodes/{node}/status`, `/cluster/status`,
 * `/cluster/resources` and `/cluster/nextid` (docs/proxmox-api.md#next-free-vmid,
 * #cluster-resources, #nodes-and-version). Tasks are their own kind (`kinds/task`).
 */
import { canSeeGuest, hasPrivilege } from '../../auth.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, ParamError } from '../../errors.js';
import type { Guest } from '../../guest/guest.js';
import { flavourOf } from '../../guest/flavours.js';
import type { SimStorage } from '../../volumes.js';
import { haState } from '../ha/handlers.js';
import { poolVisible } from '../pool/handlers.js';
import { contentString } from '../storage/handlers.js';

const VERSION = { version: '9.1.4', release: '9.1', repoid: '5a7f2c1e' };

/** `GET /version`. */
export function getVersion(): HandlerResult {
  return { data: VERSION };
}

const NODE_MAXMEM = 128 * 1024 ** 3;
const NODE_MAXDISK = 100 * 1024 ** 3;
const NODE_BOOT = Date.now() - 12 * 86_400_000;

function nodeEntry(node: string, index: number, cpus: number): Record<string, unknown> {
  return {
    id: `node/${node}`,
    node,
    type: 'node',
    status: 'online',
    uptime: Math.floor((Date.now() - NODE_BOOT) / 1000) + index * 3600,
    cpu: 0.031 + index * 0.007,
    maxcpu: cpus,
    mem: 23 * 1024 ** 3 + index * 1024 ** 3,
    maxmem: NODE_MAXMEM,
    disk: 11 * 1024 ** 3,
    maxdisk: NODE_MAXDISK,
    level: '',
  };
}

/**
 * `extract_node_stats`: without Sys.Audit on the node only its id, name, type, status and level
 * (pve-manager `API2Tools.pm`).
 */
function auditedNodeEntry(ctx: RequestContext, node: string, index: number): Record<string, unknown> {
  const entry = nodeEntry(node, index, ctx.sim.nodeCpus(node));
  if (hasPrivilege(ctx.principal, `/nodes/${node}`, 'Sys.Audit')) return entry;
  const { id, type, status, level } = entry;
  return { id, node, type, status, level };
}

/** `GET /nodes`. */
export function getNodes(ctx: RequestContext): HandlerResult {
  return {
    data: ctx.sim.nodes.map((node, i) => ({
      ...auditedNodeEntry(ctx, node, i),
      ssl_fingerprint: 'AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89',
    })),
  };
}

/**
 * A guest's listing entry around its uptime, for the guest version and node it was built from,
 * and the whole entry of the 10 s uptime bucket it was last completed in.
 */
interface CachedResource {
  version: number;
  node: string;
  /** The entry up to `"uptime":`, and from the comma after the uptime on. */
  head: string;
  tail: string;
  bucket: number;
  json: string;
}

const resourceCache = new WeakMap<Guest, CachedResource>();

/** What pvestatd last published for a guest (the RRD-backed name and power state), and when. */
interface Published {
  at: number;
  status: 'running' | 'stopped' | 'unknown';
  name?: string;
}
const published = new WeakMap<Guest, Published>();

/**
 * The name and power state the listing shows. Live by default; with an RRD lag they are what was
 * published in the current interval, and a guest not yet published is `unknown` without a name
 * (docs/proxmox-api.md#cluster-resources). Publishing happens at interval boundaries, as pvestatd's cycle does.
 */
function rrdView(guest: Guest, lagMs: number, live: { status: 'running' | 'stopped'; name: string }): Omit<Published, 'at'> {
  if (lagMs <= 0) return live;
  const now = Date.now();
  const last = published.get(guest);
  if (!last) {
    const first: Published = { at: now, status: 'unknown' };
    published.set(guest, first);
    return first;
  }
  if (Math.floor(now / lagMs) > Math.floor(last.at / lagMs)) {
    const next: Published = { at: now, ...live };
    published.set(guest, next);
    return next;
  }
  return last;
}

/**
 * One `type=vm` entry (`extract_vm_stats` + live `lock`/`tags`). Name and status come through
 * {@link rrdView}: live unless the simulator has an RRD lag set. Entries are cached per guest
 * version and 10 s uptime bucket, which keeps a 10,000-guest listing cheap; a new bucket of the
 * same version only puts the uptime of that moment between the cached parts around it.
 */
function resourceJson(guest: Guest, lagMs: number): string {
  const bucket = Math.floor(Date.now() / 10_000);
  const cached = resourceCache.get(guest);
  if (lagMs <= 0 && cached && cached.version === guest.version && cached.node === guest.node) {
    if (cached.bucket !== bucket) {
      cached.bucket = bucket;
      cached.json = `${cached.head}${guest.uptime()}${cached.tail}`;
    }
    return cached.json;
  }
  const s = guest.summary();
  const running = guest.running;
  const rrd = rrdView(guest, lagMs, { status: running ? 'running' : 'stopped', name: s.name });
  const before: Record<string, unknown> = {
    id: `${guest.type}/${guest.vmid}`,
    vmid: guest.vmid,
    node: guest.node,
    type: guest.type,
    status: rrd.status,
    ...(rrd.name !== undefined ? { name: rrd.name } : {}),
    template: s.template ? 1 : 0,
  };
  const uptime = guest.uptime();
  const after: Record<string, unknown> = {
    maxcpu: s.cpus,
    cpu: running ? 0.0123 : 0,
    maxmem: s.maxmem,
    mem: running ? Math.floor(s.maxmem * 0.41) : 0,
    maxdisk: s.maxdisk,
    disk: 0,
    netin: running ? 1_234_567 : 0,
    netout: running ? 765_432 : 0,
    diskread: running ? 98_765_432 : 0,
    diskwrite: running ? 12_345_678 : 0,
    ...(flavourOf(guest.type).reportsMemhost ? { memhost: running ? Math.floor(s.maxmem * 0.43) : 0 } : {}),
    ...(s.lock !== undefined ? { lock: s.lock } : {}),
    ...(s.tags !== undefined ? { tags: s.tags } : {}),
  };
  const head = `${JSON.stringify(before).slice(0, -1)},"uptime":`;
  const tail = `,${JSON.stringify(after).slice(1)}`;
  const json = `${head}${uptime}${tail}`;
  if (lagMs <= 0) resourceCache.set(guest, { version: guest.version, node: guest.node, head, tail, bucket, json });
  return json;
}

/**
 * `GET /cluster/resources`: pools it holds Pool.Audit on, guests it may audit (with `pool` where
 * it holds Pool.Audit, and `hastate` for an HA-managed one), nodes (statistics only with Sys.Audit), and per node the storages it
 * holds Datastore.Audit on.
 */
export function getClusterResources(ctx: RequestContext): HandlerResult {
  const type = ctx.params.type;
  const parts: string[] = [];
  // Pools come first (without the member statistics Proxmox sums up for running members).
  if (type === undefined || type === 'pool') {
    for (const id of [...ctx.sim.pools.keys()].sort()) {
      if (!hasPrivilege(ctx.principal, `/pool/${id}`, 'Pool.Audit')) continue;
      parts.push(JSON.stringify({ id: `/pool/${id}`, pool: id, type: 'pool' }));
    }
  }
  if (type === undefined || type === 'vm') {
    for (const guest of ctx.sim.sortedGuests()) {
      if (!canSeeGuest(ctx.principal, guest.vmid)) continue;
      const json = resourceJson(guest, ctx.sim.rrdLagMs);
      const pool = poolVisible(ctx, guest.vmid);
      const hastate = haState(ctx, guest.type, guest.vmid);
      const extra = `${pool === undefined ? '' : `,"pool":${JSON.stringify(pool)}`}${hastate === undefined ? '' : `,"hastate":${JSON.stringify(hastate)}`}`;
      parts.push(extra === '' ? json : `${json.slice(0, -1)}${extra}}`);
    }
  }
  if (type === undefined || type === 'node') {
    ctx.sim.nodes.forEach((node, i) => {
      parts.push(JSON.stringify({ ...auditedNodeEntry(ctx, node, i), 'cgroup-mode': 2 }));
    });
  }
  if (type === undefined || type === 'storage') {
    // Per storage, then per node (`foreach my $storeid (@sids) { foreach my $node … } }`); real
    // Proxmox takes the storages in hash order, the simulator in `storage.cfg`'s.
    for (const id of ctx.sim.volumes.storageIds()) {
      if (!hasPrivilege(ctx.principal, `/storage/${id}`, 'Datastore.Audit')) continue;
      const storage = ctx.sim.volumes.storage(id) as SimStorage;
      for (const node of ctx.sim.nodes) {
        // `storage_check_enabled`: no entry on a node the storage is not enabled on (RHM-4).
        if (storage.nodes && !storage.nodes.has(node)) continue;
        parts.push(
          JSON.stringify({
            id: `storage/${node}/${id}`,
            storage: id,
            node,
            type: 'storage',
            status: 'available',
            plugintype: storage.type,
            content: contentString(storage),
            shared: storage.shared ? 1 : 0,
            disk: ctx.sim.volumes.used(id),
            maxdisk: storage.total,
          }),
        );
      }
    }
  }
  return { json: `[${parts.join(',')}]` };
}

/** `GET /cluster/nextid`: the answer is a JSON string (docs/proxmox-api.md#next-free-vmid). */
export function getNextId(ctx: RequestContext): HandlerResult {
  const requested = ctx.params.vmid;
  if (requested !== undefined && requested !== '' && requested !== '0') {
    if (!ctx.sim.guests.has(Number(requested))) return { data: requested };
    throw new ParamError({ vmid: `VM ${requested} already exists` });
  }
  const { lower, upper } = ctx.sim.nextId;
  for (let id = lower; id < upper; id++) if (!ctx.sim.guests.has(id)) return { data: String(id) };
  throw new DieError(`unable to get any free VMID in range [${lower}, ${upper}]\n`);
}

/**
 * `GET /nodes/{node}/status` (pve-manager `API2/Nodes.pm`, `status`; Sys.Audit on the node is
 * checked before): the node's uptime, load, kernel, CPU, memory, swap and root file system, with
 * the same figures `/nodes` reports for it.
 */
export function getNodeStatus(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const entry = nodeEntry(node, Math.max(0, ctx.sim.nodes.indexOf(node)), ctx.sim.nodeCpus(node));
  const mem = entry.mem as number;
  return {
    data: {
      // `idle` is initialised and never set: read_proc_uptime's second value is not kept.
      uptime: entry.uptime,
      idle: 0,
      loadavg: ['0.42', '0.37', '0.35'],
      kversion: 'Linux 6.14.11-4-pve #1 SMP PREEMPT_DYNAMIC PMX 6.14.11-4 (2025-10-10T08:04Z)',
      'current-kernel': {
        sysname: 'Linux',
        release: '6.14.11-4-pve',
        version: '#1 SMP PREEMPT_DYNAMIC PMX 6.14.11-4 (2025-10-10T08:04Z)',
        machine: 'x86_64',
      },
      'boot-info': { mode: 'efi', secureboot: 0 },
      cpuinfo: {
        user_hz: 100,
        vendor: 'GenuineIntel',
        family: '6',
        model: 'Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz',
        mhz: '2400.000',
        cpus: ctx.sim.nodeCpus(node),
        sockets: 2,
        cores: ctx.sim.nodeCpus(node) / 2,
        flags: 'fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov vmx smx est',
        hvm: '1',
      },
      cpu: entry.cpu,
      wait: 0.0004,
      memory: { total: NODE_MAXMEM, used: mem, free: NODE_MAXMEM - mem, available: NODE_MAXMEM - mem },
      ksm: { shared: 0 },
      swap: { total: 8 * 1024 ** 3, used: 0, free: 8 * 1024 ** 3 },
      pveversion: `pve-manager/${VERSION.version}/${VERSION.repoid}`,
      rootfs: {
        total: NODE_MAXDISK,
        used: entry.disk,
        avail: NODE_MAXDISK - (entry.disk as number),
        free: NODE_MAXDISK - (entry.disk as number),
      },
    },
  };
}

/**
 * `GET /cluster/status` (pve-manager `API2/Cluster.pm`, `get_status`; Sys.Audit on `/` is
 * checked before): with more than one node the cluster entry, then one entry per member, `local`
 * for the node that answers (the simulator answers as the first); a single node is the
 * stand-alone form, `nodeid` 0.
 */
export function getClusterStatus(ctx: RequestContext): HandlerResult {
  const nodes = ctx.sim.nodes;
  const ip = (i: number): string => `192.0.2.${11 + i}`;
  if (nodes.length === 1) {
    const name = nodes[0] as string;
    return { data: [{ type: 'node', id: `node/${name}`, name, ip: ip(0), local: 1, nodeid: 0, online: 1, level: '' }] };
  }
  return {
    data: [
      // A corosync config starts at version 1 and each node joining bumps it.
      { type: 'cluster', id: 'cluster', nodes: nodes.length, version: nodes.length, name: ctx.sim.clusterName, quorate: 1 },
      ...nodes.map((name, i) => ({
        type: 'node',
        id: `node/${name}`,
        name,
        nodeid: i + 1,
        local: i === 0 ? 1 : 0,
        online: 1,
        ip: ip(i),
        level: '',
      })),
    ],
  };
}
