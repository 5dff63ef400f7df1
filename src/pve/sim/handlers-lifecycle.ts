/**
 * Guest lifecycle: create (`qmcreate`/`vzcreate`), destroy, start/stop/shutdown, resize and
 * disk moves. Synchronous checks and task-time checks are split exactly where Proxmox splits
 * them (docs/proxmox-api.md#locks, #create, #destroy, #power-endpoints): e.g. a qemu destroy of a
 * locked VM returns a UPID whose task fails, while an LXC destroy fails at once.
 */
import { randomUUID } from 'node:crypto';
import type { GuestType } from '../../core/model.js';
import { normaliseTags } from '../../core/property-string.js';
import { flag, param, type HandlerResult, type RequestContext } from './context.js';
import { DieError, ParamError, PermissionError } from './errors.js';
import { Guest, perlTrue } from './guest.js';
import { pathGuest } from './handlers-guest.js';
import {
  formatSize,
  isCdrom,
  isQemuDrive,
  optionFormat,
  parseOption,
  parseSize,
  parseVolumeId,
  printPropertyString,
} from './property-format.js';
import { TaskFailure, type TaskContext } from './tasks.js';
import { underConfigLock, whenElapsed } from './config-lock.js';
import { hasPrivilege } from './auth.js';
import {
  checkLxcOptionPermissions,
  checkQemuCreateDevices,
  checkQemuOptionPermissions,
  requireAnyPrivilege,
  requirePrivilege,
} from './permissions.js';
import {
  applyAllPending,
  assertLxcWritable,
  assertQemuWritable,
  createQemuDisk,
  normaliseLxcList,
  printLxcNet,
  printQemuNet,
} from './update.js';

const QEMU_CREATE_ONLY = new Set([
  'node',
  'vmid',
  'archive',
  'storage',
  'force',
  'unique',
  'live-restore',
  'pool',
  'bwlimit',
  'start',
  'ha-managed',
  'import-working-storage',
]);
const LXC_CREATE_ONLY = new Set([
  'node',
  'vmid',
  'ostemplate',
  'password',
  'ssh-public-keys',
  'storage',
  'restore',
  'force',
  'unique',
  'ignore-unpack-errors',
  'pool',
  'start',
  'ha-managed',
  'bwlimit',
]);

/** Root-only parameters of the power endpoints (tokens are never root@pam). */
const ROOT_ONLY_POWER = [
  'skiplock',
  'migratedfrom',
  'stateuri',
  'targetstorage',
  'force-cpu',
  'migration_type',
  'migration_network',
  'nets-host-mtu',
  'with-conntrack-state',
  'keepActive',
];

/** Existing guest with this VMID anywhere in the cluster → `check_vmid_unused` text. */
function vmidInUse(ctx: RequestContext, vmid: number): string | undefined {
  const existing = ctx.sim.guests.get(vmid);
  if (!existing) return undefined;
  return `${existing.type === 'qemu' ? 'VM' : 'CT'} ${vmid} already exists on node '${existing.node}'`;
}

/** `get_default_bootdevices` + `print_bootorder`: first disk, first CD-ROM, first NIC. */
function defaultBootOrder(values: Map<string, string>): string | undefined {
  const driveKeys = [
    ...Array.from({ length: 4 }, (_, i) => `ide${i}`),
    ...Array.from({ length: 6 }, (_, i) => `sata${i}`),
    ...Array.from({ length: 31 }, (_, i) => `scsi${i}`),
    ...Array.from({ length: 16 }, (_, i) => `virtio${i}`),
  ];
  const first = (cdrom: boolean): string | undefined =>
    driveKeys.find((k) => {
      const v = values.get(k);
      if (v === undefined) return false;
      const drive = parseOption('qemu', k, v);
      return drive !== undefined && isCdrom(drive) === cdrom;
    });
  const devices = [first(false), first(true), Array.from({ length: 32 }, (_, i) => `net${i}`).find((k) => values.has(k))];
  const list = devices.filter((d): d is string => d !== undefined);
  return list.length ? `order=${list.join(';')}` : undefined;
}

/** `check_vm_perm`-style: the privilege on `/vms/<vmid>`, or on the pool the guest joins. */
function holdsOnGuestOrPool(ctx: RequestContext, vmid: number, pool: string | undefined, privilege: string): boolean {
  return (
    hasPrivilege(ctx.principal, `/vms/${vmid}`, privilege) ||
    (pool !== undefined && hasPrivilege(ctx.principal, `/pool/${pool}`, privilege))
  );
}

