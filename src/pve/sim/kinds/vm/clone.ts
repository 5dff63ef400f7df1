/**
 * `POST /nodes/{node}/qemu/{vmid}/clone` (qemu-server `API2/Qemu.pm`, `clone_vm`;
 * docs/proxmox-behaviour.md, QCL- rows): `$load_and_check` runs once before the fork, so its
 * refusals answer the POST with 500, and again inside the `qmclone` task, whose id is the SOURCE
 * VMID. The task takes the target's config lock (and the source's when it runs), writes a
 * temporary config holding `lock: clone`, copies the disks, and writes the clone's config without
 * the lock once they are copied.
 */
import { randomUUID } from 'node:crypto';
import { isCdrom, isCloudinitVolume, isQemuDrive } from '../../../../core/hotplug.js';
import { hasPrivilege } from '../../auth.js';
import { flag, param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, PermissionError } from '../../errors.js';
import {
  checkCloneStorage,
  cloneTarget,
  copyClonedFirewall,
  copyVolume,
  isBaseVolume,
  onSharedStorage,
  removeClonedFirewall,
  withNewMac,
} from '../../guest/clone.js';
import { Guest, perlTrue } from '../../guest/guest.js';
import { pathGuest } from '../../guest/path-guest.js';
import { optionFormat, parseOption, printPropertyString } from '../../property-format.js';
import { TaskFailure, type TaskContext } from '../../tasks.js';
import type { ReleaseConfigLock } from '../../config-lock.js';

/** What `clone_vm` never copies: snapshot state, the running machine, unused volumes. */
const NOT_COPIED = new Set(['parent', 'snaptime', 'vmstate', 'snapstate', 'runningcpu', 'runningmachine', 'running-nets-host-mtu']);

/** The temporary file `clone_vm` writes before it copies a disk. */
export const QMCLONE_TEMPORARY = '# qmclone temporary file\nlock: clone\n';

interface ClonePlan {
  /** Keys copied as they are (or with a new MAC), in file order. */
  values: Map<string, string>;
  /** Disks to copy: key → source volume; `full` decides copy or linked clone. */
  disks: Map<string, string>;
  full: boolean;
}

/** `$load_and_check`: everything the clone is refused for, and what it copies. */
function loadAndCheck(ctx: RequestContext, source: Guest, running: boolean, newid: number, target: string | undefined): ClonePlan {
  const storage = ctx.params.storage;
  if (ctx.params.pool !== undefined) ctx.sim.assertPool(ctx.params.pool);
  checkCloneStorage(ctx, storage, source.node, target, true);
  if (source.lock) throw new DieError(`VM is locked (${source.lock})\n`);
  if (source.running !== running) throw new DieError('unexpected state change\n');
  const snapname = ctx.params.snapname;
  if (snapname !== undefined) throw new DieError(`snapshot '${snapname}' does not exist\n`);
  const full = ctx.params.full !== undefined ? flag(ctx, 'full') : !perlTrue(source.main.get('template'));
  if (storage !== undefined && !full) throw new DieError("parameter 'storage' not allowed for linked clones\n");
  if (ctx.params.format !== undefined && !full) throw new DieError("parameter 'format' not allowed for linked clones\n");
  // `$check_storage_access_clone`: Datastore.AllocateSpace where each disk goes; shared or not.
  let shared = true;
  for (const [key, value] of source.main) {
    if (!isQemuDrive(key)) continue;
    const drive = parseOption('qemu', key, value);
    const file = drive?.file;
    if (!drive || !file || file === 'none') continue;
    if (isCdrom(drive)) {
      if (file === 'cdrom') {
        if (!hasPrivilege(ctx.principal, '/', 'Sys.Console')) throw new PermissionError('/, Sys.Console');
      } else if (!onSharedStorage(ctx, file)) shared = false;
      continue;
    }
    if (!onSharedStorage(ctx, file)) shared = false;
    const sid = storage ?? file.split(':')[0];
    if (!hasPrivilege(ctx.principal, `/storage/${sid}`, 'Datastore.AllocateSpace')) {
      throw new PermissionError(`/storage/${sid}, Datastore.AllocateSpace`);
    }
  }
  // `check_bridge_access`: SDN.Use on each NIC's bridge in the local zone.
  for (const [key, value] of source.main) {
    const bridge = /^net\d+$/.test(key) ? parseOption('qemu', key, value)?.bridge : undefined;
    const path = `/sdn/zones/localnetwork/${bridge ?? ''}`;
    if (bridge !== undefined && !hasPrivilege(ctx.principal, path, 'SDN.Use')) throw new PermissionError(`${path}, SDN.Use`);
  }
  if (target !== undefined && !shared) throw new DieError(`can't clone VM to node '${target}' (VM uses local storage)\n`);
  if (ctx.sim.guests.has(newid)) throw new DieError(`unable to create VM ${newid}: config file already exists\n`);

  const values = new Map<string, string>();
  const disks = new Map<string, string>();
  for (const [key, value] of source.main) {
    if (NOT_COPIED.has(key) || /^unused\d+$/.test(key)) continue;
    if (/^net\d+$/.test(key)) {
      values.set(key, withNewMac('qemu', key, value));
      continue;
    }
    const drive = isQemuDrive(key) ? parseOption('qemu', key, value) : undefined;
    const file = drive?.file ?? '';
    const cloudinit = isCloudinitVolume(file);
    // `drive_is_cdrom($drive, 1)`: a cloud-init drive is no CD-ROM here, it gets a drive of its own.
    if (!drive || (isCdrom(drive) && !cloudinit)) {
      values.set(key, value);
      continue;
    }
    // `volume_has_feature`: a copy works from any volume, a linked clone only from a base image.
    if (!full && !cloudinit && !isBaseVolume(file)) throw new DieError(`Linked clone feature is not supported for '${file}' (${key})\n`);
    disks.set(key, value);
  }
  return { values, disks, full };
}

