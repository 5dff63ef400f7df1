/**
 * A VM's config update with qemu-server's semantics (docs/proxmox-api.md#config-updates): the
 * synchronous checks of `$update_vm_api`, then the update function (run under the config lock)
 * that writes values to `[PENDING]`, cleans up, and either hot-plugs (running VM, the verdicts
 * shared with the planner in core/hotplug.ts) or applies everything (stopped VM); and the disk
 * allocation and NIC defaults a create shares with it.
 */
import { recordCloudinitChange } from '../guest/cloudinit.js';
import { importSourceSize } from '../guest/import-from.js';
import { isQemuFastplug, LIVE, PENDING, qemuHotplugDelete, qemuHotplugSet, type HotplugVerdict } from '../../../core/hotplug.js';
import { normaliseTags } from '../../../core/property-string.js';
import { splitList } from '../../../core/proxmox-params.js';
import { DieError, ParamError } from '../errors.js';
import { perlTrue, type Guest } from '../guest/guest.js';
import {
  formatSize,
  isCloudinit,
  optionFormat,
  parseAllocation,
  parseOption,
  parseVolumeId,
  printPropertyString,
  randomMac,
} from '../property-format.js';
import { isCdrom, isQemuDrive } from '../../../core/hotplug.js';
import { checkQemuOptionPermissions, checkQemuUpdateDevice } from '../permissions.js';
import {
  addToPendingDelete,
  addUnusedVolume,
  checkProtection,
  cleanupPending,
  optionExists,
  pendingDeletes,
  removeFromPendingDelete,
  writeIfChanged,
  type ConfigUpdate,
  type PreparedUpdate,
  type UpdateActor,
  type UpdateEnv,
  type UpdateOutcome,
} from './common.js';

/** The synchronous part of qemu's `$update_vm_api` before the config is loaded. */
export function prepareQemuUpdate(update: ConfigUpdate, actor: UpdateActor, vmid: number): PreparedUpdate {
  if (update.skiplock && actor.principal) throw new ParamError({ skiplock: 'Only root may use this option.' });
  const set = new Map<string, string>();
  for (const key of Object.keys(update.set).sort()) set.set(key, update.set[key] as string);
  const logParts: string[] = [];
  for (const key of [
    ...set.keys(),
    ...(update.delete !== undefined ? ['delete'] : []),
    ...(update.revert !== undefined ? ['revert'] : []),
  ].sort()) {
    const value = key === 'delete' ? update.delete : key === 'revert' ? update.revert : set.get(key);
    logParts.push(`-${key}`, key === 'cipassword' ? '<hidden>' : (value as string));
  }
  if (!update.delete && !update.revert && set.size === 0) throw new DieError('no options specified\n');
  // `cdrom` is an alias of `ide2` as a CD-ROM drive.
  const cdrom = set.get('cdrom');
  if (cdrom !== undefined) {
    set.delete('cdrom');
    set.set('ide2', `${cdrom},media=cdrom`);
  }
  const revert: string[] = [];
  for (const opt of splitList(update.revert ?? '')) {
    if (!optionExists('qemu', opt)) throw new ParamError({ revert: `unknown option '${opt}'` });
    if (set.has(opt)) throw new ParamError({ delete: `you can't use '-${opt}' and -revert ${opt}' at the same time` });
    revert.push(opt);
  }
  const deletes: string[] = [];
  for (let opt of splitList(update.delete ?? '')) {
    if (opt === 'cdrom') opt = 'ide2';
    if (set.has(opt)) throw new ParamError({ delete: `you can't use '-${opt}' and -delete ${opt}' at the same time` });
    if (revert.includes(opt)) throw new ParamError({ revert: `you can't use '-delete ${opt}' and -revert ${opt}' at the same time` });
    if (!optionExists('qemu', opt)) throw new ParamError({ delete: `unknown option '${opt}'` });
    deletes.push(opt);
  }
  for (const [opt, value] of set) {
    if (/^net\d+$/.test(opt)) set.set(opt, printQemuNet(value));
  }
  // `$check_vm_modify_config_perm`, deletions first, then the options set.
  if (actor.principal) {
    checkQemuOptionPermissions(actor.principal, vmid, deletes);
    checkQemuOptionPermissions(actor.principal, vmid, set.keys());
  }
  return {
    type: 'qemu',
    set,
    deletes,
    revert,
    force: update.force === true,
    ...(update.digest ? { digest: update.digest } : {}),
    skiplock: update.skiplock === true,
    logLine: logParts.join(' '),
    ...(actor.principal ? { principal: actor.principal } : {}),
  };
}

