/**
 * `PUT /nodes/{node}/lxc/{vmid}/config` (pve-container `API2/LXC/Config.pm`, `update_vm`;
 * synchronous only, no POST): everything from loading the config on runs under the config lock,
 * the lock key checked before the digest (docs/proxmox-api.md#config-updates).
 */
import type { HandlerResult, RequestContext } from '../../context.js';
import { ParamError } from '../../errors.js';
import { configUpdateOf } from '../../guest/config-request.js';
import { pathGuest } from '../../guest/path-guest.js';
import { applyLxcUpdate, checkLxcConfig, checkLxcUpdateLists, prepareLxcUpdate } from '../../config-update/container.js';

/** The handler. */
export function updateContainerConfig(ctx: RequestContext): HandlerResult | Promise<HandlerResult> {
  const prepared = prepareLxcUpdate(configUpdateOf(ctx), { principal: ctx.principal });
  const target = pathGuest(ctx, 'lxc');
  return ctx.sim.configLocks.run('lxc', target.vmid, () => {
    const guest = pathGuest(ctx, 'lxc');
    checkLxcConfig(guest, prepared.digest);
    checkLxcUpdateLists(prepared, guest);
    const outcome = applyLxcUpdate(ctx.sim, guest, prepared);
    if (Object.keys(outcome.errors).length > 0) throw new ParamError(outcome.errors);
    return { data: null };
  });
}
