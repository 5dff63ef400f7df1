/**
 * `POST /nodes/{node}/lxc/{vmid}/move_volume` (pve-container `API2/LXC.pm`, `move_volume`): the
 * container flavour's disk move. Its checks answer at once (a running container's volumes do not
 * move), and it sets `lock: disk` until the `move_volume` task ends.
 */
import { flag, param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { driveParts, moveVolume, targetStorage } from '../../guest/disks.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestTask } from '../../guest/task.js';

/** The handler. */
export function moveContainerVolume(ctx: RequestContext): HandlerResult {
  const storage = targetStorage(ctx);
  if (storage === undefined) throw new DieError('moving a volume to another CT is not supported by the simulator\n');
  const guest = pathGuest(ctx, 'lxc');
  const volume = param(ctx, 'volume');
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  if (guest.running) throw new DieError('cannot move volumes of a running container\n');
  if (!driveParts(guest, volume)) throw new DieError(`volume '${volume}' does not exist\n`);
  const digest = ctx.params.digest;
  if (digest && digest !== guest.digest) throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
  ctx.sim.volumes.checkStorage(storage);
  guest.main.set('lock', 'disk');
  guest.commit();
  return guestTask(ctx, GUEST_FLAVOURS.lxc, guest.node, guest.vmid, 'move_volume', (log) => {
    try {
      log.log(`moving volume '${volume}' to storage '${storage}'`);
      moveVolume(ctx, guest, volume, storage, flag(ctx, 'delete'));
    } finally {
      if (guest.lock === 'disk') guest.main.delete('lock');
      guest.commit();
    }
  });
}