/** `parse_net` + `print_net`: fills in a MAC address when none was given. */
export function printQemuNet(value: string): string {
  const format = optionFormat('qemu', 'net0');
  const net = parseOption('qemu', 'net0', value);
  if (!format || !net) return value;
  net.macaddr ??= randomMac();
  return printPropertyString(format, net);
}

/** `get_current_memory`: the `current` of a memory property string, 512 when unset. */
function currentMemory(value: string | undefined): number {
  const m = /^(?:current=)?(\d+)/.exec(value ?? '');
  return m ? Number(m[1]) : 512;
}

/**
 * `$load_and_check_config` (qemu-server `API2/Qemu.pm`): digest before lock, then a balloon
 * target above the memory it would have.
 */
export function checkQemuConfig(guest: Guest, digest: string | undefined, skiplock: boolean, set?: ReadonlyMap<string, string>): void {
  if (digest && digest !== guest.digest) throw new DieError('checksum mismatch (file change by other user?)\n');
  if (!skiplock && guest.lock) throw new DieError(`VM is locked (${guest.lock})\n`);
  const memoryParam = set?.get('memory');
  const balloonParam = set?.get('balloon');
  if (perlTrue(memoryParam) || balloonParam !== undefined) {
    const memory = currentMemory(
      (perlTrue(memoryParam) ? memoryParam : undefined) ?? guest.pending.get('memory') ?? guest.main.get('memory'),
    );
    const balloon = Number(balloonParam ?? guest.pending.get('balloon') ?? guest.main.get('balloon') ?? 0);
    if (balloon && balloon > memory) throw new DieError('balloon value too large (must be smaller than assigned memory)\n');
  }
}

/**
 * `write_vm_config` runs `check_type` on every value but the description: a line feed or
 * carriage return anywhere dies (qemu-server `QemuServer.pm`, `check_type`).
 */
export function assertQemuWritable(opt: string, value: string): void {
  if (opt !== 'description' && /[\n\r]/.test(value)) {
    throw new DieError(`unable to parse value of '${opt}' - property contains a line feed\n`);
  }
}

/** `vmconfig_register_unused_drive` (qemu). */
function registerUnusedDrive(env: UpdateEnv, guest: Guest, key: string, value: string): void {
  const drive = parseOption('qemu', key, value);
  if (!drive) return;
  if (isCloudinit(drive)) {
    env.volumes.free(drive.file as string);
    return;
  }
  if (isCdrom(drive)) return;
  const volid = drive.file ?? '';
  const parsed = parseVolumeId(volid);
  if (parsed && new RegExp(`^(?:\\d+/)?(?:vm|base)-${guest.vmid}-`).test(parsed.volname)) addUnusedVolume(guest, volid);
}

/** `vmconfig_delete_or_detach_drive`: force frees the volume, otherwise it becomes `unusedN`. */
function deleteOrDetachDrive(env: UpdateEnv, guest: Guest, key: string, force: boolean): void {
  const value = guest.main.get(key);
  if (value === undefined) return;
  if (force) {
    const drive = parseOption('qemu', key, value);
    if (drive && !isCdrom(drive) && drive.file) env.volumes.free(drive.file);
  } else {
    registerUnusedDrive(env, guest, key, value);
  }
}

/**
 * `create_disks` for one drive option: `storage:32` allocates `storage:vm-<id>-disk-<n>` with
 * `size=32G`, `storage:cloudinit` the cloud-init volume; existing volumes get their size.
 */
export function createQemuDisk(env: UpdateEnv, guest: Guest, key: string, value: string): string {
  const format = optionFormat('qemu', key);
  const drive = parseOption('qemu', key, value);
  if (!format || !drive) return value;
  const file = drive.file ?? '';
  const cloudinit = /^([a-z][a-z0-9\-_.]*[a-z0-9]):cloudinit$/i.exec(file);
  const alloc = parseAllocation(file);
  if (cloudinit) {
    drive.file = env.volumes.allocateCloudinit(cloudinit[1] as string, guest.vmid);
    drive.media = 'cdrom';
  } else if (isCdrom(drive) || file.startsWith('/')) {
    // CD-ROM images and pass-through paths are referenced, never allocated.
  } else if (alloc && drive['import-from'] !== undefined) {
    const source = drive['import-from'];
    const bytes = importSourceSize(env.volumes, source);
    if (bytes === undefined) throw new DieError(`volume '${source}' does not exist\n`);
    delete drive['import-from'];
    drive.file = env.volumes.allocate(alloc.storage, guest.vmid, bytes);
    drive.size = formatSize(bytes);
  } else if (alloc) {
    const bytes = key === 'efidisk0' || key === 'tpmstate0' ? 4 * 1024 * 1024 : Math.round(alloc.gib * 1024 ** 3);
    drive.file = env.volumes.allocate(alloc.storage, guest.vmid, bytes, guest.node);
    drive.size = formatSize(bytes);
  } else {
    const current = guest.main.get(key);
    const currentFile = current === undefined ? undefined : parseOption('qemu', key, current)?.file;
    if (currentFile !== file) {
      const size = env.volumes.size(file);
      if (size === undefined) throw new DieError(`volume '${file}' does not exist\n`);
      drive.size = formatSize(size);
    }
  }
  return printPropertyString(format, drive);
}

