/**
 * What the create handlers of both flavours share (`create_vm` in qemu-server `API2/Qemu.pm`
 * and pve-container `API2/LXC.pm`): the VMID check, the permission on the guest or its pool,
 * the storages a create allocates on, and the create task that writes the new guest. The order
 * in which each calls the checks, and what its task allocates and fills in, is its own
 * (docs/proxmox-api.md#create).
 */
import type { GuestType } from '../../../core/guest-flavours.js';
import { hasPrivilege } from '../auth.js';
import type { ReleaseConfigLock } from '../config-lock.js';
import { flag, type HandlerResult, type RequestContext } from '../context.js';
import { parseOption } from '../property-format.js';
import { isCdrom } from '../../../core/hotplug.js';
import { TaskFailure, type TaskContext } from '../tasks.js';
import { flavourOf, type GuestFlavour } from './flavours.js';
import { Guest } from './guest.js';
import { startTaskOf } from './power.js';
import { guestTask } from './task.js';

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

/**
 * Storages new VM disks are allocated on (`storage:size`, cloud-init drives left out), which
 * qemu-server's `$check_storage_access` requires to hold `images` (docs/proxmox-behaviour.md RHS-1).
 */
export function vmImageStorages(params: Record<string, string>): string[] {
  const out = new Set<string>();
  for (const [key, value] of Object.entries(params)) {
    if (!flavourOf('qemu').isVolumeKey(key)) continue;
    const drive = parseOption('qemu', key, value);
    if (!drive || isCdrom(drive)) continue;
    const alloc = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(?:\.\d+)?)$/i.exec(drive.file ?? '');
    if (alloc) out.add(alloc[1] as string);
  }
  return [...out];
}

/**
 * The create task (`qmcreate`, `vzcreate`): the new guest stands as `lock: create` until the task
 * has run `fill`, which allocates its volumes (each one it adds to `created`) and completes
 * `values`. A failure frees those volumes and removes the guest; otherwise `values` become its
 * config, it joins the request's pool, and with `start` the start task is forked once the config
 * lock is released.
 */
export function createTask(
  ctx: RequestContext,
  flavour: GuestFlavour,
  node: string,
  vmid: number,
  values: Map<string, string>,
  fill: (guest: Guest, log: TaskContext, created: string[]) => void,
): HandlerResult {
  const pool = ctx.params.pool;
  const guest = new Guest(vmid, flavour.type, node, 'lock: create\n', false);
  ctx.sim.insertGuest(guest);
  const start = flag(ctx, 'start');
  return guestTask(ctx, flavour, node, vmid, `${flavour.taskPrefix}create`, (log: TaskContext, unlock: ReleaseConfigLock) => {
    const created: string[] = [];
    try {
      fill(guest, log, created);
    } catch (err) {
      for (const volid of created) ctx.sim.volumes.free(volid);
      ctx.sim.deleteGuest(vmid);
      throw new TaskFailure(`unable to create ${flavour.label} ${vmid} - ${(err as Error).message}`);
    }
    guest.main.clear();
    for (const [k, v] of values) guest.main.set(k, v);
    guest.commit();
    if (pool !== undefined) ctx.sim.addToPool(pool, vmid);
    // Once the lock is released, `vm_start` of the flavour's API forks a start task of its own.
    if (start) {
      unlock();
      if (flavour.createLogsAutostart) log.log('Execute autostart');
      startTaskOf(ctx, flavour, node, vmid);
    }
  });
}
