/**
 * The task kind's handlers: the task lists of `/nodes/{node}/tasks` and `/cluster/tasks`, and a
 * task's status and log under `/nodes/{node}/tasks/{upid}` (docs/proxmox-api.md#tasks-and-upids),
 * with who may see which task as Proxmox decides it.
 */
import { splitList } from '../../../../core/proxmox-params.js';
import { hasPrivilege } from '../../auth.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { ParamError, PermissionError } from '../../errors.js';
import { UPID_RE, type SimTask } from '../../tasks.js';

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
