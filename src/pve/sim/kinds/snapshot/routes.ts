/**
 * VM snapshots (`/nodes/{node}/qemu/{vmid}/snapshot`; qemu-server `API2/Qemu.pm`, `snapshot_list`,
 * `snapshot`, `get_snapshot_config`, `rollback`, `delsnapshot`; pve-guest-common
 * `AbstractConfig.pm`, `snapshot_create`, `snapshot_rollback`, `snapshot_delete`). Each write is a
 * task whose config changes are made under the config lock at its start and its end, with the
 * guest's `lock:` (`snapshot`, `rollback`, `snapshot-delete`) held in between, so other writers
 * meet "VM is locked (…)" while the volumes are worked on. docs/proxmox-behaviour.md "Snapshots".
 */
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { emptySection, type ConfigSection } from '../../config-file.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import type { Guest } from '../../guest/guest.js';
import { perlTrue } from '../../guest/guest.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestAudit, guestModify, route, type RouteModule } from '../../route.js';
import { TaskFailure } from '../../tasks.js';
import { canSnapshot } from './snapshot-feature.js';

const Q = GUEST_FLAVOURS.qemu.apiPath;

/** Keys `__snapshot_copy_config` leaves behind. */
function copied(key: string): boolean {
  return !['snapstate', 'snaptime', 'vmstate', 'lock', 'digest', 'description'].includes(key) && !/^unused\d+$/.test(key);
}

function copyConfig(from: ReadonlyMap<string, string>, to: Map<string, string>): void {
  for (const [key, value] of from) if (copied(key)) to.set(key, value);
}

/** `check_lock`. */
function checkLock(guest: Guest): void {
  if (guest.lock) throw new TaskFailure(`VM is locked (${guest.lock})`);
}

/** Runs `fn` on the guest under its config lock, then writes the config (`lock_config` + `write_config`). */
async function underLock(ctx: RequestContext, guest: Guest, fn: () => void): Promise<void> {
  await ctx.sim.configLocks.run('qemu', guest.vmid, () => {
    if (ctx.sim.guests.get(guest.vmid) !== guest) throw new TaskFailure(`unable to find configuration file for VM ${guest.vmid}`);
    fn();
    guest.commit();
  });
}

/** `GET …/snapshot`: every snapshot, then `current` (the config's `parent`, running or not). */
function listSnapshots(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'qemu');
  const out: Record<string, unknown>[] = [];
  for (const name of [...guest.config.snapshots.keys()].sort()) {
    const values = (guest.config.snapshots.get(name) as ConfigSection).values;
    const item: Record<string, unknown> = {
      name,
      snaptime: Number(values.get('snaptime') ?? 0),
      vmstate: perlTrue(values.get('vmstate')) ? 1 : 0,
      description: values.get('description') ?? '',
    };
    if (values.get('parent')) item.parent = values.get('parent');
    if (values.get('snapstate')) item.snapstate = values.get('snapstate');
    out.push(item);
  }
  const current: Record<string, unknown> = {
    name: 'current',
    digest: guest.digest,
    running: guest.running ? 1 : 0,
    description: 'You are here!',
  };
  if (guest.main.get('parent')) current.parent = guest.main.get('parent');
  out.push(current);
  return { data: out };
}

/** `POST …/snapshot`: `qmsnapshot`; prepare (lock, copy, `snapstate: prepare`), the volumes, commit (`parent`). */
function createSnapshot(ctx: RequestContext): HandlerResult {
  const name = param(ctx, 'snapname');
  if (name === 'current') throw new DieError("unable to use snapshot name 'current' (reserved name)\n");
  if (name.toLowerCase() === 'pending') throw new DieError("unable to use snapshot name 'pending' (reserved name)\n");
  const guest = pathGuest(ctx, 'qemu');
  const description = ctx.params.description;
  const task = ctx.startTask(
    param(ctx, 'node'),
    'qmsnapshot',
    String(guest.vmid),
    async (log) => {
      await underLock(ctx, guest, () => {
        if (perlTrue(guest.main.get('template'))) throw new TaskFailure("you can't take a snapshot if it's a template");
        checkLock(guest);
        guest.main.set('lock', 'snapshot');
        const snapshots = guest.config.snapshots;
        if (snapshots.has(name)) throw new TaskFailure(`snapshot name '${name}' already used`);
        if (!canSnapshot(guest, guest.main, ctx.sim.volumes)) throw new TaskFailure('snapshot feature is not available');
        for (const other of snapshots.values()) if (other.values.get('parent') === name) other.values.delete('parent');
        const section = emptySection();
        copyConfig(guest.main, section.values);
        section.values.set('snapstate', 'prepare');
        section.values.set('snaptime', String(Math.floor(Date.now() / 1000)));
        if (description) section.values.set('description', String(description));
        snapshots.set(name, section);
      }).catch((error: unknown) => {
        // A refusal after `lock` was set in memory leaves the file as it was (nothing was written).
        if (guest.lock === 'snapshot' && !guest.config.snapshots.has(name)) guest.main.delete('lock');
        throw error;
      });
      await log.elapsed;
      await underLock(ctx, guest, () => {
        if (guest.lock !== 'snapshot') throw new TaskFailure('missing snapshot lock');
        const snap = guest.config.snapshots.get(name);
        if (!snap) throw new TaskFailure(`snapshot '${name}' does not exist`);
        if (snap.values.get('snapstate') !== 'prepare') throw new TaskFailure('wrong snapshot state');
        snap.values.delete('snapstate');
        guest.main.delete('lock');
        guest.main.set('parent', name);
      });
    },
    { atStart: true },
  );
  return { data: task.upid };
}

