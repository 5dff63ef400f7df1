/**
 * `POST /nodes/{node}/qemu/{vmid}/template` (qemu-server `API2/Qemu.pm`, `template`): the checks
 * answer at once, then a `qmtemplate` task repeats them under the config lock and converts the VM
 * (docs/proxmox-behaviour.md, TPL- rows). Answers the task's UPID. Converting one disk only
 * (`disk`) is left out.
 */
import type { HandlerResult, RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestTask } from '../../guest/task.js';
import { checkTemplateConversion, convertToTemplate } from '../../guest/template.js';
import { TaskFailure } from '../../tasks.js';

/** The handler. */
export function templateVm(ctx: RequestContext): HandlerResult {
  if (ctx.params.disk !== undefined) throw new DieError('converting a single disk to a base image is not supported by the simulator\n');
  const guest = pathGuest(ctx, 'qemu');
  checkTemplateConversion(guest);
  return guestTask(ctx, GUEST_FLAVOURS.qemu, guest.node, guest.vmid, 'qmtemplate', () => {
    try {
      checkTemplateConversion(guest);
    } catch (err) {
      throw new TaskFailure((err as Error).message);
    }
    convertToTemplate(ctx, guest);
  });
}
