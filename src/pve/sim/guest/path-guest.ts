/**
 * The guest a request's path addresses (`/nodes/{node}/<flavour>/{vmid}`), or Proxmox's
 * missing-config error: every per-guest handler of both flavours starts here.
 */
import type { GuestType } from '../../../core/guest-flavours.js';
import { param, type RequestContext } from '../context.js';
import type { Guest } from './guest.js';

/** The guest the path addresses, or the missing-config error. */
export function pathGuest(ctx: RequestContext, type: GuestType): Guest {
  return ctx.sim.guestOnNode(type, param(ctx, 'node'), Number(param(ctx, 'vmid')));
}

/** The guest with this VMID if it is of this flavour and on this node (pmxcfs paths are per node). */
export function guestHere(ctx: RequestContext, type: GuestType, node: string, vmid: number): Guest | undefined {
  const guest = ctx.sim.guests.get(vmid);
  return guest?.type === type && guest.node === node ? guest : undefined;
}