/** Storages a create allocates new volumes on (`storage:size`), for `Datastore.AllocateSpace`. */
function allocationStorages(type: GuestType, params: Record<string, string>): string[] {
  const out = new Set<string>();
  for (const [key, value] of Object.entries(params)) {
    const isVolume = type === 'qemu' ? isQemuDrive(key) : key === 'rootfs' || /^mp\d+$/.test(key);
    if (!isVolume) continue;
    const parsed = parseOption(type, key, value);
    const volid = (type === 'qemu' ? parsed?.file : parsed?.volume) ?? '';
    const alloc = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(?:\.\d+)?|cloudinit)$/i.exec(volid);
    if (alloc) out.add(alloc[1] as string);
  }
  return [...out];
}

/**
 * `POST /nodes/{node}/qemu` (`create_vm`). Permissions are checked inside, after parameter
 * validation: pool, `storage`, `start`, VM.Allocate, then every option (`only root can set …`
 * for root-only ones, devices), and only then whether the VMID is taken. `lock: create` now, the
 * final config when the task ends; a value the config file cannot hold fails the task.
 */
export function createQemu(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const vmid = Number(param(ctx, 'vmid'));
  const pool = ctx.params.pool;
  if (pool !== undefined) ctx.sim.assertPool(pool);
  if (ctx.params.storage !== undefined) requirePrivilege(ctx.principal, `/storage/${ctx.params.storage}`, 'Datastore.AllocateSpace');
  if (flag(ctx, 'ha-managed')) requirePrivilege(ctx.principal, '/', 'Sys.Console');
  if (flag(ctx, 'start') && !holdsOnGuestOrPool(ctx, vmid, pool, 'VM.PowerMgmt')) {
    throw new PermissionError(`/vms/${vmid}, VM.PowerMgmt`);
  }
  if (!holdsOnGuestOrPool(ctx, vmid, pool, 'VM.Allocate')) throw new PermissionError();
  if (ctx.params.archive !== undefined) throw new DieError(`unable to restore VM ${vmid} - restore is not supported by the simulator\n`);
  const options: Record<string, string> = {};
  for (const key of Object.keys(ctx.params).sort()) if (!QEMU_CREATE_ONLY.has(key)) options[key] = ctx.params[key] as string;
  if (Object.keys(options).length > 0) {
    for (const storage of allocationStorages('qemu', options)) {
      requirePrivilege(ctx.principal, `/storage/${storage}`, 'Datastore.AllocateSpace');
    }
    checkQemuOptionPermissions(ctx.principal, vmid, Object.keys(options));
    checkQemuCreateDevices(ctx.principal, vmid, options);
  }
  const inUse = vmidInUse(ctx, vmid);
  if (inUse) throw new DieError(`unable to create VM ${vmid} - ${inUse}\n`);
  const values = new Map<string, string>();
  for (const [key, raw] of Object.entries(options)) {
    let value = raw;
    if (/^net\d+$/.test(key)) value = printQemuNet(value);
    if (key === 'tags') value = normaliseTags(value);
    if (key === 'cdrom') {
      values.set('ide2', `${value},media=cdrom`);
      continue;
    }
    values.set(key, value);
  }
  const guest = new Guest(vmid, 'qemu', node, 'lock: create\n', false);
  ctx.sim.insertGuest(guest);
  const start = flag(ctx, 'start');
  const task = ctx.startTask(
    node,
    'qmcreate',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'qemu',
      vmid,
      whenElapsed((log, unlock) => {
        const created: string[] = [];
        try {
          for (const [key, value] of values) {
            if (!isQemuDrive(key)) continue;
            const disk = createQemuDisk(ctx.sim, guest, key, value);
            const file = parseOption('qemu', key, disk)?.file;
            if (disk !== value && !/media=cdrom/.test(disk)) {
              log.log(`${key}: successfully created disk '${disk}'`);
              if (file) created.push(file);
            }
            values.set(key, disk);
          }
          if (!values.has('boot')) {
            const boot = defaultBootOrder(values);
            if (boot) values.set('boot', boot);
          }
          if (!values.has('smbios1')) values.set('smbios1', `uuid=${randomUUID()}`);
          if (!values.has('vmgenid') || values.get('vmgenid') === '1') values.set('vmgenid', randomUUID());
          values.set('meta', `creation-qemu=10.1.2,ctime=${Math.floor(Date.now() / 1000)}`);
          // `write_vm_config` checks every value it writes.
          for (const [key, value] of values) assertQemuWritable(key, value);
        } catch (err) {
          for (const volid of created) ctx.sim.volumes.free(volid);
          ctx.sim.deleteGuest(vmid);
          throw new TaskFailure(`unable to create VM ${vmid} - ${(err as Error).message}`);
        }
        guest.main.clear();
        for (const [k, v] of values) guest.main.set(k, v);
        guest.commit();
        if (pool !== undefined) ctx.sim.addToPool(pool, vmid);
        if (start) {
          // After `lock_config_full` returned, `PVE::API2::Qemu->vm_start` forks a start task of its own.
          unlock();
          log.log('Execute autostart');
          startTaskOf(ctx, 'qemu', node, vmid);
        }
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}

/** `ostype` from a template name (`debian-12-standard_…` → `debian`). */
function ostypeFromTemplate(template: string): string {
  const base = template.replace(/^.*[/:]/, '').toLowerCase();
  const known = ['debian', 'ubuntu', 'centos', 'fedora', 'opensuse', 'archlinux', 'alpine', 'gentoo', 'nixos', 'devuan'];
  return (
    known.find((os) => base.startsWith(os)) ?? (base.startsWith('rockylinux') || base.startsWith('almalinux') ? 'centos' : 'unmanaged')
  );
}

/**
 * `POST /nodes/{node}/lxc` (`create_vm`). Permissions are checked inside, after parameter
 * validation, and after the VMID check: a privileged container needs Sys.Modify, then
 * VM.Allocate, then `check_ct_modify_config_perm` (feature flags, mount point types, devices,
 * hookscript) and the storages. Since pve-container 6.0.7 a container is unprivileged unless the
 * request says `unprivileged=0`, and `unprivileged: 1` is written to its config.
 */
export function createLxc(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const vmid = Number(param(ctx, 'vmid'));
  const pool = ctx.params.pool;
  const unprivileged = ctx.params.unprivileged === undefined ? true : flag(ctx, 'unprivileged');
  if (!unprivileged) requirePrivilege(ctx.principal, '/', 'Sys.Modify');
  if (flag(ctx, 'ha-managed')) requirePrivilege(ctx.principal, '/', 'Sys.Console');
  const inUse = vmidInUse(ctx, vmid);
  if (inUse) throw new DieError(`${inUse}\n`);
  if (pool !== undefined) ctx.sim.assertPool(pool);
  if (!holdsOnGuestOrPool(ctx, vmid, pool, 'VM.Allocate')) throw new PermissionError();
  const template = param(ctx, 'ostemplate');
  const storage = ctx.params.storage ?? 'local';
  const options = new Map<string, string>();
  for (const key of Object.keys(ctx.params).sort()) {
    if (LXC_CREATE_ONLY.has(key) || key === 'unprivileged') continue;
    options.set(key, ctx.params[key] as string);
  }
  checkLxcOptionPermissions(ctx.principal, vmid, undefined, options, [], unprivileged);
  checkTemplateAccess(ctx, template);
  const values = new Map<string, string>();
  for (const [key, raw] of options) {
    let value = raw;
    // A bare size on a mount point means the default storage (`storage`).
    if ((key === 'rootfs' || /^mp\d+$/.test(key)) && /^\d+(\.\d+)?$/.test(value)) value = `${storage}:${value}`;
    if (/^unused\d+$/.test(key)) continue;
    if (/^net\d+$/.test(key)) value = printLxcNet(value);
    if (key === 'tags') value = normaliseTags(value);
    if (key === 'nameserver' || key === 'searchdomain') value = normaliseLxcList(value);
    values.set(key, value);
  }
  if (values.has('rootfs') || [...values.keys()].some((k) => /^mp\d+$/.test(k))) {
    if (!values.has('rootfs')) throw new DieError("mount points configured, but 'rootfs' not set - aborting\n");
  }
  for (const key of ['rootfs', ...[...values.keys()].filter((k) => /^mp\d+$/.test(k))]) {
    const volume = parseOption('lxc', key, values.get(key) ?? `${storage}:4`)?.volume ?? '';
    const id = parseVolumeId(volume);
    if (id) checkContainerStorage(ctx, id.storage);
  }
  if (unprivileged) values.set('unprivileged', '1');
  if (!values.has('arch')) values.set('arch', 'amd64');
  if (!values.has('ostype')) values.set('ostype', ostypeFromTemplate(template));
  if (!values.has('rootfs')) values.set('rootfs', `${storage}:4`);
  const guest = new Guest(vmid, 'lxc', node, 'lock: create\n', false);
  ctx.sim.insertGuest(guest);
  const start = flag(ctx, 'start');
  const task = ctx.startTask(
    node,
    'vzcreate',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'lxc',
      vmid,
      whenElapsed((log, unlock) => {
        const created: string[] = [];
        try {
          for (const [key, value] of values) {
            if (key !== 'rootfs' && !/^mp\d+$/.test(key)) continue;
            const format = optionFormat('lxc', key);
            const mp = parseOption('lxc', key, value);
            const alloc = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(?:\.\d+)?)$/i.exec(mp?.volume ?? '');
            if (!format || !mp || !alloc) continue;
            const bytes = Math.round(Number(alloc[2]) * 1024 ** 3);
            mp.volume = ctx.sim.volumes.allocate(alloc[1] as string, vmid, bytes);
            created.push(mp.volume);
            mp.size = formatSize(bytes);
            values.set(key, printPropertyString(format, mp));
          }
          const path = ctx.sim.volumes.filePath(template);
          if (!ctx.sim.volumes.fileExists(template)) throw new Error(`failed to open '${path}': No such file or directory`);
          log.log(`extracting archive '${path}'`);
          log.log('Total bytes read: 523182080 (499MiB, 1.2GiB/s)');
          // The defaults `create_vm` fills in once the archive is extracted.
          if (!values.get('hostname')) values.set('hostname', `CT${vmid}`);
          if (!perlTrue(values.get('memory'))) values.set('memory', '512');
          if (!values.has('swap')) values.set('swap', '512');
          assertLxcWritable([values]);
        } catch (err) {
          for (const volid of created) ctx.sim.volumes.free(volid);
          ctx.sim.deleteGuest(vmid);
          throw new TaskFailure(`unable to create CT ${vmid} - ${(err as Error).message}`);
        }
        guest.main.clear();
        for (const [k, v] of values) guest.main.set(k, v);
        guest.commit();
        if (pool !== undefined) ctx.sim.addToPool(pool, vmid);
        // Once the lock is released, `PVE::API2::LXC::Status->vm_start`, without a log line: a
        // `vzstart` task of its own.
        if (start) {
          unlock();
          startTaskOf(ctx, 'lxc', node, vmid);
        }
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}

/** `check_volume_access` for the template: it must be a `vztmpl` volume the token may read. */
function checkTemplateAccess(ctx: RequestContext, template: string): void {
  const id = parseVolumeId(template);
  if (!id) {
    // A path: `die "Only root can pass arbitrary filesystem paths."` (no newline: Perl appends the location).
    throw new DieError('Only root can pass arbitrary filesystem paths. at /usr/share/perl5/PVE/Storage.pm line 652.\n');
  }
  ctx.sim.volumes.checkStorage(id.storage);
  if (!/^vztmpl\//.test(id.volname)) {
    throw new DieError(`unable to use volume ${template} - content type needs to be 'vztmpl'\n`);
  }
  if (hasPrivilege(ctx.principal, `/storage/${id.storage}`, 'Datastore.Allocate')) return;
  requireAnyPrivilege(ctx.principal, `/storage/${id.storage}`, ['Datastore.AllocateSpace', 'Datastore.Audit']);
}

/** `$check_and_activate_storage` of lxc's create: the storage must hold container directories. */
function checkContainerStorage(ctx: RequestContext, id: string): void {
  const storage = ctx.sim.volumes.storage(id);
  if (!storage) throw new DieError(`storage '${id}' does not exist\n`);
  if (!storage.content.has('rootdir')) throw new ParamError({ storage: `storage '${id}' does not support container directories` });
  requirePrivilege(ctx.principal, `/storage/${id}`, 'Datastore.AllocateSpace');
}

/** `DELETE /nodes/{node}/qemu/{vmid}`: protection/running now, lock only in the task. */
export function destroyQemu(ctx: RequestContext): HandlerResult {
  if (flag(ctx, 'skiplock')) throw new ParamError({ skiplock: 'Only root may use this option.' });
  const guest = pathGuest(ctx, 'qemu');
  const vmid = guest.vmid;
  if (perlTrue(guest.main.get('protection'))) throw new DieError(`can't remove VM ${vmid} - protection mode enabled\n`);
  if (guest.running) throw new DieError(`VM ${vmid} is running - destroy failed\n`);
  const task = ctx.startTask(
    guest.node,
    'qmdestroy',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'qemu',
      vmid,
      whenElapsed((log) => {
        if (ctx.sim.guests.get(vmid) !== guest)
          throw new TaskFailure(`Configuration file 'nodes/${guest.node}/qemu-server/${vmid}.conf' does not exist`);
        if (guest.lock && guest.lock !== 'suspended') throw new TaskFailure(`VM is locked (${guest.lock})`);
        if (perlTrue(guest.main.get('protection'))) throw new TaskFailure(`can't remove VM ${vmid} - protection mode enabled`);
        for (const volid of volumesOf(guest)) log.log(`  Logical volume "${parseVolumeId(volid)?.volname ?? volid}" successfully removed.`);
        if (flag(ctx, 'purge')) log.log(`purging VM ${vmid} from related configurations..`);
        ctx.sim.deleteGuest(vmid);
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}

/** `DELETE /nodes/{node}/lxc/{vmid}`: protection, lock and running are all synchronous, in that order. */
export function destroyLxc(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'lxc');
  const vmid = guest.vmid;
  if (perlTrue(guest.main.get('protection'))) throw new DieError(`can't remove CT ${vmid} - protection mode enabled\n`);
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  const force = flag(ctx, 'force');
  if (guest.running && !force) throw new DieError(`unable to destroy CT ${vmid} - container is running\n`);
  const task = ctx.startTask(
    guest.node,
    'vzdestroy',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'lxc',
      vmid,
      whenElapsed((log) => {
        if (ctx.sim.guests.get(vmid) !== guest)
          throw new TaskFailure(`Configuration file 'nodes/${guest.node}/lxc/${vmid}.conf' does not exist`);
        if (guest.lock) throw new TaskFailure(`CT is locked (${guest.lock})`);
        // A plain `warn`: logged, not counted.
        if (guest.running) log.log(`forced to stop CT ${vmid} before destroying!`);
        for (const volid of volumesOf(guest)) log.log(`  Logical volume "${parseVolumeId(volid)?.volname ?? volid}" successfully removed.`);
        ctx.sim.deleteGuest(vmid);
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}

/** Volume ids referenced by the main section. */
function volumesOf(guest: Guest): string[] {
  const out: string[] = [];
  for (const [key, value] of guest.main) {
    if (/^unused\d+$/.test(key)) out.push(value);
    else if (guest.type === 'qemu' ? isQemuDrive(key) : key === 'rootfs' || /^mp\d+$/.test(key)) {
      const parsed = parseOption(guest.type, key, value);
      const volid = parsed?.file ?? parsed?.volume;
      if (volid && parsed && !isCdrom(parsed) && parseVolumeId(volid)) out.push(volid);
    }
  }
  return out;
}

/** `POST …/status/{start|stop|shutdown}` with the qemu/lxc split of docs/proxmox-api.md#power-endpoints. */
export function power(type: GuestType, action: 'start' | 'stop' | 'shutdown') {
  return (ctx: RequestContext): HandlerResult => {
    // Perl checks `if $param && $authuser ne 'root@pam'`: a false value (`skiplock=0`) passes.
    for (const name of ROOT_ONLY_POWER) {
      if (flag(ctx, name)) throw new ParamError({ [name]: 'Only root may use this option.' });
    }
    const node = param(ctx, 'node');
    const vmid = Number(param(ctx, 'vmid'));
    const taskType = `${type === 'qemu' ? 'qm' : 'vz'}${action}`;
    if (type === 'lxc') {
      // `check_running` asks the node, before any config is loaded: a container that does not
      // exist here is simply not running.
      const here = ctx.sim.guests.get(vmid);
      const running = here?.type === 'lxc' && here.node === node && here.running;
      if (action === 'start' && running) throw new DieError(`CT ${vmid} already running\n`);
      if (action !== 'start' && !running) throw new DieError(`CT ${vmid} not running\n`);
    }
    const worker = underConfigLock(ctx.sim.configLocks, type, vmid, whenElapsed(powerWorker(ctx, type, action, node, vmid)));
    const task = ctx.startTask(node, taskType, String(vmid), worker, { atStart: true });
    return { data: task.upid };
  };
}

/** A start task as the API's `vm_start` forks it when a create task calls it, as the same user. */
function startTaskOf(ctx: RequestContext, type: GuestType, node: string, vmid: number): void {
  const taskType = type === 'qemu' ? 'qmstart' : 'vzstart';
  const worker = underConfigLock(ctx.sim.configLocks, type, vmid, whenElapsed(powerWorker(ctx, type, 'start', node, vmid)));
  ctx.sim.tasks.start(node, taskType, String(vmid), ctx.principal.token.id, worker, { atStart: true });
}

/** The worker of a power task: what runs under the config lock once the task is forked. */
function powerWorker(
  ctx: RequestContext,
  type: GuestType,
  action: 'start' | 'stop' | 'shutdown',
  node: string,
  vmid: number,
): (log: TaskContext) => void {
  const label = type === 'qemu' ? 'VM' : 'CT';
  const dir = type === 'qemu' ? 'qemu-server' : 'lxc';
  return (log) => {
    // The worker loads the config: a missing guest fails in the task.
    const guest = ctx.sim.guests.get(vmid);
    if (!guest || guest.type !== type || guest.node !== node) {
      throw new TaskFailure(`Configuration file 'nodes/${node}/${dir}/${vmid}.conf' does not exist`);
    }
    if (action === 'start') {
      // Template first, then the lock (a suspended VM or a mounted CT may start), then running.
      if (perlTrue(guest.main.get('template'))) {
        throw new TaskFailure(`you can't start a ${type === 'qemu' ? 'vm' : 'CT'} if it's a template`);
      }
      // qemu: a running VM whose backup holds the lock is resumed, which is no error.
      if (type === 'qemu' && guest.lock === 'backup' && guest.running) return;
      const exempt = type === 'qemu' ? 'suspended' : 'mounted';
      if (guest.lock && guest.lock !== exempt) throw new TaskFailure(`${label} is locked (${guest.lock})`);
      if (guest.running) throw new TaskFailure(`${label} ${vmid} already running`);
      applyAllPending(ctx.sim, guest);
      if (type === 'qemu') warnIgnoredMtu(guest, log);
      guest.setRunning(true);
      return;
    }
    if (guest.lock) throw new TaskFailure(`${label} is locked (${guest.lock})`);
    if (!guest.running) return; // stopping a stopped VM is fine
    if (type === 'qemu' && action === 'shutdown') log.log(`VM ${vmid} shutting down`);
    // qemu applies pending changes in vm_stop_cleanup; containers only when starting.
    if (type === 'qemu') applyAllPending(ctx.sim, guest);
    guest.setRunning(false);
  };
}

/**
 * `POST …/status/reboot` (qemu-server `API2/Qemu.pm` and pve-container `API2/LXC/Status.pm`,
 * `vm_reboot`; VM.PowerMgmt): a guest that is not running is refused at once, in both with
 * "VM <id> not running". The qemu task shuts the VM down (the config lock is checked, pending
 * values apply as the VM stops) and qmeventd starts it again in a `qmstart` task of root@pam's
 * (qemu-server `CLI/qm.pm`, `cleanup`); a container is stopped and started inside the `vzreboot`
 * task, which applies its pending values (pve-container `LXC.pm`, `vm_reboot`).
 */
export function reboot(type: GuestType) {
  return (ctx: RequestContext): HandlerResult => {
    const node = param(ctx, 'node');
    const vmid = Number(param(ctx, 'vmid'));
    const here = ctx.sim.guests.get(vmid);
    const exists = here?.type === type && here.node === node;
    // `check_running` of qemu asserts the config exists; pve-container's only asks the node.
    if (type === 'qemu' && !exists) throw new DieError(`unable to find configuration file for VM ${vmid} on node '${node}'\n`);
    if (!exists || !here.running) throw new DieError(`VM ${vmid} not running\n`);
    const task = ctx.startTask(
      node,
      type === 'qemu' ? 'qmreboot' : 'vzreboot',
      String(vmid),
      underConfigLock(
        ctx.sim.configLocks,
        type,
        vmid,
        whenElapsed((_log, unlock) => {
          const guest = ctx.sim.guests.get(vmid);
          if (guest !== here || !guest.running) return; // only a running guest is rebooted
          if (type === 'lxc') {
            guest.setRunning(false);
            applyAllPending(ctx.sim, guest);
            guest.setRunning(true);
            return;
          }
          if (guest.lock) throw new TaskFailure(`VM is locked (${guest.lock})`);
          applyAllPending(ctx.sim, guest);
          guest.setRunning(false);
          // qm cleanup runs once the VM is down and the reboot worker has let go of the lock.
          unlock();
          const restart = whenElapsed(() => {
            if (ctx.sim.guests.get(vmid) !== guest || guest.running) return;
            applyAllPending(ctx.sim, guest);
            guest.setRunning(true);
          });
          ctx.sim.tasks.start(node, 'qmstart', String(vmid), 'root@pam', underConfigLock(ctx.sim.configLocks, 'qemu', vmid, restart), {
            atStart: true,
          });
        }),
      ),
      { atStart: true },
    );
    return { data: task.upid };
  };
}

/**
 * `print_netdevice_full` (qemu-server `QemuServer.pm`), run for every NIC when the VM starts:
 * an MTU only applies to a VirtIO NIC on a bridge; anywhere else it is ignored with a
 * `log_warn`, which makes the start task end `WARNINGS: N`.
 */
function warnIgnoredMtu(guest: Guest, log: TaskContext): void {
  for (let i = 0; i < 32; i++) {
    const netid = `net${i}`;
    const value = guest.main.get(netid);
    const net = value === undefined ? undefined : parseOption('qemu', netid, value);
    if (net?.mtu === undefined) continue;
    if (net.model === 'virtio' && net.bridge) continue;
    const why = net.bridge ? 'not using VirtIO' : 'no bridge configured';
    log.warn(`netdev ${netid}: ignoring MTU '${net.mtu}', ${why}`);
  }
}

function driveParts(
  guest: Guest,
  key: string,
): { format: NonNullable<ReturnType<typeof optionFormat>>; data: Record<string, string> } | undefined {
  const value = guest.main.get(key);
  const format = optionFormat(guest.type, key);
  if (value === undefined || !format) return undefined;
  const data = parseOption(guest.type, key, value);
  return data ? { format, data } : undefined;
}

/** Computes the new size of a resize request (`+5G` adds, `40G` sets). */
function newSize(current: number, size: string): number {
  const m = /^(\+)?(\d+(?:\.\d+)?)([KMGT])?$/.exec(size);
  if (!m) throw new DieError(`invalid size string\n`);
  const value = parseSize(`${m[2]}${m[3] ?? ''}`) ?? 0;
  return m[1] ? current + value : value;
}

/** `PUT /nodes/{node}/qemu/{vmid}/resize`: all checks run inside the `resize` task. */
export function resizeQemu(ctx: RequestContext): HandlerResult {
  if (flag(ctx, 'skiplock')) throw new ParamError({ skiplock: 'Only root may use this option.' });
  const node = param(ctx, 'node');
  const vmid = Number(param(ctx, 'vmid'));
  const disk = param(ctx, 'disk');
  const size = param(ctx, 'size');
  const digest = ctx.params.digest;
  const task = ctx.startTask(
    node,
    'resize',
    String(vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'qemu',
      vmid,
      whenElapsed((log) => {
        const guest = ctx.sim.guests.get(vmid);
        if (guest?.type !== 'qemu' || guest.node !== node) {
          throw new TaskFailure(`Configuration file 'nodes/${node}/qemu-server/${vmid}.conf' does not exist`);
        }
        if (digest && digest !== guest.digest) throw new TaskFailure('checksum mismatch (file change by other user?)');
        if (guest.lock) throw new TaskFailure(`VM is locked (${guest.lock})`);
        const drive = driveParts(guest, disk);
        if (!drive) throw new TaskFailure(`disk '${disk}' does not exist`);
        if (isCdrom(drive.data)) throw new TaskFailure("you can't resize a cdrom");
        const volid = drive.data.file ?? '';
        const current = ctx.sim.volumes.size(volid) ?? parseSize(drive.data.size ?? '0') ?? 0;
        const target = newSize(current, size);
        if (target < current) throw new TaskFailure('shrinking disks is not supported');
        if (target === current) return;
        log.log(
          `  Size of logical volume pve/${parseVolumeId(volid)?.volname ?? volid} changed from ${formatSize(current)} to ${formatSize(target)}.`,
        );
        ctx.sim.volumes.setSize(volid, target);
        drive.data.size = formatSize(target);
        guest.main.set(disk, printPropertyString(drive.format, drive.data));
        guest.commit();
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}

/** `PUT /nodes/{node}/lxc/{vmid}/resize`: checks are synchronous, the grow runs in a task. */
export function resizeLxc(ctx: RequestContext): HandlerResult {
  const guest = pathGuest(ctx, 'lxc');
  const disk = param(ctx, 'disk');
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  const digest = ctx.params.digest;
  if (digest && digest !== guest.digest) throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
  const drive = driveParts(guest, disk);
  if (!drive) throw new DieError(`disk '${disk}' does not exist\n`);
  const volid = drive.data.volume ?? '';
  const current = ctx.sim.volumes.size(volid) ?? parseSize(drive.data.size ?? '0') ?? 0;
  const target = newSize(current, param(ctx, 'size'));
  if (target < current) throw new DieError('unable to shrink disk size\n');
  if (target === current) throw new DieError('disk is already at specified size\n');
  const task = ctx.startTask(
    guest.node,
    'resize',
    String(guest.vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'lxc',
      guest.vmid,
      whenElapsed((log) => {
        log.log(
          `  Size of logical volume pve/${parseVolumeId(volid)?.volname ?? volid} changed from ${formatSize(current)} to ${formatSize(target)}.`,
        );
        const fresh = driveParts(guest, disk);
        if (!fresh) throw new TaskFailure(`disk '${disk}' does not exist`);
        ctx.sim.volumes.setSize(volid, target);
        fresh.data.size = formatSize(target);
        guest.main.set(disk, printPropertyString(fresh.format, fresh.data));
        guest.commit();
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}

/** Moves a volume to another storage at task end; the old one becomes `unusedN` unless deleted. */
function moveVolume(ctx: RequestContext, guest: Guest, key: string, storage: string, remove: boolean): void {
  const drive = driveParts(guest, key);
  if (!drive) throw new TaskFailure(`disk '${key}' does not exist`);
  const volumeKey = guest.type === 'qemu' ? 'file' : 'volume';
  const oldVolid = drive.data[volumeKey] ?? '';
  const bytes = ctx.sim.volumes.size(oldVolid) ?? parseSize(drive.data.size ?? '0') ?? 0;
  drive.data[volumeKey] = ctx.sim.volumes.allocate(storage, guest.vmid, bytes);
  guest.main.set(key, printPropertyString(drive.format, drive.data));
  if (remove) {
    ctx.sim.volumes.free(oldVolid);
  } else {
    for (let i = 0; i < 256; i++) {
      if (!guest.main.has(`unused${i}`)) {
        guest.main.set(`unused${i}`, oldVolid);
        break;
      }
    }
  }
}

/**
 * Where a disk move goes, decided before anything is loaded: `storage` and `target-vmid` are
 * exclusive and one of them is required, both a parameter error under both names (qemu-server
 * `API2/Qemu.pm`, `move_vm_disk`; pve-container `API2/LXC.pm`, `move_volume`). Undefined means a
 * move to another guest, which the simulator does not do.
 */
function targetStorage(ctx: RequestContext): string | undefined {
  const storage = ctx.params.storage;
  const targetVmid = ctx.params['target-vmid'];
  let both: string | undefined;
  if (targetVmid && storage) both = "either set 'storage' or 'target-vmid', but not both";
  else if (!targetVmid && !storage) both = "both 'storage' and 'target-vmid' missing, either needs to be set";
  if (both !== undefined) throw new ParamError({ 'target-vmid': both, storage: both });
  return targetVmid ? undefined : storage;
}

/** `POST /nodes/{node}/qemu/{vmid}/move_disk`: early checks synchronous, the copy in `qmmove`. */
export function moveDisk(ctx: RequestContext): HandlerResult {
  const storage = targetStorage(ctx);
  if (storage === undefined) throw new DieError('moving a disk to another VM is not supported by the simulator\n');
  const disk = param(ctx, 'disk');
  const remove = flag(ctx, 'delete');
  const digest = ctx.params.digest;
  const check = (guest: Guest): void => {
    if (guest.lock) throw new DieError(`VM is locked (${guest.lock})\n`);
    if (digest && digest !== guest.digest) throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
    const drive = driveParts(guest, disk);
    if (!drive) throw new DieError(`disk '${disk}' does not exist\n`);
    if (isCdrom(drive.data)) throw new DieError("you can't move a cdrom\n");
    const parsed = parseVolumeId(drive.data.file ?? '');
    if (!parsed) throw new DieError(`disk '${disk}' has no associated volume\n`);
    if (parsed.storage === storage) throw new DieError("you can't move to the same storage with same format\n");
    ctx.sim.volumes.checkStorage(storage);
  };
  const guest = pathGuest(ctx, 'qemu');
  check(guest);
  const task = ctx.startTask(
    guest.node,
    'qmmove',
    String(guest.vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'qemu',
      guest.vmid,
      whenElapsed((log) => {
        try {
          check(guest);
        } catch (err) {
          throw new TaskFailure((err as Error).message);
        }
        log.log(`create full clone of drive ${disk} (${guest.main.get(disk) ?? ''})`);
        moveVolume(ctx, guest, disk, storage, remove);
        guest.commit();
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}

/** `POST /nodes/{node}/lxc/{vmid}/move_volume`: sets `lock: disk` until the task ends. */
export function moveLxcVolume(ctx: RequestContext): HandlerResult {
  const storage = targetStorage(ctx);
  if (storage === undefined) throw new DieError('moving a volume to another CT is not supported by the simulator\n');
  const guest = pathGuest(ctx, 'lxc');
  const volume = param(ctx, 'volume');
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  if (guest.running) throw new DieError('cannot move volumes of a running container\n');
  if (!driveParts(guest, volume)) throw new DieError(`volume '${volume}' does not exist\n`);
  const digest = ctx.params.digest;
  if (digest && digest !== guest.digest) throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
  ctx.sim.volumes.checkStorage(storage);
  guest.main.set('lock', 'disk');
  guest.commit();
  const task = ctx.startTask(
    guest.node,
    'move_volume',
    String(guest.vmid),
    underConfigLock(
      ctx.sim.configLocks,
      'lxc',
      guest.vmid,
      whenElapsed((log) => {
        try {
          log.log(`moving volume '${volume}' to storage '${storage}'`);
          moveVolume(ctx, guest, volume, storage, flag(ctx, 'delete'));
        } finally {
          if (guest.lock === 'disk') guest.main.delete('lock');
          guest.commit();
        }
      }),
    ),
    { atStart: true },
  );
  return { data: task.upid };
}
