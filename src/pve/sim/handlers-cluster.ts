/**
 * Cluster-wide endpoints: `/version`, `/nodes`, `/cluster/resources`, `/cluster/nextid`, and the
 * task status/log of `/nodes/{node}/tasks/{upid}` (docs/proxmox-api.md#next-free-vmid,
 * #tasks-and-upids, #cluster-resources, #nodes-and-version).
 */
import { splitList } from '../../core/proxmox-params.js';
import { canSeeGuest, hasPrivilege } from './auth.js';
import { param, type HandlerResult, type RequestContext } from './context.js';
import { DieError, ParamError, PermissionError } from './errors.js';
import type { Guest } from './guest.js';
import { contentString, poolVisible } from './handlers-storage.js';
import type { SimStorage } from './volumes.js';
import { UPID_RE, type SimTask } from './tasks.js';

const VERSION = { version: '9.1.4', release: '9.1', repoid: '5a7f2c1e' };

/** `GET /version`. */
export function getVersion(): HandlerResult {
  return { data: VERSION };
}

const NODE_MAXMEM = 128 * 1024 ** 3;
const NODE_MAXDISK = 100 * 1024 ** 3;
const NODE_MAXCPU = 32;
const NODE_BOOT = Date.now() - 12 * 86_400_000;

function nodeEntry(node: string, index: number): Record<string, unknown> {
  return {
    id: `node/${node}`,
    node,
    type: 'node',
    status: 'online',
    uptime: Math.floor((Date.now() - NODE_BOOT) / 1000) + index * 3600,
    cpu: 0.031 + index * 0.007,
    maxcpu: NODE_MAXCPU,
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
  const entry = nodeEntry(node, index);
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

interface CachedResource {
  version: number;
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
 * version and 10 s uptime bucket, which keeps a 10,000-guest listing cheap.
 */
function resourceJson(guest: Guest, lagMs: number): string {
  const bucket = Math.floor(Date.now() / 10_000);
  const cached = resourceCache.get(guest);
  if (lagMs <= 0 && cached && cached.version === guest.version && cached.bucket === bucket) return cached.json;
  const s = guest.summary();
  const running = guest.running;
  const rrd = rrdView(guest, lagMs, { status: running ? 'running' : 'stopped', name: s.name });
  const entry: Record<string, unknown> = {
    id: `${guest.type}/${guest.vmid}`,
    vmid: guest.vmid,
    node: guest.node,
    type: guest.type,
    status: rrd.status,
    ...(rrd.name !== undefined ? { name: rrd.name } : {}),
    template: s.template ? 1 : 0,
    uptime: guest.uptime(),
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
    ...(guest.type === 'qemu' ? { memhost: running ? Math.floor(s.maxmem * 0.43) : 0 } : {}),
    ...(s.lock !== undefined ? { lock: s.lock } : {}),
    ...(s.tags !== undefined ? { tags: s.tags } : {}),
  };
  const json = JSON.stringify(entry);
  if (lagMs <= 0) resourceCache.set(guest, { version: guest.version, bucket, json });
  return json;
}

/**
 * `GET /cluster/resources`: pools it holds Pool.Audit on, guests it may audit (with `pool` where
 * it holds Pool.Audit), nodes (statistics only with Sys.Audit), and per node the storages it
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
      parts.push(pool === undefined ? json : `${json.slice(0, -1)},"pool":${JSON.stringify(pool)}}`);
    }
  }
  if (type === undefined || type === 'node') {
    ctx.sim.nodes.forEach((node, i) => {
      parts.push(JSON.stringify({ ...auditedNodeEntry(ctx, node, i), 'cgroup-mode': 2 }));
    });
  }
  if (type === undefined || type === 'storage') {
    for (const node of ctx.sim.nodes) {
      for (const id of ctx.sim.volumes.storageIds()) {
        if (!hasPrivilege(ctx.principal, `/storage/${id}`, 'Datastore.Audit')) continue;
        const storage = ctx.sim.volumes.storage(id) as SimStorage;
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

/** `$check_task_user`: a token sees its own tasks; a user its own and its tokens'. */
function ownsTask(ctx: RequestContext, task: SimTask): boolean {
  return task.user === ctx.principal.token.id;
}

/** Task status and log: the owner, or Sys.Audit on the node. */
function assertTaskAccess(ctx: RequestContext, task: SimTask): void {
  const node = param(ctx, 'node');
  if (!ownsTask(ctx, task) && !hasPrivilege(ctx.principal, `/nodes/${node}`, 'Sys.Audit')) {
    throw new PermissionError(`/nodes/${node}, Sys.Audit`);
  }
}

function findTask(ctx: RequestContext) {
  const upid = param(ctx, 'upid');
  if (!UPID_RE.test(upid)) throw new ParamError({ upid: 'unable to parse worker upid' });
  const task = ctx.sim.getTask(upid);
  // The log file lives on the task's node: asking another node finds nothing.
  if (!task || task.node !== param(ctx, 'node')) throw new ParamError({ upid: 'no such task' });
  assertTaskAccess(ctx, task);
  return task;
}

/** `upid_normalize_status_type`. */
function statusType(status: string | undefined): string {
  if (!status) return 'unknown';
  if (status === 'OK') return 'ok';
  if (/^WARNINGS: \d+$/.test(status)) return 'warning';
  if (status === 'unexpected status') return 'unknown';
  return 'error';
}

/** A token task's `user` split into user and `tokenid` (`$convert_token_task`). */
function taskUser(task: SimTask): { user: string; tokenid?: string } {
  const bang = task.user.indexOf('!');
  return bang < 0 ? { user: task.user } : { user: task.user.slice(0, bang), tokenid: task.user.slice(bang + 1) };
}

/**
 * `GET /nodes/{node}/tasks` (pve-manager `API2/Tasks.pm`, `node_tasks`): running tasks first
 * (`source=active|all`, status `RUNNING`, user as written in the UPID), then finished ones newest
 * first (`source=archive|all`, token tasks with `user` and `tokenid`, `endtime`, `status` = exit
 * status). Filters: `userfilter` (substring, any case), `typefilter`, `vmid`, `since`/`until`
 * (start time), `statusfilter` or `errors`; without Sys.Audit on the node only the token's own
 * tasks. `total` counts every match, `start`/`limit` page them.
 */
export function listTasks(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const p = ctx.params;
  const start = Number(p.start ?? 0);
  let limit = Number(p.limit ?? 50);
  const source = p.source ?? 'archive';
  const errors = p.errors === '1';
  const statuses = new Set(['ok', 'warning', 'error', 'unknown']);
  if (p.statusfilter !== undefined && !errors) {
    statuses.clear();
    for (const f of splitList(p.statusfilter)) statuses.add(f.toLowerCase());
  } else if (errors) {
    statuses.delete('ok');
  }
  const auditor = hasPrivilege(ctx.principal, `/nodes/${node}`, 'Sys.Audit');
  let count = 0;
  const filtered = (task: SimTask, user: string, status: string | undefined): boolean => {
    if (p.userfilter && !user.toLowerCase().includes(p.userfilter.toLowerCase())) return true;
    if (!(auditor || ownsTask(ctx, task))) return true;
    if (p.typefilter && task.type !== p.typefilter) return true;
    if (p.vmid && (!task.id || task.id !== p.vmid)) return true;
    if (p.since !== undefined && task.starttime < Number(p.since)) return true;
    if (p.until !== undefined && task.starttime > Number(p.until)) return true;
    if (!statuses.has(statusType(status))) return true;
    if (count++ < start) return true;
    if (limit <= 0) return true;
    return false;
  };
  const data: Record<string, unknown>[] = [];
  const tasks = ctx.sim.tasks.list(node);
  if (source === 'active' || source === 'all') {
    for (const task of tasks) {
      if (task.status !== 'running') continue;
      // Active tasks are not converted: the user is the UPID's, token id included.
      if (filtered(task, task.user, 'RUNNING')) continue;
      data.push({ ...taskIdentity(task), user: task.user, status: 'RUNNING' });
      limit--;
    }
  }
  if (source !== 'active') {
    for (const task of tasks) {
      if (task.status === 'running') continue;
      const who = taskUser(task);
      if (filtered(task, who.user, task.exitstatus)) continue;
      data.push({ ...taskIdentity(task), ...who, endtime: task.endtime, status: task.exitstatus });
      limit--;
    }
  }
  return { data, total: count };
}

/** The fields every task answer starts with: the decoded UPID. */
function taskIdentity(task: SimTask): Record<string, unknown> {
  const { upid, node, pid, pstart, starttime, type, id } = task;
  return { upid, node, pid, pstart, starttime, type, id };
}

/** `GET /nodes/{node}/tasks/{upid}/status`: token tasks report `user` + `tokenid`. */
export function getTaskStatus(ctx: RequestContext): HandlerResult {
  const task = findTask(ctx);
  const data: Record<string, unknown> = { ...taskIdentity(task), ...taskUser(task), status: task.status };
  if (task.status === 'stopped') data.exitstatus = task.exitstatus;
  return { data };
}

/**
 * `GET /nodes/{node}/tasks/{upid}/log` (`read_task_log`, `dump_logfile`): `{"data":[{n,t}],"total":N}`.
 * A UPID that parses but has no log file is no error here: one line `unable to open file - …`.
 * `limit=0` reads to the end; an empty log is one line `no content`.
 */
export function getTaskLog(ctx: RequestContext): HandlerResult {
  const upid = param(ctx, 'upid');
  if (!UPID_RE.test(upid)) throw new ParamError({ upid: 'unable to parse worker upid' });
  const task = ctx.sim.getTask(upid);
  const node = param(ctx, 'node');
  if (task) assertTaskAccess(ctx, task);
  else if (!upid.endsWith(`:${ctx.principal.token.id}:`) && !hasPrivilege(ctx.principal, `/nodes/${node}`, 'Sys.Audit')) {
    throw new PermissionError(`/nodes/${node}, Sys.Audit`);
  }
  if (!task || task.node !== node) return { data: [{ n: 1, t: 'unable to open file - No such file or directory' }], total: 1 };
  const start = Number(ctx.params.start ?? 0);
  const limit = Number(ctx.params.limit ?? 50);
  const lines = task.lines;
  if (lines.length === 0) return { data: [{ n: 1, t: 'no content' }], total: 1 };
  const page = limit === 0 ? lines.slice(start) : lines.slice(start, start + limit);
  return { data: page.map((t, i) => ({ n: start + i + 1, t })), total: lines.length };
}

/**
 * `GET /nodes/{node}/status` (pve-manager `API2/Nodes.pm`, `status`; Sys.Audit on the node is
 * checked before): the node's uptime, load, kernel, CPU, memory, swap and root file system, with
 * the same figures `/nodes` reports for it.
 */
export function getNodeStatus(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const entry = nodeEntry(node, Math.max(0, ctx.sim.nodes.indexOf(node)));
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
        cpus: NODE_MAXCPU,
        sockets: 2,
        cores: NODE_MAXCPU / 2,
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

/** How many finished tasks a node's broadcast task list keeps besides the running ones. */
const MAX_FINISHED = 25;

/**
 * `GET /cluster/tasks` (pve-manager `API2/Cluster.pm`, `tasks`): the task lists the nodes
 * broadcast (pve-common `RESTEnvironment.pm`, `active_workers`): per node the running tasks in
 * the order they started, then finished ones newest first, up to 25 in all; finished ones lose
 * `pid`, every one `pstart`. A token's `user` is split into `user` and `tokenid` before the
 * filter compares it with the caller, so without Sys.Audit on `/` a token sees none, not even
 * its own.
 */
export function listClusterTasks(ctx: RequestContext): HandlerResult {
  const all = hasPrivilege(ctx.principal, '/', 'Sys.Audit');
  const data: Record<string, unknown>[] = [];
  for (const node of ctx.sim.nodes) {
    const tasks = ctx.sim.tasks.list(node);
    const running = tasks.filter((t) => t.status === 'running').reverse();
    const finished = tasks
      .filter((t) => t.status !== 'running')
      .sort((a, b) => b.starttime - a.starttime)
      .slice(0, Math.max(0, MAX_FINISHED - running.length));
    for (const task of [...running, ...finished]) {
      const { upid, starttime, type, id } = task;
      const entry: Record<string, unknown> =
        task.status === 'running'
          ? { upid, node, pid: task.pid, starttime, type, id, ...taskUser(task) }
          : { upid, node, starttime, type, id, ...taskUser(task), saved: '1', endtime: task.endtime, status: task.exitstatus };
      if (all || entry.user === ctx.principal.token.id) data.push(entry);
    }
  }
  return { data };
}