/** `GET …/snapshot/{snapname}/config`: the snapshot section as stored. */
function snapshotConfig(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'qemu');
  const name = param(ctx, 'snapname');
  const view = guest.snapshotView(name);
  if (!view) throw new DieError(`snapshot '${name}' does not exist\n`);
  // `get_snapshot_config` returns the section itself: no whole-file digest.
  const { digest: _digest, ...section } = view;
  return { data: section };
}

/** `POST …/snapshot/{snapname}/rollback`: `qmrollback`; stop the VM, `lock: rollback`, then the snapshot's config. */
function rollbackSnapshot(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'qemu');
  const name = param(ctx, 'snapname');
  const start = perlTrue(ctx.params.start === undefined ? undefined : String(ctx.params.start));
  const task = ctx.startTask(
    param(ctx, 'node'),
    'qmrollback',
    String(guest.vmid),
    async (log) => {
      const snapshotOf = (): ConfigSection => {
        if (perlTrue(guest.main.get('template'))) throw new TaskFailure("you can't rollback if vm is a template");
        const snap = guest.config.snapshots.get(name);
        if (!snap) throw new TaskFailure(`snapshot '${name}' does not exist`);
        const state = snap.values.get('snapstate');
        if (state) throw new TaskFailure(`unable to rollback to incomplete snapshot (snapstate = ${state})`);
        return snap;
      };
      await underLock(ctx, guest, () => {
        snapshotOf();
        checkLock(guest);
        guest.setRunning(false); // __snapshot_rollback_vm_stop: vm_stop with a 5 s timeout
        guest.main.set('lock', 'rollback');
      });
      await log.elapsed;
      await underLock(ctx, guest, () => {
        const snap = snapshotOf();
        if (guest.lock !== 'rollback') throw new TaskFailure('got wrong lock');
        const kept = [...guest.main].filter(([key]) => /^unused\d+$/.test(key) || key === 'description');
        guest.main.clear();
        for (const [key, value] of kept) guest.main.set(key, value);
        copyConfig(snap.values, guest.main);
        guest.main.set('parent', name);
        // __snapshot_apply_config builds a new config of the snapshot list and the copy: nothing pending survives.
        guest.config.pending.values.clear();
      });
      if (start && !guest.running) guest.setRunning(true);
    },
    { atStart: true },
  );
  return { data: task.upid };
}

/** `DELETE …/snapshot/{snapname}`: `qmdelsnapshot`; `lock: snapshot-delete`, the volumes, then the section and its parent links. */
function deleteSnapshot(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'qemu');
  const name = param(ctx, 'snapname');
  const task = ctx.startTask(
    param(ctx, 'node'),
    'qmdelsnapshot',
    String(guest.vmid),
    async (log) => {
      await underLock(ctx, guest, () => {
        if (!guest.config.snapshots.has(name)) throw new TaskFailure(`snapshot '${name}' does not exist`);
        checkLock(guest); // set_lock
        guest.main.set('lock', 'snapshot-delete');
        (guest.config.snapshots.get(name) as ConfigSection).values.set('snapstate', 'delete');
      });
      await log.elapsed;
      await underLock(ctx, guest, () => {
        if (guest.lock !== 'snapshot-delete') throw new TaskFailure("encountered invalid lock, expected 'snapshot-delete'");
        const snap = guest.config.snapshots.get(name);
        if (!snap) throw new TaskFailure(`snapshot '${name}' does not exist`);
        const parent = snap.values.get('parent');
        const unlink = (values: Map<string, string>): void => {
          if (values.get('parent') !== name) return;
          if (parent) values.set('parent', parent);
          else values.delete('parent');
        };
        unlink(guest.main);
        for (const [other, section] of guest.config.snapshots) if (other !== name) unlink(section.values);
        guest.config.snapshots.delete(name);
        guest.main.delete('lock');
      });
    },
    { atStart: true },
  );
  return { data: task.upid };
}

const S = `${Q}/{vmid}/snapshot`;

/** The snapshot routes of VMs. */
export const snapshotRoutes: RouteModule = {
  name: 'snapshot',
  routes: [
    route('GET', S, guestAudit, listSnapshots),
    route('POST', S, guestModify('VM.Snapshot'), createSnapshot, true),
    route('GET', `${S}/{snapname}/config`, guestAudit, snapshotConfig),
    route('POST', `${S}/{snapname}/rollback`, guestModify('VM.Snapshot'), rollbackSnapshot, true),
    route('DELETE', `${S}/{snapname}`, guestModify('VM.Snapshot'), deleteSnapshot, true),
  ],
};
