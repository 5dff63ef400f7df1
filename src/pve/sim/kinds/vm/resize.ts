/**
 * `PUT /nodes/{node}/qemu/{vmid}/resize` (qemu-server `API2/Qemu.pm`, `resize_vm`): every check
 * — the config, the digest, the lock, the disk, a CD-ROM, shrinking — runs inside the `resize`
 * task, so a refused resize is a failed task, not a 500 (docs/proxmox-behaviour.md).
 */
import { flag, param, type HandlerResult, type RequestContext } from '../../context.js';
import { ParamError } from '../../errors.js';
import { driveParts, growVolume, newSize, resizeLogLine, volumeSize } from '../../guest/disks.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { guestHere } from '../../guest/path-guest.js';
import { guestTask, missingConfig } from '../../guest/task.js';
import { isCdrom } from '../../../../core/hotplug.js';
import { TaskFailure } from '../../tasks.js';

/** The handler. */
export function resizeVm(ctx: RequestContext): HandlerResult {
  if (flag(ctx, 'skiplock')) throw new ParamError({ skiplock: 'Only root may use this option.' });
  const node = param(ctx, 'node');
  const vmid = Number(param(ctx, 'vmid'));
  const disk = param(ctx, 'disk');
  const size = param(ctx, 'size');
  const digest = ctx.params.digest;
  const flavour = GUEST_FLAVOURS.qemu;
  return guestTask(ctx, flavour, node, vmid, 'resize', (log) => {
    const guest = guestHere(ctx, 'qemu', node, vmid);
    if (!guest) throw missingConfig(flavour, node, vmid);
    if (digest && digest !== guest.digest) throw new TaskFailure('checksum mismatch (file change by other user?)');
    if (guest.lock) throw new TaskFailure(`VM is locked (${guest.lock})`);
    const drive = driveParts(guest, disk);
    if (!drive) throw new TaskFailure(`disk '${disk}' does not exist`);
    if (isCdrom(drive.data)) throw new TaskFailure("you can't resize a cdrom");
    const volid = drive.data.file ?? '';
    const current = volumeSize(ctx, volid, drive);
    const target = newSize(current, size);
    if (target < current) throw new TaskFailure('shrinking disks is not supported');
    if (target === current) return;
    log.log(resizeLogLine(volid, current, target));
    growVolume(ctx, guest, disk, drive, volid, target);
  });
}
