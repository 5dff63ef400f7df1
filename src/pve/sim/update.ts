/**
 * Config updates with Proxmox's semantics (docs/proxmox-api.md#config-updates): the synchronous checks of
 * `$update_vm_api` (qemu) and `update_vm` (lxc), then the update function that writes values
 * to `[PENDING]`, cleans up, and either hot-plugs (running guest) or applies everything
 * (stopped guest). `applyAllPending` is what start/stop do.
 */
import {
  isQemuFastplug,
  LIVE,
  LXC_FASTPLUG,
  lxcHotplugDelete,
  lxcHotplugSet,
  PENDING,
  qemuHotplugDelete,
  qemuHotplugSet,
  type HotplugVerdict,
} from '../../core/hotplug.js';
import { NON_OPTIONS } from '../../core/config-options.js';
import type { GuestType } from '../../core/model.js';
import { normaliseTags } from '../../core/property-string.js';
import { paramSchema, splitList } from '../../core/proxmox-params.js';
import type { Principal } from './auth.js';
import { parsePendingDelete, printPendingDelete, serializeConfig } from './config-file.js';
import { DieError, ParamError } from './errors.js';
import { perlTrue, type Guest } from './guest.js';
import {
  configEndpoint,
  formatSize,
  isCdrom,
  isCloudinit,
  isLxcMount,
  isQemuDrive,
  optionFormat,
  parseAllocation,
  parseOption,
  parseVolumeId,
  printPropertyString,
  randomMac,
} from './property-format.js';
import { checkLxcOptionPermissions, checkQemuOptionPermissions, checkQemuUpdateDevice } from './permissions.js';
import type { VolumeStore } from './volumes.js';

/** A config write as the API receives it (values already validated against the schema). */
export interface ConfigUpdate {
  /** Options to set, option → value as a string. */
  set: Record<string, string>;
  /** Raw `delete` list (`,` `;` or whitespace separated). */
  delete?: string;
  revert?: string;
  force?: boolean;
  digest?: string;
  skiplock?: boolean;
}

/**
 * Who writes: an API token (never `root@pam`, so every root-only check applies), or, without a
 * principal, `root@pam` itself (an operator's edit in the GUI), for whom no check applies.
 */
export interface UpdateActor {
  principal?: Principal;
}

/** An update after the synchronous checks. */
export interface PreparedUpdate {
  type: GuestType;
  set: Map<string, string>;
  deletes: string[];
  revert: string[];
  force: boolean;
  digest?: string;
  skiplock: boolean;
  /** `update VM 100: -cores 4 -delete tags` for the task log. */
  logLine: string;
  /** The token writing, or undefined for `root@pam`. */
  principal?: Principal;
}

/** What the update function reports back besides the new config. */
export interface UpdateOutcome {
  /** Per-option hotplug/apply errors; the API raises them as a 400 after writing. */
  errors: Record<string, string>;
  /** What a plain Perl `warn` printed: task log lines, never a task warning. */
  warnings: string[];
}

/** The storage and identity services updates need. */
export interface UpdateEnv {
  volumes: VolumeStore;
}

const INTERNAL_OPTIONS = new Set(['lock', 'parent', 'snaptime', 'vmstate', 'runningmachine', 'runningcpu', 'meta']);

/** `option_exists`: a config key of that guest type. */
export function optionExists(type: GuestType, key: string): boolean {
  if (NON_OPTIONS.has(key)) return false;
  return INTERNAL_OPTIONS.has(key) || paramSchema(configEndpoint(type), key) !== undefined;
}

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