/** The config lock at once when it is free (before the UPID is answered), else once it is. */
function lockNow(ctx: RequestContext, vmid: number): ReleaseConfigLock | Promise<ReleaseConfigLock> {
  return ctx.sim.configLocks.tryAcquire(vmid) ?? ctx.sim.configLocks.acquire('qemu', vmid);
}

/**
 * `$clonefn` after its checks: the temporary config with `lock: clone`, the disks copied when the
 * task's time is up, then the clone's config without the lock. A failure frees what was copied and
 * removes the clone ("clone failed: …").
 */
async function copyInTask(
  ctx: RequestContext,
  log: TaskContext,
  source: Guest,
  newid: number,
  plan: ClonePlan,
  node: string,
  target: string | undefined,
): Promise<void> {
  const { storage, pool } = ctx.params;
  const vmid = source.vmid;
  log.log(`creating a clone of VM ${vmid} with ID ${newid}`);
  const values = plan.values;
  const smbios = parseOption('qemu', 'smbios1', values.get('smbios1') ?? '') ?? {};
  smbios.uuid = randomUUID();
  const smbiosFormat = optionFormat('qemu', 'smbios1');
  values.set('smbios1', smbiosFormat ? printPropertyString(smbiosFormat, smbios) : `uuid=${smbios.uuid}`);
  if (perlTrue(values.get('vmgenid'))) values.set('vmgenid', randomUUID());
  values.delete('template');
  values.set('name', ctx.params.name ?? `Copy-of-VM-${source.main.get('name') ?? vmid}`);
  if (ctx.params.description) values.set('description', ctx.params.description);
  const clone = new Guest(newid, 'qemu', node, QMCLONE_TEMPORARY, false);
  ctx.sim.insertGuest(clone);
  copyClonedFirewall(ctx, source, newid);
  const created: string[] = [];
  try {
    await log.elapsed;
    if (ctx.sim.guests.get(newid) !== clone) throw new Error(`configuration file of VM ${newid} is gone`);
    for (const [key, value] of [...plan.disks].sort(([a], [b]) => a.localeCompare(b))) {
      const format = optionFormat('qemu', key);
      const drive = parseOption('qemu', key, value);
      if (!format || !drive) continue;
      const file = drive.file ?? '';
      if (isCloudinitVolume(file)) {
        drive.file = ctx.sim.volumes.allocateCloudinit(storage ?? file.split(':')[0] ?? 'local', newid);
      } else {
        log.log(`create ${plan.full ? 'full' : 'linked'} clone of drive ${key} (${file})`);
        drive.file = copyVolume(ctx, file, newid, plan.full ? storage : undefined);
      }
      created.push(drive.file);
      values.set(key, printPropertyString(format, drive));
    }
    const pending = [...source.pending.keys()];
    if (pending.length > 0) log.log(`found pending changes for '${pending.join(',')}', discarding for clone`);
    clone.main.clear();
    for (const key of [...values.keys()].sort()) clone.main.set(key, values.get(key) as string);
    clone.commit();
    if (target !== undefined) clone.node = target;
    if (pool !== undefined) ctx.sim.addToPool(pool, newid);
  } catch (err) {
    for (const volid of created) ctx.sim.volumes.free(volid);
    if (ctx.sim.guests.get(newid) === clone) ctx.sim.deleteGuest(newid);
    removeClonedFirewall(ctx, newid);
    throw new TaskFailure(`clone failed: ${(err as Error).message}`);
  }
}

/** The handler. */
export function cloneVm(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const newid = Number(param(ctx, 'newid'));
  const source = pathGuest(ctx, 'qemu');
  const vmid = source.vmid;
  const target = cloneTarget(ctx, node);
  const running = source.running;
  loadAndCheck(ctx, source, running, newid, target);
  const worker = async (log: TaskContext): Promise<void> => {
    // Exclusive source lock only while it runs (`lock_config_shared` otherwise), then the target's.
    const releaseSource = running ? await lockNow(ctx, vmid) : undefined;
    const releaseTarget = await lockNow(ctx, newid);
    try {
      let plan: ClonePlan;
      try {
        plan = loadAndCheck(ctx, source, running, newid, target);
      } catch (err) {
        throw new TaskFailure((err as Error).message);
      }
      await copyInTask(ctx, log, source, newid, plan, node, target);
    } finally {
      releaseTarget();
      releaseSource?.();
    }
  };
  const task = ctx.startTask(node, 'qmclone', String(vmid), worker, { atStart: true });
  return { data: task.upid };
}
