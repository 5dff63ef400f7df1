/**
 * Cluster-wide endpoints: `/version`, `/nodes`, `/cluster/resources`, `/cluster/nextid`, and the
 * task status/log of `/nodes/{node}/tasks/{upid}` (API-FACTS §7.3, §9, §10, §12).
 */
import { canSeeGuest } from './auth.js';
import { param, type HandlerResult, type RequestContext } from './context.js';
import { DieError, ParamError } from './errors.js';
import type { Guest } from './guest.js';
import { UPID_RE, type SimTask } from './tasks.js';

/** `GET /version`. */
export function getVersion(): HandlerResult {
  return { data: { version: '9.1.4', release: '9.1', repoid: '5a7f2c1e' } };
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

/** `GET /nodes`. */
export function getNodes(ctx: RequestContext): HandlerResult {
  return {
    data: ctx.sim.nodes.map((node, i) => ({
      ...nodeEntry(node, i),
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
 * (API-FACTS §10.1). Publishing happens at interval boundaries, as pvestatd's cycle does.
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

/** `GET /cluster/resources`: guests the principal may audit, plus nodes and storages. */
export function getClusterResources(ctx: RequestContext): HandlerResult {
  const type = ctx.params.type;
  const parts: string[] = [];
  if (type === undefined || type === 'vm') {
    for (const guest of ctx.sim.sortedGuests()) {
      if (canSeeGuest(ctx.principal, guest.vmid)) parts.push(resourceJson(guest, ctx.sim.rrdLagMs));
    }
  }
  if (type === undefined || type === 'node') {
    ctx.sim.nodes.forEach((node, i) => {
      parts.push(JSON.stringify({ ...nodeEntry(node, i), 'cgroup-mode': 2 }));
    });
  }
  if (type === undefined || type === 'storage') {
    for (const node of ctx.sim.nodes) {
      for (const storage of ctx.sim.volumes.storageIds()) {
        parts.push(
          JSON.stringify({
            id: `storage/${node}/${storage}`,
            storage,
            node,
            type: 'storage',
            status: 'available',
            plugintype: storage === 'local' ? 'dir' : 'lvmthin',
            content: storage === 'local' ? 'iso,vztmpl,backup' : 'rootdir,images',
            shared: 0,
            disk: 7 * 1024 ** 3,
            maxdisk: 500 * 1024 ** 3,
          }),
        );
      }
    }
  }
  return { json: `[${parts.join(',')}]` };
}

/** `GET /cluster/nextid`: the answer is a JSON string (API-FACTS §7.3). */
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

function findTask(ctx: RequestContext) {
  const upid = param(ctx, 'upid');
  if (!UPID_RE.test(upid)) throw new ParamError({ upid: 'unable to parse worker upid' });
  const task = ctx.sim.getTask(upid);
  // The log file lives on the task's node: asking another node finds nothing.
  if (!task || task.node !== param(ctx, 'node')) throw new ParamError({ upid: 'no such task' });
  return task;
}

/**
 * `GET /nodes/{node}/tasks`: the node's tasks, newest first, filtered by `vmid` and `source`
 * (`archive`, the default: finished ones; `active`: running ones; `all`). A finished task's
 * `status` is its exit status, as in Proxmox's task index; running ones have none.
 */
export function listTasks(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const vmid = ctx.params.vmid === undefined ? undefined : String(ctx.params.vmid);
  const source = String(ctx.params.source ?? 'archive');
  const start = Number(ctx.params.start ?? 0);
  const limit = Number(ctx.params.limit ?? 50);
  const data: Record<string, unknown>[] = [];
  for (const task of ctx.sim.tasks.list(node)) {
    if (vmid !== undefined && task.id !== vmid) continue;
    if (source === 'active' && task.status !== 'running') continue;
    if (source === 'archive' && task.status === 'running') continue;
    const entry: Record<string, unknown> = { ...taskIdentity(task), user: task.user };
    if (task.status === 'stopped') {
      entry.status = task.exitstatus;
      entry.endtime = task.endtime;
    }
    data.push(entry);
  }
  return { data: data.slice(start, start + limit), total: data.length };
}

/** The fields every task answer starts with: the decoded UPID. */
function taskIdentity(task: SimTask): Record<string, unknown> {
  const { upid, node, pid, pstart, starttime, type, id } = task;
  return { upid, node, pid, pstart, starttime, type, id };
}

/** `GET /nodes/{node}/tasks/{upid}/status` (§9.3): token tasks report `user` + `tokenid`. */
export function getTaskStatus(ctx: RequestContext): HandlerResult {
  const task = findTask(ctx);
  const bang = task.user.indexOf('!');
  const data: Record<string, unknown> = {
    ...taskIdentity(task),
    user: bang < 0 ? task.user : task.user.slice(0, bang),
    ...(bang < 0 ? {} : { tokenid: task.user.slice(bang + 1) }),
    status: task.status,
  };
  if (task.status === 'stopped') data.exitstatus = task.exitstatus;
  return { data };
}

/** `GET /nodes/{node}/tasks/{upid}/log` (§9.4): `{"data":[{n,t}],"total":N}`. */
export function getTaskLog(ctx: RequestContext): HandlerResult {
  const task = findTask(ctx);
  const start = Number(ctx.params.start ?? 0);
  const limit = Number(ctx.params.limit ?? 50);
  const lines = task.lines;
  const data =
    lines.length === 0 ? [{ n: 1, t: 'no content' }] : lines.slice(start, start + limit).map((t, i) => ({ n: start + i + 1, t }));
  return { data, total: Math.max(lines.length, 1) };
}
