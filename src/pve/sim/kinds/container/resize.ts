/**
 * `PUT /nodes/{node}/lxc/{vmid}/resize` (pve-container `API2/LXC.pm`, `resize_vm`): unlike a
 * VM's, the checks — lock, digest, disk, shrinking, same size — answer at once; only the grow
 * runs in the `resize` task.
 */
import { checkLxcConfig } from '../../config-update/container.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { driveParts, growVolume, newSize, resizeLogLine, volumeSize } from '../../guest/disks.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestTask } from '../../guest/task.js';
import { TaskFailure } from '../../tasks.js';

/** The handler. */
export function resizeContainer(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'lxc');
  const disk = param(ctx, 'disk');
  checkLxcConfig(guest, ctx.params.digest);
  const drive = driveParts(guest, disk);
  if (!drive) throw new DieError(`disk '${disk}' does not exist\n`);
  const volid = drive.data.volume ?? '';
  const current = volumeSize(ctx, volid, drive);
  const target = newSize(current, param(ctx, 'size'));
  if (target < current) throw new DieError('unable to shrink disk size\n');
  if (target === current) throw new DieError('disk is already at specified size\n');
  return guestTask(ctx, GUEST_FLAVOURS.lxc, guest.node, guest.vmid, 'resize', (log) => {
    log.log(resizeLogLine(volid, current, target));
    const fresh = driveParts(guest, disk);
    if (!fresh) throw new TaskFailure(`disk '${disk}' does not exist`);
    growVolume(ctx, guest, disk, fresh, volid, target);
  });
}
