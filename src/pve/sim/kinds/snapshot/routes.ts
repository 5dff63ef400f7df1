/**
 * Guest snapshots (`/nodes/{node}/{qemu,lxc}/{vmid}/snapshot`; qemu-server `API2/Qemu.pm` and
 * pve-container `API2/LXC/Snapshot.pm`, `snapshot_list`/`list`, `snapshot`, `get_snapshot_config`,
 * `rollback`, `delsnapshot`; both call pve-guest-common `AbstractConfig.pm`, `snapshot_create`,
 * `snapshot_rollback`, `snapshot_delete`, so one implementation serves both flavours and
 * {@link SNAPSHOT_FLAVOURS} holds what differs). Each write is a task whose config changes are
 * made under the config lock at its start and its end, with the guest's `lock:` (`snapshot`,
 * `rollback`, `snapshot-delete`) held in between, so other writers meet "VM is locked (…)" /
 * "CT is locked (…)" while the volumes are worked on. docs/proxmox-behaviour.md "Snapshots",
 * "Container snapshots".
 */
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError } from '../../errors.js';
import { emptySection, type ConfigSection } from '../../config-file.js';
import { flavourOf } from '../../guest/flavours.js';
import type { Guest } from '../../guest/guest.js';
import { perlTrue } from '../../guest/guest.js';
import { pathGuest } from '../../guest/path-guest.js';
import { guestAudit, guestModify, route, type RouteModule } from '../../route.js';
import { TaskFailure } from '../../tasks.js';
import type { GuestType } from '../../../../core/guest-flavours.js';
import { canSnapshot } from './snapshot-feature.js';

/** What the two APIs do differently around the shared `AbstractConfig` code. */
interface SnapshotFlavour {
  /** The names `POST …/snapshot` refuses before forking its task (qemu: `current`, `pending` any case; pve-container: `current`, `vzdump`). */
  reserved(name: string): string | undefined;
  /** qemu-server's listing says whether each snapshot saved the RAM (`vmstate`); pve-container's has no such field. */
  listsVmstate: boolean;
}

const SNAPSHOT_FLAVOURS: Readonly<Record<GuestType, SnapshotFlavour>> = {
  qemu: {
    reserved: (name) => (name === 'current' ? 'current' : name.toLowerCase() === 'pending' ? 'pending' : undefined),
    listsVmstate: true,
  },
  lxc: {
    reserved: (name) => (name === 'current' || name === 'vzdump' ? name : undefined),
    listsVmstate: false,
  },
};

/** Keys `__snapshot_copy_config` leaves behind. */
function copied(key: string): boolean {
  return !['snapstate', 'snaptime', 'vmstate', 'lock', 'digest', 'description'].includes(key) && !/^unused\d+$/.test(key);
}

/** `__snapshot_copy_config`: a container's raw `lxc.*` lines are one more key it copies. */
function copyConfig(from: ConfigSection, to: ConfigSection): void {
  for (const [key, value] of from.values) if (copied(key)) to.values.set(key, value);
  to.lxc = from.lxc.map(([k, v]) => [k, v]);
}

/** `check_lock`: `guest_type()` names the guest (`VM`, `CT`). */
function checkLock(guest: Guest): void {
  if (guest.lock) throw new TaskFailure(`${flavourOf(guest.type).label} is locked (${guest.lock})`);
}

/** Runs `fn` on the guest under its config lock, then writes the config (`lock_config` + `write_config`). */
async function underLock(ctx: RequestContext, guest: Guest, fn: () => void): Promise<void> {
  await ctx.sim.configLocks.run(guest.type, guest.vmid, () => {
    if (ctx.sim.guests.get(guest.vmid) !== guest)
      throw new TaskFailure(`unable to find configuration file for ${flavourOf(guest.type).label} ${guest.vmid}`);
    fn();
    guest.commit();
  });
}

