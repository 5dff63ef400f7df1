/**
 * The per-option permission checks Proxmox runs inside create and config-update handlers, for
 * an API token (which is never `root@pam`, not even `root@pam!x`; docs/proxmox-behaviour.md,
 * "Tokens and privileges"):
 *
 * - qemu-server `API2/Qemu.pm`: `$check_vm_modify_config_perm` (option groups → privileges; an
 *   option in no group is root-only), `$check_vm_create_serial_perm`, `check_usb_perm`,
 *   `check_hostpci_perm`;
 * - pve-container `LXC.pm`: `check_ct_modify_config_perm` (feature flags, mount point types,
 *   device passthrough, hookscript).
 *
 * Texts are Proxmox's own: root-only qemu options die with a plain 500, container checks raise
 * 403 `Permission check failed (…)`.
 */
import { parsePropertyStringWithSchema } from '../../core/proxmox-params.js';
import { hasAnyPrivilege, hasPrivilege, type Principal } from './auth.js';
import { DieError, ParamError, PermissionError } from './errors.js';
import { optionFormat, parseOption } from './property-format.js';

/** `check`: the privilege on the path, else 403 `Permission check failed (<path>, <priv>)`. */
export function requirePrivilege(principal: Principal, path: string, privilege: string): void {
  if (!hasPrivilege(principal, path, privilege)) throw new PermissionError(`${path}, ${privilege}`);
}

/** `check_any`: one of the privileges, else 403 listing them joined with `|`. */
export function requireAnyPrivilege(principal: Principal, path: string, privileges: readonly string[]): void {
  if (!hasAnyPrivilege(principal, path, privileges)) throw new PermissionError(`${path}, ${privileges.join('|')}`);
}

/** `check_vm_perm` without a pool: the privilege on `/vms/<vmid>`. */
function requireVmPrivilege(principal: Principal, vmid: number, privilege: string): void {
  requirePrivilege(principal, `/vms/${vmid}`, privilege);
}

// The option groups of `$check_vm_modify_config_perm` (qemu-server `API2/Qemu.pm`).
const QEMU_GROUPS: [string, ReadonlySet<string>][] = [
  ['VM.Config.CPU', new Set(['cores', 'cpu', 'runningcpu', 'cpulimit', 'cpuunits', 'numa', 'smp', 'sockets', 'vcpus'])],
  ['VM.Config.Memory', new Set(['memory', 'balloon', 'shares', 'allow-ksm'])],
  [
    'VM.Config.HWType',
    new Set(['acpi', 'hotplug', 'kvm', 'machine', 'runningmachine', 'scsihw', 'smbios1', 'tablet', 'vga', 'watchdog', 'audio0', 'rng0']),
  ],
  [
    'VM.Config.Options',
    new Set([
      'agent',
      'autostart',
      'bios',
      'description',
      'keyboard',
      'localtime',
      'migrate_downtime',
      'migrate_speed',
      'name',
      'onboot',
      'ostype',
      'protection',
      'reboot',
      'startdate',
      'startup',
      'tdf',
      'template',
    ]),
  ],
  ['VM.PowerMgmt', new Set(['freeze'])],
  ['VM.Config.Disk', new Set(['boot', 'bootdisk', 'vmstatestorage'])],
];
const QEMU_CLOUDINIT = new Set(['cicustom', 'cipassword', 'citype', 'ciuser', 'ciupgrade', 'nameserver', 'searchdomain', 'sshkeys']);
const QEMU_DRIVE_RE = /^(ide|sata|scsi|virtio)\d+$|^efidisk0$|^tpmstate0$/;

/**
 * `$check_vm_modify_config_perm` for a token: each option needs its group's privilege; drives,
 * `cdrom`, `unusedN`/`serialN`/`usbN`/`hostpciN`/`virtiofsN` and `tags` are checked elsewhere;
 * an option in no group (`args`, `hookscript`, `lock`, `vmgenid`, `affinity`, `hugepages`,
 * `parallelN`, …) dies with `only root can set '<opt>' config`.
 */
