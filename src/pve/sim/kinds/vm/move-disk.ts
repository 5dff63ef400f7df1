/**
 * `POST /nodes/{node}/qemu/{vmid}/move_disk` (qemu-server `API2/Qemu.pm`, `move_vm_disk`): the
 * early checks answer at once, and the `qmmove` task runs them again under the config lock before
 * it copies, since the config may have changed in between.
 */
import { flag, param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import type { Guest } from '../../guest/guest.js';
import { driveParts, moveVolume, targetStorage } from '../../guest/disks.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestTask } from '../../guest/task.js';
import { parseVolumeId } from '../../property-format.js';
import { isCdrom } from '../../../../core/hotplug.js';
import { TaskFailure } from '../../tasks.js';

/** The handler. */
export function moveVmDisk(ctx: RequestContext): HandlerResult {
  const storage = targetStorage(ctx);
  if (storage === undefined) throw new DieError('moving a disk to another VM is not supported by the simulator\n');
  const disk = param(ctx, 'disk');
  const remove = flag(ctx, 'delete');
  const digest = ctx.params.digest;
  const check = (guest: Guest): void => {
    if (guest.lock) throw new DieError(`VM is locked (${guest.lock})\n`);
    if (digest && digest !== guest.digest) throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
    const drive = driveParts(guest, disk);
    if (!drive) throw new DieError(`disk '${disk}' does not exist\n`);
    if (isCdrom(drive.data)) throw new DieError("you can't move a cdrom\n");
    const parsed = parseVolumeId(drive.data.file ?? '');
    if (!parsed) throw new DieError(`disk '${disk}' has no associated volume\n`);
    if (parsed.storage === storage) throw new DieError("you can't move to the same storage with same format\n");
    ctx.sim.volumes.checkOnNode(storage, guest.node);
    ctx.sim.volumes.checkVmImages(storage);
  };
  const guest = pathGuest(ctx, 'qemu');
  check(guest);
  return guestTask(ctx, GUEST_FLAVOURS.qemu, guest.node, guest.vmid, 'qmmove', (log) => {
    try {
      check(guest);
    } catch (err) {
      throw new TaskFailure((err as Error).message);
    }
    log.log(`create full clone of drive ${disk} (${guest.main.get(disk) ?? ''})`);
    moveVolume(ctx, guest, disk, storage, remove);
    guest.commit();
  });
}
