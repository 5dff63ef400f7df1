/**
 * `DELETE /nodes/{node}/qemu/{vmid}` (qemu-server `API2/Qemu.pm`, `destroy_vm`): protection and
 * running are checked at once, the lock only in the `qmdestroy` task — so a locked VM's destroy
 * answers a UPID whose task fails (docs/proxmox-api.md#destroy).
 */
import { underConfigLock, whenElapsed } from '../../config-lock.js';
import { flag, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, ParamError } from '../../errors.js';
import { perlTrue } from '../../guest/guest.js';
import { volumesOf } from '../../guest/disks.js';
import { pathGuest } from '../../guest/path-guest.js';
import { parseVolumeId } from '../../property-format.js';
import { TaskFailure } from '../../tasks.js';

/** The handler. */
export function destroyVm(ctx: RequestContext): HandlerResult {
  if (flag(ctx, 'skiplock')) throw new ParamError({ skiplock: 'Only root may use this option.' });
  const guest = pathGuest(ctx, 'qemu');
  const vmid = guest.vmid;
  if (perlTrue(guest.main.get('protection'))) throw new DieError(`can't remove VM ${vmid} - protection mode enabled\n`);
  if (guest.running) throw new DieError(`VM ${vmid} is running - destroy failed\n`);
  const task = ctx.startTask(
    guest.node,
    'qmdestroy',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'qemu',
      vmid,
      whenElapsed((log) => {
        if (ctx.sim.guests.get(vmid) !== guest)
          throw new TaskFailure(`Configuration file 'nodes/${guest.node}/qemu-server/${vmid}.conf' does not exist`);
        if (guest.lock && guest.lock !== 'suspended') throw new TaskFailure(`VM is locked (${guest.lock})`);
        if (perlTrue(guest.main.get('protection'))) throw new TaskFailure(`can't remove VM ${vmid} - protection mode enabled`);
        for (const volid of volumesOf(guest)) log.log(`  Logical volume "${parseVolumeId(volid)?.volname ?? volid}" successfully removed.`);
        if (flag(ctx, 'purge')) log.log(`purging VM ${vmid} from related configurations..`);
        ctx.sim.deleteGuest(vmid);
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}
