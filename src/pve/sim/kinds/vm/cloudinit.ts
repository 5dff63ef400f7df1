/**
 * `GET` and `PUT /nodes/{node}/qemu/{vmid}/cloudinit` (qemu-server `API2/Qemu.pm`,
 * `cloudinit_pending` and `cloudinit_update`; docs/proxmox-behaviour.md, CIN- rows): what the
 * cloud-init drive still lacks, and its regeneration under the config lock, refused while the VM
 * holds a lock. The PUT answers `null`.
 */
import type { HandlerResult, RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { cloudinitView, regenerateCloudinit } from '../../guest/cloudinit.js';
import { pathGuest } from '../../guest/path-guest.js';

/** `GET …/cloudinit`. */
export function getCloudinit(ctx: RequestContext): HandlerResult {
  return { data: cloudinitView(pathGuest(ctx, 'qemu')) };
}

/** `PUT …/cloudinit`: `vmconfig_update_cloudinit_drive` under `lock_config`. */
export function updateCloudinit(ctx: RequestContext): HandlerResult | Promise<HandlerResult> {
  const guest = pathGuest(ctx, 'qemu');
  return ctx.sim.configLocks.run('qemu', guest.vmid, () => {
    if (guest.lock) throw new DieError(`VM is locked (${guest.lock})\n`);
    regenerateCloudinit(guest);
    return { data: null };
  });
}
