/**
 * Per-guest reads and config writes: listings, `GET …/config` (pending merged unless
 * `current=1`, or a snapshot), `GET …/pending`, `GET …/status/current`, and `PUT`/`POST
 * …/config` with the digest, lock and pending semantics of docs/proxmox-api.md#config-reads, #the-digest, #config-updates.
 */
import type { GuestType } from '../../core/model.js';
import { canSeeGuest } from './auth.js';
import { underConfigLock } from './config-lock.js';
import { flag, param, type HandlerResult, type RequestContext } from './context.js';
import { DieError, ParamError } from './errors.js';
import { perlTrue, type Guest } from './guest.js';
import type { SimTask } from './tasks.js';
import {
  applyLxcUpdate,
  applyQemuUpdate,
  checkLxcConfig,
  checkLxcUpdateLists,
  checkQemuConfig,
  prepareLxcUpdate,
  prepareQemuUpdate,
  type ConfigUpdate,
  type UpdateOutcome,
} from './update.js';

function vmid(ctx: RequestContext): number {
  return Number(param(ctx, 'vmid'));
}

/** The guest the path addresses, or the missing-config error. */
export function pathGuest(ctx: RequestContext, type: GuestType): Guest {
  return ctx.sim.guestOnNode(type, param(ctx, 'node'), vmid(ctx));
}

/** Arms the operator edit of `editAfterNextRead` to land once this read is answered. */
function afterRead(ctx: RequestContext, guest: Guest): void {
  if (ctx.sim.hasArmedEdit(guest.vmid)) ctx.afterResponse(() => ctx.sim.fireArmedEdit(guest.vmid));
}

/** `vmstatus` of one guest, as the node listings and `status/current` return it. */
export function guestStatus(guest: Guest): Record<string, unknown> {
  const s = guest.summary();
  const running = guest.running;
  const common: Record<string, unknown> = {
    vmid: guest.vmid,
    name: s.name,
    status: running ? 'running' : 'stopped',
    cpus: s.cpus,
    maxmem: s.maxmem,
    maxdisk: s.maxdisk,
    disk: 0,
    uptime: guest.uptime(),
    cpu: running ? 0.0123 : 0,
    mem: running ? Math.floor(s.maxmem * 0.41) : 0,
    netin: running ? 1_234_567 : 0,
    netout: running ? 765_432 : 0,
    diskread: running ? 98_765_432 : 0,
    diskwrite: running ? 12_345_678 : 0,
    ...(running ? { pid: 10_000 + (guest.vmid % 50_000) } : {}),
    ...(s.template ? { template: 1 } : {}),
    ...(s.tags !== undefined ? { tags: s.tags } : {}),
    ...(s.lock !== undefined ? { lock: s.lock } : {}),
  };
  if (guest.type === 'lxc') {
    const swap = Number(guest.main.get('swap') ?? 512) * 1024 * 1024;
    return { ...common, type: 'lxc', maxswap: swap, swap: 0 };
  }
  // `conf_has_serial`: only a VM with a serial port (serial0…serial3) says so.
  const serial = [0, 1, 2, 3].some((i) => perlTrue(guest.main.get(`serial${i}`)));
  return { ...common, memhost: common.mem, ...(serial ? { serial: 1 } : {}) };
}

/** `GET /nodes/{node}/qemu` and `/lxc`: guests on that node the principal may audit. */
export function listGuests(type: GuestType) {
  return (ctx: RequestContext): HandlerResult => {
    const node = param(ctx, 'node');
    const full = flag(ctx, 'full');
    const data: Record<string, unknown>[] = [];
    for (const guest of ctx.sim.guests.values()) {
      if (guest.type !== type || guest.node !== node || !canSeeGuest(ctx.principal, guest.vmid)) continue;
      const entry = guestStatus(guest);
      if (type === 'qemu' && full) {
        entry.qmpstatus = guest.running ? 'running' : 'stopped';
        if (guest.running) Object.assign(entry, { 'running-machine': 'pc-i440fx-10.1+pve0', 'running-qemu': '10.1.2' });
      }
      data.push(entry);
    }
    return { data };
  };
}

