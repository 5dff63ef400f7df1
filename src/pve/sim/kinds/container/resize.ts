/**
 * `PUT /nodes/{node}/lxc/{vmid}/resize` (pve-container `API2/LXC.pm`, `resize_vm`): unlike a
 * VM's, the checks — lock, digest, disk, shrinking, same size — answer at once; only the grow
 * runs in the `resize` task.
 */
import { underConfigLock, whenElapsed } from '../../config-lock.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { driveParts, newSize, resizeLogLine } from '../../guest/disks.js';
import { pathGuest } from '../../guest/path-guest.js';
import { formatSize, parseSize, printPropertyString } from '../../property-format.js';
import { TaskFailure } from '../../tasks.js';

/** The handler. */
export function resizeContainer(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'lxc');
  const disk = param(ctx, 'disk');
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  const digest = ctx.params.digest;
  if (digest && digest !== guest.digest) throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
  const drive = driveParts(guest, disk);
  if (!drive) throw new DieError(`disk '${disk}' does not exist\n`);
  const volid = drive.data.volume ?? '';
  const current = ctx.sim.volumes.size(volid) ?? parseSize(drive.data.size ?? '0') ?? 0;
  const target = newSize(current, param(ctx, 'size'));
  if (target < current) throw new DieError('unable to shrink disk size\n');
  if (target === current) throw new DieError('disk is already at specified size\n');
  const task = ctx.startTask(
    guest.node,
    'resize',
    String(guest.vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'lxc',
      guest.vmid,
      whenElapsed((log) => {
        log.log(resizeLogLine(volid, current, target));
        const fresh = driveParts(guest, disk);
        if (!fresh) throw new TaskFailure(`disk '${disk}' does not exist`);
        ctx.sim.volumes.setSize(volid, target);
        fresh.data.size = formatSize(target);
        guest.main.set(disk, printPropertyString(fresh.format, fresh.data));
        guest.commit();
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}