/** `parse_lxc_network` + `print_lxc_network`: `type=veth` and a MAC address are always set. */
export function printLxcNet(value: string): string {
  const format = optionFormat('lxc', 'net0');
  const net = parseOption('lxc', 'net0', value);
  if (!format || !net) return value;
  net.type = 'veth';
  net.hwaddr ??= randomMac();
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

/** `check_lock` then `assert_if_modified` for containers (docs/proxmox-api.md#order-of-checks). */
export function checkLxcConfig(guest: Guest, digest: string | undefined): void {
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  if (digest && digest !== guest.digest) {
    throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
  }
}

/**
 * Runs a mutation of the guest's config and writes it back only if the text changed. qemu-server
 * writes after every step, so a failing update keeps what it wrote before the failure
 * (`partial`); pve-container writes once at the end, so a failure writes nothing (`atomic`).
 */
function writeIfChanged<T>(guest: Guest, mutate: () => T, mode: 'partial' | 'atomic' = 'partial'): T {
  const before = serializeConfig(guest.config, guest.type);
  let failed = true;
  try {
    const result = mutate();
    failed = false;
    return result;
  } finally {
    if (failed && mode === 'atomic') guest.replaceRaw(guest.raw);
    // An unchanged file is not written, but what memory holds must still read like the file.
    else if (serializeConfig(guest.config, guest.type) !== before) guest.commit();
    else guest.rereadDescriptions();
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

/**
 * `write_pct_config` refuses a line feed in any value but the description, in every section
 * (pve-container `LXC/Config.pm`, `write_pct_config`).
 */
export function assertLxcWritable(sections: Iterable<Map<string, string>>): void {
  for (const values of sections) {
    for (const key of [...values.keys()].sort()) {
      if (key !== 'description' && (values.get(key) as string).includes('\n')) {
        throw new DieError(`detected invalid newline inside property '${key}'\n`);
      }
    }
  }
}

/** `verify_nameserver_list` / `verify_searchdomain_list`: a container stores the list space-separated. */
export function normaliseLxcList(value: string): string {
  return splitList(value).join(' ');
}

function pendingDeletes(guest: Guest): Map<string, boolean> {
  return parsePendingDelete(guest.pending.get('delete'));
}

function storePendingDeletes(guest: Guest, map: Map<string, boolean>): void {
  const printed = printPendingDelete(map);
  if (printed === undefined) guest.pending.delete('delete');
  else guest.pending.set('delete', printed);
}

function addToPendingDelete(guest: Guest, opt: string, force: boolean): void {
  const map = pendingDeletes(guest);
  map.set(opt, force);
  storePendingDeletes(guest, map);
}

function removeFromPendingDelete(guest: Guest, opt: string): void {
  const map = pendingDeletes(guest);
  if (map.delete(opt)) storePendingDeletes(guest, map);
}

/** `cleanup_pending`: drops pending values equal to current ones and deletes of unset keys. */
function cleanupPending(guest: Guest): void {
  for (const [key, value] of [...guest.pending]) {
    if (key !== 'delete' && guest.main.get(key) === value) guest.pending.delete(key);
  }
  const map = pendingDeletes(guest);
  for (const key of [...map.keys()]) if (!guest.main.has(key)) map.delete(key);
  storePendingDeletes(guest, map);
}

/** `add_unused_volume`: lowest free `unusedN`, no duplicates. */
function addUnusedVolume(guest: Guest, volid: string): void {
  let free: string | undefined;
  for (let i = 255; i >= 0; i--) {
    const key = `unused${i}`;
    const existing = guest.main.get(key);
    if (existing === volid) return;
    if (existing === undefined) free = key;
  }
  if (free === undefined) throw new DieError('Too many unused volumes - please delete them first.\n');
  guest.main.set(free, volid);
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

function checkProtection(guest: Guest, message: string): void {
  if (perlTrue(guest.main.get('protection'))) throw new DieError(`${message} - protection mode enabled\n`);
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
  } else if (alloc) {
    const bytes = key === 'efidisk0' || key === 'tpmstate0' ? 4 * 1024 * 1024 : Math.round(alloc.gib * 1024 ** 3);
    drive.file = env.volumes.allocate(alloc.storage, guest.vmid, bytes);
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
function qemuApplyPending(env: UpdateEnv, guest: Guest): void {
  const deletes = pendingDeletes(guest);
  for (const opt of [...deletes.keys()].sort()) {
    if (isQemuDrive(opt) && guest.main.has(opt)) deleteOrDetachDrive(env, guest, opt, deletes.get(opt) === true);
    guest.main.delete(opt);
    removeFromPendingDelete(guest, opt);
  }
  cleanupPending(guest);
  for (const opt of [...guest.pending.keys()].sort()) {
    if (opt === 'delete') continue;
    const value = guest.pending.get(opt) as string;
    replaceDriveValue(env, guest, opt, value);
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

/** The synchronous part of lxc's `update_vm` before the config lock. */
export function prepareLxcUpdate(update: ConfigUpdate, actor: UpdateActor = {}): PreparedUpdate {
  const set = new Map<string, string>();
  for (const key of Object.keys(update.set).sort()) set.set(key, update.set[key] as string);
  if (set.size === 0 && update.delete === undefined && update.revert === undefined) {
    throw new DieError('no options specified\n');
  }
  const logParts: string[] = [];
  for (const [k, v] of set) logParts.push(`-${k}`, v);
  if (update.delete !== undefined) logParts.push('-delete', update.delete);
  return {
    type: 'lxc',
    set,
    deletes: splitList(update.delete ?? ''),
    revert: splitList(update.revert ?? ''),
    force: false,
    ...(update.digest ? { digest: update.digest } : {}),
    skiplock: false,
    logLine: logParts.join(' '),
    ...(actor.principal ? { principal: actor.principal } : {}),
  };
}

/**
 * What lxc's `update_vm` checks inside the lock, after the lock and digest checks: permissions
 * for the deletions and reverts (`check_ct_modify_config_perm`), the revert/delete lists, then
 * permissions for the options set.
 */
export function checkLxcUpdateLists(update: PreparedUpdate, guest: Guest): void {
  const principal = update.principal;
  const unprivileged = perlTrue(guest.main.get('unprivileged'));
  const none = new Map<string, string>();
  if (principal) {
    checkLxcOptionPermissions(principal, guest.vmid, guest.main, none, update.deletes, unprivileged);
    checkLxcOptionPermissions(principal, guest.vmid, guest.main, none, update.revert, unprivileged);
  }
  for (const opt of update.revert) {
    if (!optionExists('lxc', opt)) throw new ParamError({ revert: `unknown option '${opt}'` });
    if (update.set.has(opt)) throw new ParamError({ revert: `you can't use '-${opt}' and '-revert ${opt}' at the same time` });
  }
  for (const opt of update.deletes) {
    if (!optionExists('lxc', opt)) throw new ParamError({ delete: `unknown option '${opt}'` });
    if (update.set.has(opt)) throw new ParamError({ delete: `you can't use '-${opt}' and -delete ${opt}' at the same time` });
    if (update.revert.includes(opt)) {
      throw new ParamError({ delete: `you can't use '-delete ${opt}' and '-revert ${opt}' at the same time` });
    }
  }
  if (principal) checkLxcOptionPermissions(principal, guest.vmid, guest.main, update.set, [], unprivileged);
}

/** Allocates a new container volume (`storage:8` → `storage:vm-<id>-disk-<n>,size=8G`). */
function applyPendingMountpoint(env: UpdateEnv, guest: Guest, opt: string, value: string): string {
  const format = optionFormat('lxc', opt);
  const mp = parseOption('lxc', opt, value);
  if (!format || !mp) return value;
  const alloc = parseAllocation(mp.volume ?? '');
  if (alloc) {
    const bytes = Math.round(alloc.gib * 1024 ** 3);
    mp.volume = env.volumes.allocate(alloc.storage, guest.vmid, bytes);
    mp.size = formatSize(bytes);
  }
  const old = guest.main.get(opt);
  if (old !== undefined) {
    const oldVolume = parseOption('lxc', opt, old)?.volume;
    if (oldVolume && oldVolume !== mp.volume && parseVolumeId(oldVolume)) addUnusedVolume(guest, oldVolume);
  }
  return printPropertyString(format, mp);
}

/** LXC `vmconfig_hotplug_pending`. */
function lxcHotplugPending(env: UpdateEnv, guest: Guest, selection: Set<string>): void {
  for (const [key, value] of [...guest.pending]) {
    if (key !== 'delete' && LXC_FASTPLUG.has(key)) {
      guest.main.set(key, value);
      guest.pending.delete(key);
    }
  }
  const deletes = pendingDeletes(guest);
  for (const opt of [...deletes.keys()].sort()) {
    if (!selection.has(opt)) continue;
    if (lxcHotplugDelete(opt) !== LIVE) continue;
    if (/^unused\d+$/.test(opt)) env.volumes.free(guest.main.get(opt) ?? '');
    guest.main.delete(opt);
    removeFromPendingDelete(guest, opt);
  }
  for (const opt of [...guest.pending.keys()].sort()) {
    if (opt === 'delete' || !selection.has(opt)) continue;
    let value = guest.pending.get(opt) as string;
    if (lxcHotplugSet(opt, guest.main.get(opt)) !== LIVE) continue;
    if (/^mp\d+$/.test(opt)) value = applyPendingMountpoint(env, guest, opt, value);
    guest.main.set(opt, value);
    guest.pending.delete(opt);
  }
}

/** LXC `vmconfig_apply_pending`; `selection` undefined applies everything (start). */
function lxcApplyPending(env: UpdateEnv, guest: Guest, selection?: Set<string>): void {
  const deletes = pendingDeletes(guest);
  for (const opt of [...deletes.keys()].sort()) {
    if (selection && !selection.has(opt)) continue;
    const current = guest.main.get(opt);
    if (/^mp\d+$/.test(opt) && current !== undefined) {
      const volume = parseOption('lxc', opt, current)?.volume;
      if (volume && parseVolumeId(volume)) addUnusedVolume(guest, volume);
    } else if (/^unused\d+$/.test(opt) && current !== undefined) {
      env.volumes.free(current);
    }
    guest.main.delete(opt);
    removeFromPendingDelete(guest, opt);
  }
  cleanupPending(guest);
  for (const opt of [...guest.pending.keys()].sort()) {
    if (opt === 'delete' || (selection && !selection.has(opt))) continue;
    let value = guest.pending.get(opt) as string;
    if (isLxcMount(opt)) value = applyPendingMountpoint(env, guest, opt, value);
    guest.main.set(opt, value);
    guest.pending.delete(opt);
  }
}

/** LXC `update_pct_config` + hotplug/apply, under the config lock. */
export function applyLxcUpdate(env: UpdateEnv, guest: Guest, update: PreparedUpdate): UpdateOutcome {
  const warnings: string[] = [];
  writeIfChanged(
    guest,
    () => {
      for (const opt of update.revert) {
        guest.pending.delete(opt);
        removeFromPendingDelete(guest, opt);
      }
      const modified = new Set<string>();
      for (const opt of update.deletes) {
        if (!guest.main.has(opt) && !guest.pending.has(opt)) {
          warnings.push(`cannot delete '${opt}' - not set in current configuration!`);
          continue;
        }
        modified.add(opt);
        if (opt === 'memory' || opt === 'rootfs' || opt === 'ostype') throw new DieError(`unable to delete required option '${opt}'\n`);
        if (/^(unused|mp)\d+$/.test(opt)) checkProtection(guest, `can't remove CT ${guest.vmid} drive '${opt}'`);
        if (opt === 'unprivileged') throw new DieError(`unable to delete read-only option: '${opt}'\n`);
        addToPendingDelete(guest, opt, false);
      }
      for (const [opt, raw] of update.set) {
        modified.add(opt);
        let value = raw;
        if (isLxcMount(opt)) checkProtection(guest, `can't update CT ${guest.vmid} drive '${opt}'`);
        else if (opt === 'unprivileged') throw new DieError(`unable to modify read-only option: '${opt}'\n`);
        else if (opt === 'tags') value = normaliseTags(value);
        else if (opt === 'nameserver' || opt === 'searchdomain') value = normaliseLxcList(value);
        else if (/^net\d+$/.test(opt)) value = printLxcNet(value);
        guest.pending.set(opt, value);
        removeFromPendingDelete(guest, opt);
      }
      cleanupPending(guest);
      if (guest.running) lxcHotplugPending(env, guest, modified);
      else lxcApplyPending(env, guest, modified);
      assertLxcWritable([guest.main, guest.pending, ...[...guest.config.snapshots.values()].map((s) => s.values)]);
    },
    'atomic',
  );
  return { errors: {}, warnings };
}

/** Each flavour's `vmconfig_apply_pending`, everything selected. */
const APPLY_PENDING: Record<GuestType, (env: UpdateEnv, guest: Guest) => void> = {
  qemu: qemuApplyPending,
  lxc: (env, guest) => lxcApplyPending(env, guest),
};

/** What start (and qemu stop) do: apply every pending change (`vmconfig_apply_pending`). */
export function applyAllPending(env: UpdateEnv, guest: Guest): void {
  if (guest.pending.size === 0) return;
  writeIfChanged(guest, () => APPLY_PENDING[guest.type](env, guest));
}