/** `GET …/status/current`. */
export function getStatusCurrent(type: GuestType) {
  return (ctx: RequestContext): HandlerResult => {
    const guest = pathGuest(ctx, type);
    const status = guestStatus(guest);
    status.ha = { managed: 0 };
    if (type === 'qemu') {
      status.qmpstatus = guest.running ? 'running' : 'stopped';
      const agent = guest.main.get('agent');
      if (agent !== undefined && /^(1|enabled=1)/.test(agent)) status.agent = 1;
      if (guest.running) Object.assign(status, { 'running-machine': 'pc-i440fx-10.1+pve0', 'running-qemu': '10.1.2' });
    }
    return { data: status };
  };
}

/** `GET …/config`: `current=0` merges pending; `snapshot` reads a snapshot section. */
export function getConfig(type: GuestType) {
  return (ctx: RequestContext): HandlerResult => {
    const snapshot = ctx.params.snapshot;
    const current = flag(ctx, 'current');
    if (snapshot && current) {
      const text = "cannot use 'snapshot' parameter with 'current'";
      throw new ParamError({ snapshot: text, current: text });
    }
    const guest = pathGuest(ctx, type);
    afterRead(ctx, guest);
    if (snapshot) {
      const view = guest.snapshotView(snapshot);
      if (!view) throw new DieError(`snapshot '${snapshot}' does not exist\n`);
      return { data: view };
    }
    return { json: guest.cachedJson(current ? 'config-current' : 'config', () => guest.configView(current)) };
  };
}

/** `GET …/pending`. */
export function getPending(type: GuestType) {
  return (ctx: RequestContext): HandlerResult => {
    const guest = pathGuest(ctx, type);
    afterRead(ctx, guest);
    return { json: guest.cachedJson('pending', () => guest.pendingView()) };
  };
}

/** Splits validated request params into the update's parts. */
function configUpdate(ctx: RequestContext): ConfigUpdate {
  const set: Record<string, string> = {};
  const meta = new Set(['node', 'vmid', 'delete', 'revert', 'force', 'digest', 'skiplock', 'background_delay', 'import-working-storage']);
  for (const [key, value] of Object.entries(ctx.params)) if (!meta.has(key)) set[key] = value;
  return {
    set,
    ...(ctx.params.delete !== undefined ? { delete: ctx.params.delete } : {}),
    ...(ctx.params.revert !== undefined ? { revert: ctx.params.revert } : {}),
    force: flag(ctx, 'force'),
    ...(ctx.params.digest ? { digest: ctx.params.digest } : {}),
    skiplock: flag(ctx, 'skiplock'),
  };
}

/**
 * `PUT`/`POST /nodes/{node}/qemu/{vmid}/config`. The checks up to the lock run at once for both
 * (`$load_and_check_config->(0)`); then the update runs under the config lock, which checks the
 * digest and the lock again: PUT waits for the lock and updates inline (hotplug errors → 400),
 * POST forks a `qmconfig` worker that takes the lock and writes before the UPID is answered
 * (pve-common `RESTEnvironment.pm`, `fork_worker`), so a PUT sent right after waits for it and
 * lands last.
 */
export function updateQemuConfig(async: boolean) {
  return (ctx: RequestContext): HandlerResult | Promise<HandlerResult> => {
    const prepared = prepareQemuUpdate(configUpdate(ctx), { principal: ctx.principal }, vmid(ctx));
    const guest = pathGuest(ctx, 'qemu');
    checkQemuConfig(guest, prepared.digest, prepared.skiplock, prepared.set);
    const update = (): UpdateOutcome => {
      const current = pathGuest(ctx, 'qemu');
      checkQemuConfig(current, prepared.digest, prepared.skiplock, prepared.set);
      return applyQemuUpdate(ctx.sim, current, prepared);
    };
    if (!async) {
      return mapResult(ctx.sim.configLocks.run('qemu', guest.vmid, update), (outcome) => {
        if (Object.keys(outcome.errors).length > 0) throw new ParamError(outcome.errors);
        return { data: null };
      });
    }
    const task = ctx.startTask(
      guest.node,
      'qmconfig',
      String(guest.vmid),
      underConfigLock(ctx.sim.configLocks, 'qemu', guest.vmid, async (log) => {
        log.log(`update VM ${guest.vmid}: ${prepared.logLine}`);
        const outcome = update();
        // `warn "cannot delete …"` is a plain warn: a log line, the task still ends OK.
        for (const warning of outcome.warnings) log.log(warning);
        // The worker holds the lock for as long as the task runs.
        await log.elapsed;
        if (Object.keys(outcome.errors).length > 0) {
          // A PVE::Exception stringified in a worker: "400 Parameter verification failed." + lines.
          // `PVE::Exception::stringify`: the code and message, then one `<param>: <error>` line each.
          throw new Error(
            `400 Parameter verification failed.\n${Object.entries(outcome.errors)
              .map(([k, v]) => `${k}: ${v}\n`)
              .join('')}`,
          );
        }
      }),
      { atStart: true },
    );
    const delay = Number(ctx.params.background_delay ?? 0);
    if (delay > 0) return waitInBackground(task, delay, guest.vmid);
    return { data: task.upid };
  };
}

