/**
 * `DELETE /nodes/{node}/lxc/{vmid}` (pve-container `API2/LXC.pm`, `destroy_vm`): protection,
 * lock and running are all checked at once, in that order — unlike a VM, a locked container's
 * destroy fails without a task (docs/proxmox-api.md#destroy). `force` stops a running one.
 */
import { underConfigLock, whenElapsed } from '../../config-lock.js';
import { flag, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { perlTrue } from '../../guest/guest.js';
import { volumesOf } from '../../guest/disks.js';
import { pathGuest } from '../../guest/path-guest.js';
import { parseVolumeId } from '../../property-format.js';
import { TaskFailure } from '../../tasks.js';

/** The handler. */
export function destroyContainer(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'lxc');
  const vmid = guest.vmid;
  if (perlTrue(guest.main.get('protection'))) throw new DieError(`can't remove CT ${vmid} - protection mode enabled\n`);
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  const force = flag(ctx, 'force');
  if (guest.running && !force) throw new DieError(`unable to destroy CT ${vmid} - container is running\n`);
  const task = ctx.startTask(
    guest.node,
    'vzdestroy',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'lxc',
      vmid,
      whenElapsed((log) => {
        if (ctx.sim.guests.get(vmid) !== guest)
          throw new TaskFailure(`Configuration file 'nodes/${guest.node}/lxc/${vmid}.conf' does not exist`);
        if (guest.lock) throw new TaskFailure(`CT is locked (${guest.lock})`);
        // A plain `warn`: logged, not counted.
        if (guest.running) log.log(`forced to stop CT ${vmid} before destroying!`);
        for (const volid of volumesOf(guest)) log.log(`  Logical volume "${parseVolumeId(volid)?.volname ?? volid}" successfully removed.`);
        ctx.sim.deleteGuest(vmid);
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}
