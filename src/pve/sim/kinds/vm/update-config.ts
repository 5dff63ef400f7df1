/**
 * `PUT`/`POST /nodes/{node}/qemu/{vmid}/config` (qemu-server `API2/Qemu.pm`, `$update_vm_api`),
 * with the digest, lock and pending semantics of docs/proxmox-api.md#config-updates. The checks
 * up to the lock run at once (`$load_and_check_config->(0)`); then the update runs under the
 * config lock, which checks the digest and the lock again: PUT waits for the lock and updates
 * inline (hotplug errors → 400), POST forks a `qmconfig` worker that takes the lock and writes
 * before the UPID is answered (pve-common `RESTEnvironment.pm`, `fork_worker`), so a PUT sent
 * right after waits for it and lands last.
 */
import { underConfigLock } from '../../config-lock.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, ParamError } from '../../errors.js';
import { configUpdateOf } from '../../guest/config-request.js';
import { vmImageStorages } from '../../guest/create.js';
import { pathGuest } from '../../guest/path-guest.js';
import type { SimTask } from '../../tasks.js';
import type { UpdateOutcome } from '../../config-update/common.js';
import { applyQemuUpdate, checkQemuConfig, prepareQemuUpdate } from '../../config-update/vm.js';

/** The handler of `PUT` (`async` false) or `POST` (`async` true). */
export function updateVmConfig(async: boolean) {
  return (ctx: RequestContext): HandlerResult | Promise<HandlerResult> => {
    const prepared = prepareQemuUpdate(configUpdateOf(ctx), { principal: ctx.principal }, Number(param(ctx, 'vmid')));
    const guest = pathGuest(ctx, 'qemu');
    checkQemuConfig(guest, prepared.digest, prepared.skiplock, prepared.set);
    for (const storage of vmImageStorages(Object.fromEntries(prepared.set))) ctx.sim.volumes.checkVmImages(storage);
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
