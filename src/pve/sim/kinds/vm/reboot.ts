/**
 * `POST /nodes/{node}/qemu/{vmid}/status/reboot` (qemu-server `API2/Qemu.pm`, `vm_reboot`;
 * VM.PowerMgmt): a VM that is not there or not running is refused at once. The `qmreboot` task
 * shuts the VM down (the config lock is checked, pending values apply as it stops) and qmeventd
 * starts it again in a `qmstart` task of root@pam's (qemu-server `CLI/qm.pm`, `cleanup`).
 */
import { underConfigLock, whenElapsed } from '../../config-lock.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { guestHere } from '../../guest/path-guest.js';
import { TaskFailure } from '../../tasks.js';
import { applyAllPending } from '../../config-update/apply-all-pending.js';

/** The handler. */
export function rebootVm(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const vmid = Number(param(ctx, 'vmid'));
  const here = guestHere(ctx, 'qemu', node, vmid);
  // `check_running` of qemu asserts the config exists.
  if (!here) throw new DieError(`unable to find configuration file for VM ${vmid} on node '${node}'\n`);
  if (!here.running) throw new DieError(`VM ${vmid} not running\n`);
  const task = ctx.startTask(
    node,
    'qmreboot',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'qemu',
      vmid,
      whenElapsed((_log, unlock) => {
        const guest = ctx.sim.guests.get(vmid);
        if (guest !== here || !guest.running) return; // only a running guest is rebooted
        if (guest.lock) throw new TaskFailure(`VM is locked (${guest.lock})`);
        applyAllPending(ctx.sim, guest);
        guest.setRunning(false);
        // qm cleanup runs once the VM is down and the reboot worker has let go of the lock.
        unlock();
        const restart = whenElapsed(() => {
          if (ctx.sim.guests.get(vmid) !== guest || guest.running) return;
          applyAllPending(ctx.sim, guest);
          guest.setRunning(true);
        });
        ctx.sim.tasks.start(node, 'qmstart', String(vmid), 'root@pam', underConfigLock(ctx.sim.configLocks, 'qemu', vmid, restart), {
          atStart: true,
        });
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}