const SKIP = 'skip';

/** The simulator's reading of a shared hotplug verdict: SKIP leaves the value pending. */
function asSimVerdict(verdict: HotplugVerdict): string | undefined {
  if (verdict === LIVE) return undefined;
  if (verdict === PENDING) return SKIP;
  return verdict.error;
}

/** `vmconfig_hotplug_pending` (qemu), restricted to the options of this request. */
function qemuHotplugPending(env: UpdateEnv, guest: Guest, selection: Set<string>, errors: Record<string, string>): void {
  for (const [key, value] of [...guest.pending]) {
    if (key !== 'delete' && isQemuFastplug(key)) {
      recordCloudinitChange(guest, key, guest.main.get(key), value);
      guest.main.set(key, value);
      guest.pending.delete(key);
    }
  }
  const deletes = pendingDeletes(guest);
  for (const opt of [...deletes.keys()].sort()) {
    if (!selection.has(opt)) continue;
    const verdict = asSimVerdict(qemuHotplugDelete(opt, (key) => guest.main.get(key)));
    if (verdict === SKIP) continue;
    if (verdict !== undefined) {
      errors[opt] = `hotplug problem - ${verdict}`;
      continue;
    }
    if (isQemuDrive(opt)) deleteOrDetachDrive(env, guest, opt, deletes.get(opt) === true);
    recordCloudinitChange(guest, opt, guest.main.get(opt), undefined);
    guest.main.delete(opt);
    removeFromPendingDelete(guest, opt);
  }
  for (const opt of [...guest.pending.keys()].sort()) {
    if (opt === 'delete' || !selection.has(opt)) continue;
    const value = guest.pending.get(opt) as string;
    const verdict = asSimVerdict(qemuHotplugSet(opt, value, (key) => guest.main.get(key)));
    if (verdict === SKIP) continue;
    if (verdict !== undefined) {
      errors[opt] = `hotplug problem - ${verdict}`;
      continue;
    }
    replaceDriveValue(env, guest, opt, value);
    recordCloudinitChange(guest, opt, guest.main.get(opt), value);
    guest.main.set(opt, value);
    guest.pending.delete(opt);
  }
}

/** When a drive gets a different volume, the old one is kept as `unusedN`. */
function replaceDriveValue(env: UpdateEnv, guest: Guest, opt: string, value: string): void {
  const current = guest.main.get(opt);
  if (current === undefined || !isQemuDrive(opt)) return;
  const oldFile = parseOption('qemu', opt, current)?.file;
  const newFile = parseOption('qemu', opt, value)?.file;
  if (oldFile !== newFile) registerUnusedDrive(env, guest, opt, current);
}

/** `vmconfig_apply_pending` (qemu): everything pending takes effect. */
export function qemuApplyPending(env: UpdateEnv, guest: Guest): void {
  const deletes = pendingDeletes(guest);
  for (const opt of [...deletes.keys()].sort()) {
    if (isQemuDrive(opt) && guest.main.has(opt)) deleteOrDetachDrive(env, guest, opt, deletes.get(opt) === true);
    recordCloudinitChange(guest, opt, guest.main.get(opt), undefined);
    guest.main.delete(opt);
    removeFromPendingDelete(guest, opt);
  }
  cleanupPending(guest);
  for (const opt of [...guest.pending.keys()].sort()) {
    if (opt === 'delete') continue;
    const value = guest.pending.get(opt) as string;
    replaceDriveValue(env, guest, opt, value);
    recordCloudinitChange(guest, opt, guest.main.get(opt), value);
    guest.main.set(opt, value);
    guest.pending.delete(opt);
  }
}