/** Applies `fn` to a value that may still be on its way, keeping a synchronous answer synchronous. */
function mapResult<T, R>(value: T | Promise<T>, fn: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(fn) : fn(value);
}

/**
 * `background_delay`: wait up to that many seconds; a finished task gives `null` (or, failed,
 * `failed to update VM <id>: <status>`), an unfinished one its UPID.
 */
async function waitInBackground(task: SimTask, seconds: number, vmid: number): Promise<HandlerResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, seconds * 1000)));
  await Promise.race([task.done, timeout]);
  clearTimeout(timer);
  if (task.status !== 'stopped') return { data: task.upid };
  if (task.exitstatus !== 'OK' && !task.exitstatus?.startsWith('WARNINGS')) {
    throw new DieError(`failed to update VM ${vmid}: ${task.exitstatus ?? 'unexpected status'}\n`);
  }
  return { data: null };
}

/**
 * `PUT /nodes/{node}/lxc/{vmid}/config` (synchronous only): everything from loading the config on
 * runs under the config lock (pve-container `API2/LXC/Config.pm`, `update_vm`), the lock key
 * checked before the digest.
 */
export function updateLxcConfig(ctx: RequestContext): HandlerResult | Promise<HandlerResult> {
  const prepared = prepareLxcUpdate(configUpdate(ctx), { principal: ctx.principal });
  const target = pathGuest(ctx, 'lxc');
  return ctx.sim.configLocks.run('lxc', target.vmid, () => {
    const guest = pathGuest(ctx, 'lxc');
    checkLxcConfig(guest, prepared.digest);
    checkLxcUpdateLists(prepared, guest);
    const outcome = applyLxcUpdate(ctx.sim, guest, prepared);
    if (Object.keys(outcome.errors).length > 0) throw new ParamError(outcome.errors);
    return { data: null };
  });
}

const QEMU_SUBDIRS = [
  'config',
  'cloudinit',
  'pending',
  'status',
  'unlink',
  'vncproxy',
  'termproxy',
  'migrate',
  'resize',
  'move',
  'rrd',
  'rrddata',
  'monitor',
  'agent',
  'snapshot',
  'spiceproxy',
  'sendkey',
  'firewall',
  'mtunnel',
  'remote_migrate',
];
const LXC_SUBDIRS = [
  'config',
  'pending',
  'status',
  'vncproxy',
  'termproxy',
  'vncwebsocket',
  'spiceproxy',
  'migrate',
  'clone',
  'rrd',
  'rrddata',
  'firewall',
  'snapshot',
  'resize',
  'interfaces',
];

/**
 * `GET /nodes/{node}/qemu/{vmid}` and `/lxc/{vmid}` (`vmdiridx`, any user): qemu-server lists
 * the subdirectories without looking at the VM; pve-container loads the config first, so a
 * container that is not there is the missing-config error.
 */
export function guestIndex(type: GuestType) {
  return (ctx: RequestContext): HandlerResult => {
    if (type === 'lxc') pathGuest(ctx, type);
    return { data: (type === 'qemu' ? QEMU_SUBDIRS : LXC_SUBDIRS).map((subdir) => ({ subdir })) };
  };
}

/** `GET …/{vmid}/status` (`vmcmdidx`, any user): both load the config first ("test if VM exists"). */
export function statusIndex(type: GuestType) {
  return (ctx: RequestContext): HandlerResult => {
    pathGuest(ctx, type);
    const subdirs =
      type === 'qemu'
        ? ['current', 'start', 'stop', 'reset', 'shutdown', 'suspend', 'reboot']
        : ['current', 'start', 'stop', 'shutdown', 'reboot', 'migrate'];
    return { data: subdirs.map((subdir) => ({ subdir })) };
  };
}
