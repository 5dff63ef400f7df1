/**
 * `DELETE /nodes/{node}/qemu/{vmid}` (qemu-server `API2/Qemu.pm`, `destroy_vm`): protection and
 * running are checked at once, the lock only in the `qmdestroy` task — so a locked VM's destroy
 * answers a UPID whose task fails (docs/proxmox-api.md#destroy).
 */
import { flag, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, ParamError } from '../../errors.js';
import { perlTrue } from '../../guest/guest.js';
import { logRemovedVolumes } from '../../guest/disks.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestTask, missingConfig } from '../../guest/task.js';
import { TaskFailure } from '../../tasks.js';
import { dropFirewall } from '../firewall/state.js';

/** The handler. */
export function destroyVm(ctx: RequestContext): HandlerResult {
  if (flag(ctx, 'skiplock')) throw new ParamError({ skiplock: 'Only root may use this option.' });
  const guest = pathGuest(ctx, 'qemu');
  const vmid = guest.vmid;
  if (perlTrue(guest.main.get('protection'))) throw new DieError(`can't remove VM ${vmid} - protection mode enabled\n`);
  if (guest.running) throw new DieError(`VM ${vmid} is running - destroy failed\n`);
  const flavour = GUEST_FLAVOURS.qemu;
  return guestTask(ctx, flavour, guest.node, vmid, `${flavour.taskPrefix}destroy`, (log) => {
    if (ctx.sim.guests.get(vmid) !== guest) throw missingConfig(flavour, guest.node, vmid);
    if (guest.lock && guest.lock !== 'suspended') throw new TaskFailure(`VM is locked (${guest.lock})`);
    if (perlTrue(guest.main.get('protection'))) throw new TaskFailure(`can't remove VM ${vmid} - protection mode enabled`);
    logRemovedVolumes(log, guest);
    if (flag(ctx, 'purge')) {
      log.log(`purging VM ${vmid} from related configurations..`);
      ctx.sim.removeFromBackupJobs(vmid);
    }
    ctx.sim.deleteGuest(vmid);
    dropFirewall(ctx.sim, vmid);
  });
}
