/**
 * `POST /nodes/{node}/lxc/{vmid}/status/reboot` (pve-container `API2/LXC/Status.pm`,
 * `vm_reboot`; VM.PowerMgmt): a container that is not running here is refused at once with
 * "VM <id> not running" (pve-container's `check_running` only asks the node). The `vzreboot` task
 * stops and starts it, applying its pending values (pve-container `LXC.pm`, `vm_reboot`).
 */
import { underConfigLock, whenElapsed } from '../../config-lock.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { guestHere } from '../../guest/path-guest.js';
import { applyAllPending } from '../../config-update/apply-all-pending.js';

/** The handler. */
export function rebootContainer(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const vmid = Number(param(ctx, 'vmid'));
  const here = guestHere(ctx, 'lxc', node, vmid);
  if (!here?.running) throw new DieError(`VM ${vmid} not running\n`);
  const task = ctx.startTask(
    node,
    'vzreboot',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'lxc',
      vmid,
      whenElapsed(() => {
        const guest = ctx.sim.guests.get(vmid);
        if (guest !== here || !guest.running) return; // only a running guest is rebooted
        guest.setRunning(false);
        applyAllPending(ctx.sim, guest);
        guest.setRunning(true);
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}
