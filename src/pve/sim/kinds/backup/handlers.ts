/**
 * The backup-job kind's handlers (pve-manager `API2/Backup.pm`: `index`, `create_job`,
 * `read_job`, `update_job`, `delete_job`). Every write is synchronous under the `jobs.cfg` lock
 * and has no digest. A refusal raised inside the lock comes back as a plain 500 with the
 * exception stringified (`die "$@"` after `cfs_lock_file`), a parameter error included
 * (`400 Parameter verification failed.` then one `key: why` line each). A job holds exactly the
 * options it was given plus `enabled`; Proxmox fills in no other default
 * (docs/proxmox-behaviour.md, "Backup jobs").
 */
import { randomUUID } from 'node:crypto';
import { splitList } from '../../../../core/proxmox-params.js';
import { hasPrivilege } from '../../auth.js';
import { flag, param, type HandlerResult, type RequestContext } from '../../context.js';
import { ApiError, DieError, ParamError, PermissionError } from '../../errors.js';

/** Options a job may hold (pve-guest-common `VZDump/Common.pm` `$confdesc`, plus the job's own). */
const OPTIONS = new Set([
  'vmid',
  'node',
  'all',
  'stdexcludes',
  'compress',
  'pigz',
  'zstd',
  'quiet',
  'mode',
  'exclude',
  'exclude-path',
  'mailto',
  'mailnotification',
  'notification-mode',
  'tmpdir',
  'dumpdir',
  'script',
  'storage',
  'stop',
  'bwlimit',
  'ionice',
  'performance',
  'fleecing',
  'lockwait',
  'stopwait',
  'prune-backups',
  'remove',
  'pool',
  'notes-template',
  'protected',
  'pbs-change-detection-mode',
  'maxfiles',
  'schedule',
  'enabled',
  'comment',
  'repeat-missed',
]);
const BOOLEANS = new Set(['all', 'stdexcludes', 'quiet', 'stop', 'remove', 'protected', 'enabled', 'repeat-missed']);
const INTEGERS = new Set(['pigz', 'zstd', 'bwlimit', 'ionice', 'lockwait', 'stopwait', 'maxfiles']);
const ALL_DAYS = 'mon,tue,wed,thu,fri,sat,sun';

/** A job as the API returns it: booleans and integers as numbers, `prune-backups` as an object. */
function jobData(id: string, job: Record<string, string>): Record<string, unknown> {
  const data: Record<string, unknown> = { type: 'vzdump' };
  for (const [key, value] of Object.entries(job)) {
    if (BOOLEANS.has(key) || INTEGERS.has(key)) data[key] = Number(value);
    else if (key === 'prune-backups') {
      data[key] = Object.fromEntries(
        value
          .split(',')
          .map((p) => p.split('=', 2))
          .map(([k, v]) => [k, Number(v)]),
      );
    } else data[key] = value;
  }
  data.id = id;
  return data;
}

/** `GET /cluster/backup` (`index`): every vzdump job (`next-run` is left out). */
export function listJobs(ctx: RequestContext): HandlerResult {
  return { data: [...ctx.sim.backupJobs].map(([id, job]) => jobData(id, job)) };
}

/** `GET /cluster/backup/{id}` (`read_job`). */
export function readJob(ctx: RequestContext): HandlerResult {
  const id = param(ctx, 'id');
  const job = ctx.sim.backupJobs.get(id);
  if (!job) throw new ParamError({ id: `No such job '${id}'` });
  return { data: jobData(id, job) };
}

/** A refusal raised inside `cfs_lock_file` and re-died as a string (`die "$@" if $@`). */
function underJobsLock<T>(code: () => T): T {
  try {
    return code();
  } catch (err) {
    if (err instanceof ParamError)
      throw new DieError(
        `400 ${err.message}${Object.entries(err.errors)
          .map(([k, v]) => `${k}: ${v}\n`)
          .join('')}`,
      );
    if (err instanceof PermissionError) throw new DieError(`403 ${err.message}`);
    if (err instanceof ApiError) throw err;
    throw err;
  }
}

/** `check($user, $path, [$privilege])`. */
function check(ctx: RequestContext, path: string, privilege: string): void {
  if (!hasPrivilege(ctx.principal, path, privilege)) throw new PermissionError(`${path}, ${privilege}`);
}

/** `assert_param_permission_common`: no token is root@pam. */
function assertCommon(ctx: RequestContext, params: Record<string, string>): void {
  for (const key of ['tmpdir', 'dumpdir', 'script', 'job-id']) {
    if (params[key] !== undefined) throw new ParamError({ [key]: 'Only root may set this option.' });
  }
  if (['bwlimit', 'ionice', 'performance'].some((k) => params[k] !== undefined)) check(ctx, '/', 'Sys.Modify');
}

/** `get_storage_param`: none with a `dumpdir`, else the storage or `local`. */
function storageParam(job: Record<string, string>): string | undefined {
  if (job.dumpdir) return undefined;
  return job.storage || 'local';
}

/** The pool check of `create_job` and `update_job`: it must exist, and VM.Backup on it. */
function checkPool(ctx: RequestContext, pool: string | undefined): void {
  if (!pool) return;
  if (ctx.sim.strictPools && !ctx.sim.pools.has(pool)) throw new PermissionError(`pool '${pool}' does not exist`);
  check(ctx, `/pool/${pool}`, 'VM.Backup');
}