export function checkQemuOptionPermissions(principal: Principal, vmid: number, options: Iterable<string>): void {
  for (const opt of options) {
    if (QEMU_DRIVE_RE.test(opt) || opt === 'cdrom' || opt === 'tags') continue;
    if (/^(?:unused|serial|usb|hostpci|virtiofs)\d+$/.test(opt)) continue;
    if (/^numa\d+$/.test(opt)) {
      requireVmPrivilege(principal, vmid, 'VM.Config.CPU');
      continue;
    }
    const group = QEMU_GROUPS.find(([, keys]) => keys.has(opt));
    if (group) {
      requireVmPrivilege(principal, vmid, group[0]);
      // `startup` changes host behaviour: Sys.Modify on / as well.
      if (opt === 'startup') requirePrivilege(principal, '/', 'Sys.Modify');
    } else if (/^net\d+$/.test(opt) || opt === 'running-nets-host-mtu') {
      requireVmPrivilege(principal, vmid, 'VM.Config.Network');
    } else if (QEMU_CLOUDINIT.has(opt) || /^ipconfig\d+$/.test(opt)) {
      requireAnyPrivilege(principal, `/vms/${vmid}`, ['VM.Config.Cloudinit', 'VM.Config.Network']);
    } else if (opt === 'vmstate') {
      requireVmPrivilege(principal, vmid, 'VM.Config.Disk');
      requireVmPrivilege(principal, vmid, 'VM.PowerMgmt');
    } else {
      throw new DieError(`only root can set '${opt}' config\n`);
    }
  }
}

function qemuProperty(key: string, value: string): Record<string, string> {
  const format = optionFormat('qemu', key);
  if (!format) return {};
  const parsed = parsePropertyStringWithSchema(format, value);
  return typeof parsed === 'string' ? {} : parsed;
}

/** `check_usb_perm`: a passed-through host device is root-only, SPICE and mappings are not. */
function checkUsb(principal: Principal, vmid: number, opt: string, value: string): void {
  requireVmPrivilege(principal, vmid, 'VM.Config.HWType');
  const device = qemuProperty(opt, value);
  if (device.host !== undefined) {
    if (!/^spice$/i.test(device.host)) throw new DieError(`only root can set '${opt}' config for real devices\n`);
  } else if (device.mapping !== undefined) {
    requirePrivilege(principal, `/mapping/usb/${device.mapping}`, 'Mapping.Use');
  } else {
    throw new DieError("either 'host' or 'mapping' must be set.\n");
  }
}

/** `check_hostpci_perm`: only mapped devices, and never a `romfile`. */
function checkHostpci(principal: Principal, vmid: number, opt: string, value: string): void {
  // The dump names the format (`pve-qm-hostpci`) without spelling it out: read the keys by hand.
  const device = Object.fromEntries(
    value
      .split(',')
      .map((part) => part.split('='))
      .map(([k, v]) => (v === undefined ? ['host', k ?? ''] : [k ?? '', v])),
  ) as Record<string, string>;
  if (device.host !== undefined) throw new DieError(`only root can set '${opt}' config for non-mapped devices\n`);
  if (device.mapping !== undefined) {
    requirePrivilege(principal, `/mapping/pci/${device.mapping}`, 'Mapping.Use');
    requireVmPrivilege(principal, vmid, 'VM.Config.HWType');
  } else {
    throw new DieError("either 'host' or 'mapping' must be set.\n");
  }
  if (device.romfile !== undefined) throw new ParamError({ [opt]: "only root@pam can set 'romfile' option" });
}

/**
 * The device checks `create_vm` runs after the option groups: `$check_vm_create_serial_perm`
 * (a serial port other than `socket` is root-only), `check_vm_create_usb_perm`,
 * `check_vm_create_hostpci_perm`.
 */
export function checkQemuCreateDevices(principal: Principal, vmid: number, params: Record<string, string>): void {
  for (const [opt, value] of Object.entries(params)) {
    if (!/^serial\d+$/.test(opt)) continue;
    if (value === 'socket') requireVmPrivilege(principal, vmid, 'VM.Config.HWType');
    else throw new DieError(`only root can set '${opt}' config for real devices\n`);
  }
  for (const [opt, value] of Object.entries(params)) if (/^usb\d+$/.test(opt)) checkUsb(principal, vmid, opt, value);
  for (const [opt, value] of Object.entries(params)) if (/^hostpci\d+$/.test(opt)) checkHostpci(principal, vmid, opt, value);
}

/**
 * The device checks of qemu's update function (`$updatefn`, under the config lock: inside the
 * task for POST): setting or deleting `serialN` (other than `socket`), `usbN`, `hostpciN`.
 */
export function checkQemuUpdateDevice(
  principal: Principal,
  vmid: number,
  opt: string,
  value: string | undefined,
  current: string | undefined,
): void {
  if (/^serial\d+$/.test(opt)) {
    if (value === undefined) {
      if (current === 'socket') requireVmPrivilege(principal, vmid, 'VM.Config.HWType');
      else throw new DieError(`only root can delete '${opt}' config for real devices\n`);
    } else if ((current === undefined || current === 'socket') && value === 'socket') {
      requireVmPrivilege(principal, vmid, 'VM.Config.HWType');
    } else {
      throw new DieError(`only root can modify '${opt}' config for real devices\n`);
    }
  } else if (/^usb\d+$/.test(opt)) {
    if (current !== undefined) checkUsb(principal, vmid, opt, current);
    if (value !== undefined) checkUsb(principal, vmid, opt, value);
  } else if (/^hostpci\d+$/.test(opt)) {
    if (current !== undefined) checkHostpci(principal, vmid, opt, current);
    if (value !== undefined) checkHostpci(principal, vmid, opt, value);
  }
}

