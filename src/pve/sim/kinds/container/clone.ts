/**
 * `POST /nodes/{node}/lxc/{vmid}/clone` (pve-container `API2/LXC.pm`, `clone_vm`;
 * docs/proxmox-behaviour.md, LCL- rows). Unlike a VM's clone, everything up to the fork runs in
 * the request: the source gets `lock: disk`, the target is created holding `lock: create`, the
 * refusals answer with 500 after undoing both, and the target's config (all but its volumes) is
 * written before the UPID is answered. The `vzclone` task, whose id is the SOURCE VMID, copies
 * the volumes, then drops both locks.
 */
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
import { vmidInUse } from '../../guest/create.js';
import { Guest, perlTrue } from '../../guest/guest.js';
import { pathGuest } from '../../guest/path-guest.js';
import { isLxcMount, optionFormat, parseOption, printPropertyString } from '../../property-format.js';
import { TaskFailure, type TaskContext } from '../../tasks.js';

/** Snapshot-related keys `clone_vm` deletes from the copy. */
const NOT_COPIED = new Set(['parent', 'snaptime', 'snapstate', 'template']);

/** `classify_mountpoint`. */
function mountType(volume: string): string {
  if (volume.startsWith('/dev/')) return 'device';
  return volume.startsWith('/') ? 'bind' : 'volume';
}

/** The handler. */
export function cloneContainer(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const newid = Number(param(ctx, 'newid'));
  const { pool, storage } = ctx.params;
  if (pool !== undefined) ctx.sim.assertPool(pool);
  const target = cloneTarget(ctx, node);
  checkCloneStorage(ctx, storage, node, target, false);
  const source = pathGuest(ctx, 'lxc');
  const vmid = source.vmid;
  // `set_lock($vmid, 'disk')`, then `create_and_lock_config($newid)`.
  if (source.lock) throw new DieError(`CT is locked (${source.lock})\n`);
  source.main.set('lock', 'disk');
  source.commit();
  const releaseSource = (): void => {
    if (source.main.get('lock') !== 'disk') return;
    source.main.delete('lock');
    source.commit();
  };
  const inUse = vmidInUse(ctx, newid);
  if (inUse) {
    releaseSource();
    throw new DieError(`${inUse}\n`);
  }
  const clone = new Guest(newid, 'lxc', node, 'lock: create\n', false);
  ctx.sim.insertGuest(clone);
  const mounts = new Map<string, Record<string, string>>();
  let full: boolean;
  try {
    const running = source.running;
    full = ctx.params.full !== undefined ? flag(ctx, 'full') : !perlTrue(source.main.get('template'));
    copyClonedFirewall(ctx, source, newid);
    if (storage !== undefined && !full) throw new DieError("parameter 'storage' not allowed for linked clones\n");
    if (ctx.params.snapname !== undefined) throw new DieError(`snapshot '${ctx.params.snapname}' does not exist\n`);
    let shared = true;
    const values = new Map<string, string>();
    for (const [key, value] of source.main) {
      if (/^unused\d+$/.test(key)) continue;
      if (isLxcMount(key)) {
        const mp = parseOption('lxc', key, value) ?? {};
        const volid = mp.volume ?? '';
        const type = mountType(volid);
        if (type !== 'volume') throw new DieError(`unable to clone mountpoint '${key}' (type ${type})\n`);
        const sid = storage ?? volid.split(':')[0] ?? '';
        if (storage !== undefined ? ctx.sim.volumes.storage(storage)?.shared !== true : !onSharedStorage(ctx, volid)) shared = false;
        if (!hasPrivilege(ctx.principal, `/storage/${sid}`, 'Datastore.AllocateSpace')) {
          throw new PermissionError(`/storage/${sid}, Datastore.AllocateSpace`);
        }
        if (full && running) throw new DieError('Full clone of a running container is only possible from a snapshot\n');
        if (!full && !isBaseVolume(volid)) throw new DieError(`Linked clone feature for '${volid}' is not available\n`);
        mounts.set(key, mp);
      } else if (/^net\d+$/.test(key)) {
        const net = withNewMac('lxc', key, value);
        const bridge = parseOption('lxc', key, net)?.bridge;
        const path = `/sdn/zones/localnetwork/${bridge ?? ''}`;
        if (bridge !== undefined && !hasPrivilege(ctx.principal, path, 'SDN.Use')) throw new PermissionError(`${path}, SDN.Use`);
        values.set(key, net);
      } else if (!NOT_COPIED.has(key) && key !== 'lock') {
        values.set(key, value);
      }
    }
    if (target !== undefined && !shared) throw new DieError(`can't clone CT to node '${target}' (CT uses local storage)\n`);
    values.set('lock', 'create');
    if (ctx.params.hostname) values.set('hostname', ctx.params.hostname);
    if (ctx.params.description) values.set('description', ctx.params.description);
    clone.main.clear();
    for (const key of [...values.keys()].sort()) clone.main.set(key, values.get(key) as string);
    clone.config.main.lxc.push(...source.config.main.lxc);
    clone.commit();
  } catch (err) {
    releaseSource();
    ctx.sim.deleteGuest(newid);
    removeClonedFirewall(ctx, newid);
    throw err;
  }
  const worker = async (log: TaskContext): Promise<void> => {
    log.log(`creating a clone of container ${vmid} with ID ${newid}`);
    const created: string[] = [];
    try {
      await log.elapsed;
      if (ctx.sim.guests.get(newid) !== clone || clone.lock !== 'create') throw new Error("Lost 'create' config lock, aborting.");
      for (const [key, mp] of mounts) {
        const volid = mp.volume ?? '';
        log.log(full ? `create full clone of mountpoint ${key} (${volid})` : `create linked clone of mount point ${key} (${volid})`);
        mp.volume = copyVolume(ctx, volid, newid, full ? storage : undefined);
        created.push(mp.volume);
        const format = optionFormat('lxc', key);
        if (format) clone.main.set(key, printPropertyString(format, mp));
      }
      clone.commit();
      if (pool !== undefined) ctx.sim.addToPool(pool, newid);
    } catch (err) {
      releaseSource();
      for (const volid of created) ctx.sim.volumes.free(volid);
      if (ctx.sim.guests.get(newid) === clone) ctx.sim.deleteGuest(newid);
      removeClonedFirewall(ctx, newid);
      throw new TaskFailure(`clone failed: ${(err as Error).message}`);
    }
    releaseSource();
    clone.main.delete('lock');
    clone.commit();
    if (target !== undefined) clone.node = target;
  };
  const task = ctx.startTask(node, 'vzclone', String(vmid), worker, { atStart: true });
  return { data: task.upid };
}