/** `$schedule_param_check`: `starttime` and `dow` become `schedule`. */
function scheduleCheck(params: Record<string, string>, required: boolean): void {
  if (params.schedule !== undefined) {
    if (params.starttime !== undefined) throw new ParamError({ starttime: "'starttime' and 'schedule' cannot both be set" });
  } else if (params.starttime === undefined) {
    if (required) throw new ParamError({ schedule: "neither 'starttime' nor 'schedule' were set" });
  } else {
    const dow = params.dow === undefined ? undefined : splitList(params.dow).join(',');
    params.schedule = !dow || dow === ALL_DAYS ? params.starttime : `${dow} ${params.starttime}`;
  }
  delete params.starttime;
  delete params.dow;
}

/** `verify_vzdump_parameters`. */
function verifyParameters(job: Record<string, string>, checkMissing: boolean): void {
  const set = (key: string) => job[key] !== undefined && job[key] !== '' && job[key] !== '0';
  if (set('all') && set('vmid')) throw new ParamError({ all: "option conflicts with option 'vmid'" });
  if (set('exclude') && set('vmid')) throw new ParamError({ exclude: "option conflicts with option 'vmid'" });
  if (set('pool') && set('vmid')) throw new ParamError({ pool: "option conflicts with option 'vmid'" });
  if (job.exclude !== undefined && !set('pool')) job.all = '1';
  if (checkMissing && !(set('all') || set('stop') || set('pool')) && !set('vmid')) throw new ParamError({ vmid: 'property is missing' });
}

/** A boolean as `check_config` stores it. */
function normalised(params: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params)) {
    out[key] = BOOLEANS.has(key) ? (/^(1|on|yes|true)$/i.test(value) ? '1' : '0') : value;
  }
  return out;
}

/** `POST /cluster/backup` (`create_job`). */
export function createJob(ctx: RequestContext): HandlerResult {
  const params = { ...ctx.params };
  assertCommon(ctx, params);
  const storage = storageParam(params);
  if (storage !== undefined) check(ctx, `/storage/${storage}`, 'Datastore.Allocate');
  checkPool(ctx, params.pool);
  scheduleCheck(params, true);
  if (params.enabled === undefined) params.enabled = '1';
  // Without an id Proxmox makes one up ("for api compatibility").
  const id = params.id ?? randomUUID();
  delete params.id;
  underJobsLock(() => {
    if (ctx.sim.backupJobs.has(id)) throw new DieError(`Job '${id}' already exists\n`);
    verifyParameters(params, true);
    ctx.sim.backupJobs.set(id, normalised(params));
  });
  return { data: null };
}

/** `PUT /cluster/backup/{id}` (`update_job`): each given option replaces the job's whole. */
export function updateJob(ctx: RequestContext): HandlerResult {
  const params = { ...ctx.params };
  const id = param(ctx, 'id');
  delete params.id;
  const remove = params.delete === undefined ? [] : splitList(params.delete);
  delete params.delete;
  const deleted = Object.fromEntries(remove.map((k) => [k, '1']));
  assertCommon(ctx, params);
  assertCommon(ctx, deleted);
  if (params.storage) check(ctx, `/storage/${params.storage}`, 'Datastore.Allocate');
  else if (deleted.storage) check(ctx, '/storage/local', 'Datastore.Allocate');
  checkPool(ctx, params.pool);
  scheduleCheck(params, false);
  underJobsLock(() => {
    if (Object.keys(params).length === 0 && remove.length === 0) throw new DieError('no options specified\n');
    verifyParameters({ ...params }, false);
    const current = ctx.sim.backupJobs.get(id);
    if (!current) throw new DieError('no such vzdump job\n');
    if (current.dumpdir) throw new DieError("only root@pam may edit jobs with a 'dumpdir' option.");
    const currentStorage = storageParam(current);
    if (currentStorage !== undefined) check(ctx, `/storage/${currentStorage}`, 'Datastore.Allocate');
    const job = { ...current };
    for (const key of remove) {
      if (!OPTIONS.has(key)) throw new ParamError({ delete: `unknown option '${key}'` });
      delete job[key];
    }
    Object.assign(job, normalised(params));
    if (job.exclude !== undefined && job.pool === undefined) job.all = '1';
    if (params.vmid !== undefined) {
      delete job.all;
      delete job.exclude;
      delete job.pool;
    } else if (flag(ctx, 'all')) {
      delete job.vmid;
      delete job.pool;
    } else if (job.pool) {
      delete job.vmid;
      delete job.all;
      delete job.exclude;
    }
    verifyParameters(job, true);
    ctx.sim.backupJobs.set(id, job);
  });
  return { data: null };
}

/** `DELETE /cluster/backup/{id}` (`delete_job`): the refusal for an unknown job is raised inside two locks. */
export function deleteJob(ctx: RequestContext): HandlerResult {
  const id = param(ctx, 'id');
  underJobsLock(() => {
    if (!ctx.sim.backupJobs.has(id)) throw new ParamError({ id: `No such job '${id}'` });
    ctx.sim.backupJobs.delete(id);
  });
  return { data: null };
}