/** `GET …/snapshot`: every snapshot, then `current` (the config's `parent`, running or not). */
function listSnapshots(type: GuestType, ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, type);
  const out: Record<string, unknown>[] = [];
  for (const name of [...guest.config.snapshots.keys()].sort()) {
    const values = (guest.config.snapshots.get(name) as ConfigSection).values;
    const item: Record<string, unknown> = {
      name,
      snaptime: Number(values.get('snaptime') ?? 0),
      ...(SNAPSHOT_FLAVOURS[type].listsVmstate ? { vmstate: perlTrue(values.get('vmstate')) ? 1 : 0 } : {}),
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

/** `POST …/snapshot`: `qmsnapshot`/`vzsnapshot`; prepare (lock, copy, `snapstate: prepare`), the volumes, commit (`parent`). */
function createSnapshot(type: GuestType, ctx: RequestContext): HandlerResult {
  const name = param(ctx, 'snapname');
  const reserved = SNAPSHOT_FLAVOURS[type].reserved(name);
  if (reserved) throw new DieError(`unable to use snapshot name '${reserved}' (reserved name)\n`);
  const guest = pathGuest(ctx, type);
  const prefix = flavourOf(type).taskPrefix;
  const description = ctx.params.description;
  const task = ctx.startTask(
    param(ctx, 'node'),
    `${prefix}snapshot`,
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
        copyConfig(guest.config.main, section);
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
function snapshotConfig(type: GuestType, ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, type);
  const name = param(ctx, 'snapname');
  const view = guest.snapshotView(name);
  if (!view) throw new DieError(`snapshot '${name}' does not exist\n`);
  // `get_snapshot_config` returns the section itself: no whole-file digest, and pve-container's
  // deletes the raw `lxc.*` keys.
  const { digest: _digest, lxc: _lxc, ...section } = view;
  return { data: section };
}

/** `POST …/snapshot/{snapname}/rollback`: `qmrollback`/`vzrollback`; stop the guest, `lock: rollback`, then the snapshot's config. */
function rollbackSnapshot(type: GuestType, ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, type);
  const name = param(ctx, 'snapname');
  const start = perlTrue(ctx.params.start === undefined ? undefined : String(ctx.params.start));
  const task = ctx.startTask(
    param(ctx, 'node'),
    `${flavourOf(type).taskPrefix}rollback`,
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
        guest.setRunning(false); // __snapshot_rollback_vm_stop: qemu's vm_stop with a 5 s timeout, pve-container's kills
        guest.main.set('lock', 'rollback');
      });
      await log.elapsed;
      await underLock(ctx, guest, () => {
        const snap = snapshotOf();
        if (guest.lock !== 'rollback') throw new TaskFailure('got wrong lock');
        const kept = [...guest.main].filter(([key]) => /^unused\d+$/.test(key) || key === 'description');
        guest.main.clear();
        for (const [key, value] of kept) guest.main.set(key, value);
        copyConfig(snap, guest.config.main);
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

/** `DELETE …/snapshot/{snapname}`: `qmdelsnapshot`/`vzdelsnapshot`; `lock: snapshot-delete`, the volumes, then the section and its parent links. */
function deleteSnapshot(type: GuestType, ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, type);
  const name = param(ctx, 'snapname');
  const task = ctx.startTask(
    param(ctx, 'node'),
    `${flavourOf(type).taskPrefix}delsnapshot`,
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

/** The five snapshot routes under one flavour's API folder. */
function routesOf(type: GuestType): RouteModule['routes'] {
  const S = `${flavourOf(type).apiPath}/{vmid}/snapshot`;
  const on =
    (handler: (type: GuestType, ctx: RequestContext) => HandlerResult) =>
    (ctx: RequestContext): HandlerResult =>
      handler(type, ctx);
  return [
    route('GET', S, guestAudit, on(listSnapshots)),
    route('POST', S, guestModify('VM.Snapshot'), on(createSnapshot), true),
    route('GET', `${S}/{snapname}/config`, guestAudit, on(snapshotConfig)),
    route('POST', `${S}/{snapname}/rollback`, guestModify('VM.Snapshot'), on(rollbackSnapshot), true),
    route('DELETE', `${S}/{snapname}`, guestModify('VM.Snapshot'), on(deleteSnapshot), true),
  ];
}

/** The snapshot routes of VMs and containers. */
export const snapshotRoutes: RouteModule = {
  name: 'snapshot',
  routes: [...routesOf('qemu'), ...routesOf('lxc')],
};