/** `parse_features`: the flags of a `features` value. */
function features(value: string | undefined): Record<string, string> {
  if (!value) return {};
  return parseOption('lxc', 'features', value) ?? {};
}

/** `classify_mountpoint`: a path under /dev is a device, another absolute path a bind mount. */
function mountpointType(volume: string): 'volume' | 'bind' | 'device' {
  if (volume.startsWith('/dev/')) return 'device';
  if (volume.startsWith('/')) return 'bind';
  return 'volume';
}

/**
 * `check_ct_modify_config_perm` for a token. `oldConfig` is the config before the change
 * (undefined at creation); `newValues` the options set, `deletes` those deleted or reverted;
 * `unprivileged` the container's (or the new container's) flag.
 */
export function checkLxcOptionPermissions(
  principal: Principal,
  vmid: number,
  oldConfig: ReadonlyMap<string, string> | undefined,
  newValues: ReadonlyMap<string, string>,
  deletes: readonly string[],
  unprivileged: boolean,
): void {
  const vm = `/vms/${vmid}`;
  const check = (opt: string, isDelete: boolean): void => {
    if (opt === 'cores' || opt === 'cpuunits' || opt === 'cpulimit') {
      requirePrivilege(principal, vm, 'VM.Config.CPU');
    } else if (opt === 'rootfs' || /^mp\d+$/.test(opt)) {
      requirePrivilege(principal, vm, 'VM.Config.Disk');
      if (isDelete) return;
      const volume = parseOption('lxc', opt, newValues.get(opt) ?? '')?.volume ?? '';
      const type = mountpointType(volume);
      if (type !== 'volume') throw new PermissionError(`mount point type ${type} is only allowed for root@pam`);
      const alloc = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(\.\d+)?)$/i.exec(volume);
      if (alloc) requirePrivilege(principal, `/storage/${alloc[1]}`, 'Datastore.AllocateSpace');
    } else if (opt === 'memory' || opt === 'swap') {
      requirePrivilege(principal, vm, 'VM.Config.Memory');
    } else if (/^net\d+$/.test(opt)) {
      requirePrivilege(principal, vm, 'VM.Config.Network');
    } else if (/^dev\d+$/.test(opt)) {
      throw new PermissionError('configuring device passthrough is only allowed for root@pam');
    } else if (opt === 'nameserver' || opt === 'searchdomain' || opt === 'hostname') {
      requirePrivilege(principal, vm, 'VM.Config.Network');
    } else if (opt === 'features') {
      if (!unprivileged) throw new PermissionError('changing feature flags for privileged container is only allowed for root@pam');
      let nestingChanged = false;
      let otherChanged = false;
      const old = features(oldConfig?.get('features'));
      if (!isDelete) {
        const next = features(newValues.get('features'));
        if (oldConfig?.get('features')) {
          for (const flag of new Set([...Object.keys(old), ...Object.keys(next)])) {
            if ((old[flag] ?? '') === (next[flag] ?? '')) continue;
            if (flag === 'nesting') nestingChanged = true;
            else otherChanged = true;
          }
        } else {
          const flags = Object.keys(next);
          if (flags.length === 1 && flags[0] === 'nesting') nestingChanged = true;
          else if (flags.length > 0) otherChanged = true;
        }
      } else {
        const flags = Object.keys(old);
        if (flags.length === 1 && flags[0] === 'nesting') nestingChanged = true;
        else if (flags.length > 0) otherChanged = true;
      }
      if (otherChanged) throw new PermissionError('changing feature flags (except nesting) is only allowed for root@pam');
      if (nestingChanged) requirePrivilege(principal, vm, 'VM.Allocate');
    } else if (opt === 'hookscript') {
      throw new PermissionError('changing the hookscript is only allowed for root@pam');
    } else if (opt === 'tags') {
      // assert_tag_permissions: VM.Config.Options; the datacenter's tag rules are not simulated.
      requirePrivilege(principal, vm, 'VM.Config.Options');
    } else {
      requirePrivilege(principal, vm, 'VM.Config.Options');
    }
  };
  for (const opt of newValues.keys()) check(opt, false);
  for (const opt of deletes) check(opt, true);
}