/** The qemu update function (`$updatefn`), run under the config lock. */
export function applyQemuUpdate(env: UpdateEnv, guest: Guest, update: PreparedUpdate): UpdateOutcome {
  const errors: Record<string, string> = {};
  const warnings: string[] = [];
  writeIfChanged(guest, () => {
    const modified = new Set<string>();
    // The boot order in effect: a deleted device leaves it, a new CD-ROM drive joins it, each as
    // a pending `boot` (the check for a deleted `bootorder` can never match: no such option).
    let bootorder = splitList(/(?:^|,)order=([^,]*)/.exec(guest.main.get('boot') ?? '')?.[1] ?? '');
    const setBootorder = (devices: string[]): void => {
      bootorder = devices;
      if (devices.length > 0) guest.pending.set('boot', `order=${devices.join(';')}`);
      modified.add('boot');
    };
    for (const opt of update.revert) {
      if (guest.pending.has(opt)) {
        modified.add(opt);
        guest.pending.delete(opt);
      }
      if (pendingDeletes(guest).has(opt)) {
        modified.add(opt);
        removeFromPendingDelete(guest, opt);
      }
    }
    for (const opt of update.deletes) {
      const value = guest.main.get(opt) ?? guest.pending.get(opt);
      if (value === undefined) {
        warnings.push(`cannot delete '${opt}' - not set in current configuration!`);
        continue;
      }
      modified.add(opt);
      if (update.principal) checkQemuUpdateDevice(update.principal, guest.vmid, opt, undefined, value);
      const pendingValue = guest.pending.get(opt);
      guest.pending.delete(opt);
      if (bootorder.includes(opt)) setBootorder(bootorder.filter((d) => d !== opt));
      if (/^unused\d+$/.test(opt)) {
        checkProtection(guest, `can't remove unused disk '${value}'`);
        env.volumes.free(value);
        guest.main.delete(opt);
      } else if (opt === 'vmstate') {
        checkProtection(guest, `can't remove vmstate '${value}'`);
        env.volumes.free(value);
        guest.main.delete(opt);
      } else if (isQemuDrive(opt)) {
        checkProtection(guest, `can't remove drive '${opt}'`);
        if (pendingValue !== undefined) registerUnusedDrive(env, guest, opt, pendingValue);
        addToPendingDelete(guest, opt, update.force);
      } else if (opt === 'tags') {
        guest.main.delete(opt);
      } else {
        addToPendingDelete(guest, opt, update.force);
      }
    }
    for (const [opt, raw] of update.set) {
      modified.add(opt);
      let value = raw;
      if (guest.pending.get(opt) === value) continue;
      if (update.principal) checkQemuUpdateDevice(update.principal, guest.vmid, opt, value, guest.main.get(opt));
      // Tags reach the file as `get_unique_tags` prints them: the list was split on whitespace,
      // a line feed included, so only the other values can still carry one into the file.
      if (opt === 'tags') value = normaliseTags(value);
      assertQemuWritable(opt, value);
      let appendToBoot = false;
      if (isQemuDrive(opt)) {
        const previous = guest.pending.get(opt);
        value = createQemuDisk(env, guest, opt, value);
        if (previous !== undefined) registerUnusedDrive(env, guest, opt, previous);
        const drive = parseOption('qemu', opt, value);
        appendToBoot = bootorder.length > 0 && drive !== undefined && isCdrom(drive) && !isCloudinit(drive) && !bootorder.includes(opt);
      } else if (opt === 'boot') {
        const order = /(?:^|,)order=([^,]*)/.exec(value)?.[1];
        if (order !== undefined) {
          const devices = splitList(order);
          for (const dev of devices) {
            const exists = guest.main.has(dev) || guest.pending.has(dev) || update.set.has(dev);
            if (!exists || update.deletes.includes(dev)) throw new DieError(`invalid bootorder: device '${dev}' does not exist'\n`);
          }
          value = `order=${devices.join(';')}`;
          if (guest.main.has('bootdisk')) addToPendingDelete(guest, 'bootdisk', false);
        }
      }
      guest.pending.set(opt, value);
      if (appendToBoot) setBootorder([...bootorder, opt]);
      removeFromPendingDelete(guest, opt);
    }
    cleanupPending(guest);
    if (guest.pending.size === 0) return;
    if (guest.running) qemuHotplugPending(env, guest, modified, errors);
    else qemuApplyPending(env, guest);
  });
  return { errors, warnings };
}
