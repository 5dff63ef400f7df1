/**
 * `POST /nodes/{node}/lxc/{vmid}/template` (pve-container `API2/LXC.pm`, `template`): the checks
 * run under the config lock before the fork and answer with 500; the `vztemplate` task converts
 * the container; the POST answers `null`, not the task's UPID (docs/proxmox-behaviour.md, TPL-
 * rows), so a client finds the task in the node's task list.
 */
import type { HandlerResult, RequestContext } from '../../context.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestTask } from '../../guest/task.js';
import { checkTemplateConversion, convertToTemplate } from '../../guest/template.js';

/** The handler. */
export function templateContainer(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'lxc');
  checkTemplateConversion(guest);
  guestTask(ctx, GUEST_FLAVOURS.lxc, guest.node, guest.vmid, 'vztemplate', () => convertToTemplate(ctx, guest));
  return { data: null };
}
