/**
 * `DELETE /nodes/{node}/lxc/{vmid}` (pve-container `API2/LXC.pm`, `destroy_vm`): protection,
 * lock and running are all checked at once, in that order — unlike a VM, a locked container's
 * destroy fails without a task (docs/proxmox-api.md#destroy). `force` stops a running one.
 */
import { flag, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { perlTrue } from '../../guest/guest.js';
import { logRemovedVolumes } from '../../guest/disks.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestTask, missingConfig } from '../../guest/task.js';
import { TaskFailure } from '../../tasks.js';
import { dropFirewall } from '../firewall/state.js';

/** The handler. */
export function destroyContainer(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'lxc');
  const vmid = guest.vmid;
  if (perlTrue(guest.main.get('protection'))) throw new DieError(`can't remove CT ${vmid} - protection mode enabled\n`);
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  const force = flag(ctx, 'force');
  if (guest.running && !force) throw new DieError(`unable to destroy CT ${vmid} - container is running\n`);
  const flavour = GUEST_FLAVOURS.lxc;
  return guestTask(ctx, flavour, guest.node, vmid, `${flavour.taskPrefix}destroy`, (log) => {
    if (ctx.sim.guests.get(vmid) !== guest) throw missingConfig(flavour, guest.node, vmid);
    if (guest.lock) throw new TaskFailure(`CT is locked (${guest.lock})`);
    // A plain `warn`: logged, not counted.
    if (guest.running) log.log(`forced to stop CT ${vmid} before destroying!`);
    logRemovedVolumes(log, guest);
    if (flag(ctx, 'purge')) {
      log.log(`purging CT ${vmid} from related configurations..`);
      ctx.sim.removeFromBackupJobs(vmid);
    }
    ctx.sim.deleteGuest(vmid);
    dropFirewall(ctx.sim, vmid);
  });
}
