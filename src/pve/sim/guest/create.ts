/**
 * What the create handlers of both flavours share (`create_vm` in qemu-server `API2/Qemu.pm`
 * and pve-container `API2/LXC.pm`): the VMID check, the permission on the guest or its pool,
 * and the storages a create allocates on. The order in which each calls them is its own
 * (docs/proxmox-api.md#create).
 */
import type { GuestType } from '../../../core/guest-flavours.js';
import { hasPrivilege } from '../auth.js';
import type { RequestContext } from '../context.js';
import { parseOption } from '../property-format.js';
import { flavourOf } from './flavours.js';

/** Existing guest with this VMID anywhere in the cluster → `check_vmid_unused` text. */
export function vmidInUse(ctx: RequestContext, vmid: number): string | undefined {
  const existing = ctx.sim.guests.get(vmid);
  if (!existing) return undefined;
  return `${flavourOf(existing.type).label} ${vmid} already exists on node '${existing.node}'`;
}

/** `check_vm_perm`-style: the privilege on `/vms/<vmid>`, or on the pool the guest joins. */
export function holdsOnGuestOrPool(ctx: RequestContext, vmid: number, pool: string | undefined, privilege: string): boolean {
  return (
    hasPrivilege(ctx.principal, `/vms/${vmid}`, privilege) ||
    (pool !== undefined && hasPrivilege(ctx.principal, `/pool/${pool}`, privilege))
  );
}

/** Storages a create allocates new volumes on (`storage:size`), for `Datastore.AllocateSpace`. */
export function allocationStorages(type: GuestType, params: Record<string, string>): string[] {
  const flavour = flavourOf(type);
  const out = new Set<string>();
  for (const [key, value] of Object.entries(params)) {
    if (!flavour.isVolumeKey(key)) continue;
    const volid = parseOption(type, key, value)?.[flavour.volumeProperty] ?? '';
    const alloc = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(?:\.\d+)?|cloudinit)$/i.exec(volid);
    if (alloc) out.add(alloc[1] as string);
  }
  return [...out];
}
