import { configEndpoint } from './config-options.js';
import { GUEST_FLAVOURS, type GuestType } from './guest-flavours.js';
import { paramSchema, parsePropertyStringWithSchema } from './proxmox-params.js';

/**
 * Which config changes a running guest takes at once and which wait in `[PENDING]` for a restart:
 * qemu-server's `vmconfig_hotplug_pending` and pve-container's `vmconfig_hotplug_pending`
 * (docs/proxmox-behaviour.md, "Hotplug"). One module, used by the simulator to behave like
 * Proxmox and by the planner to label changes; because they share it, neither can catch a wrong
 * rule, so test/sim/hotplug-oracle.test.ts checks both against expectations written from
 * Proxmox's code.
 */

/** A running guest takes the change now. */
export const LIVE = 'live';
/** The change waits in `[PENDING]` until the guest restarts. */
export const PENDING = 'pending';
/** Proxmox refuses the change on a running guest (`hotplug problem - <message>`). */
interface HotplugRefusal {
  error: string;
}
export type HotplugVerdict = typeof LIVE | typeof PENDING | HotplugRefusal;

const QEMU_FASTPLUG = new Set([
  'description',
  'hookscript',
  'lock',
  'migrate_downtime',
  'migrate_speed',
  'name',
  'onboot',
  'protection',
  'shares',
  'startup',
  'tags',
  'vmstatestorage',
  'ciuser',
  'cipassword',
  'citype',
  'ciupgrade',
  'cicustom',
  'searchdomain',
  'nameserver',
  'sshkeys',
]);

/** Container options applied at once even on a running container (`$LXC_FASTPLUG_OPTIONS`). */
export const LXC_FASTPLUG: ReadonlySet<string> = new Set([
  'description',
  'onboot',
  'startup',
  'protection',
  'hostname',
  'hookscript',
  'cores',
  'tags',
  'lock',
]);

/** Container options hot-plugged through cgroups or the network setup. */
const LXC_LIVE = new Set(['cpulimit', 'cpuunits', 'memory', 'swap']);

/**
 * Drive options a running VM cannot change in place (`vmconfig_update_disk` skips these); any
 * other option of the same volume is written to the config at once.
 */
const DISK_COLD_KEYS = ['aio', 'discard', 'iothread', 'queues', 'product', 'cache', 'ssd', 'vendor', 'ro'];

/** Agent options `vmconfig_update_agent` applies to a running VM. */
const AGENT_LIVE_KEYS = new Set(['fstrim_cloned_disks']);

/** USB hot-plug needs the `usb` feature and a guest OS that copes: Linux 2.6+ or Windows 8+. */
function usbHotplug(features: ReadonlySet<string>, ostype: string | undefined): boolean {
  if (!features.has('usb') || ostype === undefined) return false;
  const windows = /^win(\d+)$/.exec(ostype);
  return ostype === 'l26' || (windows !== null && Number(windows[1]) > 7);
}
/** NIC options that need the `network` hotplug feature (an unplug and plug). */
const NET_COLD_KEYS = ['model', 'macaddr', 'queues', 'mtu'];

/** `is_valid_drivename` (qemu): a VM's disk keys, as the flavour table has them. */
export function isQemuDrive(key: string): boolean {
  return GUEST_FLAVOURS.qemu.diskKey.test(key);
}

/** `drive_is_cdrom`: `media=cdrom`, or the `none`/`cdrom` placeholders. */
export function isCdrom(drive: Record<string, string>): boolean {
  return drive.media === 'cdrom' || drive.file === 'cdrom' || drive.file === 'none';
}

/** A cloud-init drive's volume (`local-lvm:vm-100-cloudinit`, `local:100/vm-100-cloudinit.qcow2`). */
export function isCloudinitVolume(volume: string): boolean {
  return /(^|[:/])vm-\d+-cloudinit(\.\w+)?$/.test(volume);
}

/** Fast-plug options of a running VM: written to the config at once. */
export function isQemuFastplug(key: string): boolean {
  return QEMU_FASTPLUG.has(key) || /^ipconfig\d+$/.test(key);
}

/** Features of the `hotplug` option (`1` or unset = `network,disk,usb`, `0` = none). */
export function hotplugFeatures(value: string | undefined): Set<string> {
  const v = value ?? '1';
  if (v === '1') return new Set(['network', 'disk', 'usb']);
  if (v === '0' || v === '') return new Set();
  return new Set(v.split(',').map((f) => f.trim()));
}

/** An option value parsed with its property-string format (`{}` when it has none or is garbled). */
function parseOption(type: GuestType, key: string, value: string | undefined): Record<string, string> {
  if (value === undefined) return {};
  const schema = paramSchema(configEndpoint(type), key);
  if (!schema || typeof schema.format !== 'object') return {};
  const parsed = parsePropertyStringWithSchema(schema.format, value);
  return typeof parsed === 'string' ? {} : parsed;
}

/** Perl truthiness of a config value (`''` and `'0'` are false). */
function perlTrue(value: string | undefined): boolean {
  return value !== undefined && value !== '' && value !== '0';
}

/** Reads a key of the guest's config in effect (the main section). */
type ConfigLookup = (key: string) => string | undefined;

/** Drives the VM boots from (`boot: order=…`, or the legacy `bootdisk`): never unplugged live. */
function bootDisks(config: ConfigLookup): Set<string> {
  const boot = config('boot');
  const order = boot ? /(?:^|,)order=([^,]*)/.exec(boot)?.[1] : undefined;
  if (order !== undefined) return new Set(order.split(';').filter(isQemuDrive));
  const legacy = config('bootdisk');
  return new Set(legacy ? [legacy] : []);
}

function unplugRefusal(opt: string, config: ConfigLookup): HotplugRefusal | undefined {
  return bootDisks(config).has(opt) ? { error: `can't unplug bootdisk '${opt}'\n` } : undefined;
}

/** Setting `opt` to `value` on a running VM whose config in effect `config` reads. */
export function qemuHotplugSet(opt: string, value: string, config: ConfigLookup): HotplugVerdict {
  const current = config(opt);
  const hotplug = config('hotplug');
  if (isQemuFastplug(opt)) return LIVE;
  const features = hotplugFeatures(hotplug);
  if (opt === 'hotplug') {
    // CPU and memory hotplug change how the VM was started: only a restart applies them.
    const now = hotplug ?? '';
    return /memory|cpu/.test(value) || /memory|cpu/.test(now) ? PENDING : LIVE;
  }
  if (opt === 'tablet') return features.has('usb') ? LIVE : PENDING;
  if (/^usb\d+$/.test(opt)) return usbHotplug(features, config('ostype')) ? LIVE : PENDING;
  if (opt === 'vcpus') return features.has('cpu') ? LIVE : PENDING;
  if (opt === 'balloon') {
    const oldOn = current === undefined || perlTrue(current);
    return oldOn !== perlTrue(value) ? PENDING : LIVE;
  }
  if (/^net\d+$/.test(opt)) {
    if (current !== undefined) {
      const oldNet = parseOption('qemu', opt, current);
      const newNet = parseOption('qemu', opt, value);
      const cold = NET_COLD_KEYS.some((k) => oldNet[k] !== newNet[k]) || !(oldNet.bridge && newNet.bridge);
      if (!cold) return LIVE;
    }
    return features.has('network') ? LIVE : PENDING;
  }
  if (isQemuDrive(opt)) {
    if (opt === 'efidisk0' || opt === 'tpmstate0') return PENDING;
    const drive = parseOption('qemu', opt, value);
    if (current !== undefined) {
      const old = parseOption('qemu', opt, current);
      if ((drive.media ?? 'disk') !== (old.media ?? 'disk')) return { error: 'unable to change media type\n' };
      if (isCdrom(old)) return LIVE;
      if (drive.file !== old.file) {
        if (!features.has('disk')) return PENDING;
        // ide and sata devices cannot be unplugged (`vm_deviceunplug`).
        return unplugRefusal(opt, config) ?? (/^(ide|sata)\d+$/.test(opt) ? { error: `can't unplug device '${opt}'\n` } : LIVE);
      }
      return DISK_COLD_KEYS.some((k) => drive[k] !== old[k]) ? PENDING : LIVE;
    }
    return !features.has('disk') || /^(ide|sata)\d+$/.test(opt) ? PENDING : LIVE;
  }
  if (opt === 'memory') return features.has('memory') ? LIVE : PENDING;
  if (opt === 'cpuunits' || opt === 'cpulimit') return LIVE;
  if (opt === 'agent') {
    // No agent configured yet, or any option but fstrim_cloned_disks changed: after a restart.
    if (!perlTrue(current)) return PENDING;
    const a = parseOption('qemu', 'agent', current);
    const b = parseOption('qemu', 'agent', value);
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].some((k) => !AGENT_LIVE_KEYS.has(k) && a[k] !== b[k]) ? PENDING : LIVE;
  }
  return PENDING;
}

/** Deleting `opt` from a running VM whose config in effect `config` reads. */
export function qemuHotplugDelete(opt: string, config: ConfigLookup): HotplugVerdict {
  const current = config(opt);
  const hotplug = config('hotplug');
  if (opt === 'hotplug') return /(cpu|memory)/.test(hotplug ?? '') ? PENDING : LIVE;
  const features = hotplugFeatures(hotplug);
  if (opt === 'tablet') return features.has('usb') ? LIVE : PENDING;
  if (/^usb\d+$/.test(opt)) return usbHotplug(features, config('ostype')) ? LIVE : PENDING;
  if (opt === 'vcpus') return features.has('cpu') ? LIVE : PENDING;
  if (opt === 'balloon') return current === '0' ? PENDING : LIVE;
  if (isQemuFastplug(opt)) return LIVE;
  if (/^net\d+$/.test(opt)) return features.has('network') ? LIVE : PENDING;
  if (isQemuDrive(opt)) {
    if (!features.has('disk') || /^(ide|sata)\d+$|^efidisk0$|^tpmstate0$/.test(opt)) return PENDING;
    return unplugRefusal(opt, config) ?? LIVE;
  }
  if (opt === 'memory') return features.has('memory') ? LIVE : PENDING;
  if (opt === 'cpuunits' || opt === 'cpulimit') return LIVE;
  return PENDING;
}

/** Setting `opt` on a running container; a mount point or device is hot-plugged only where none was. */
export function lxcHotplugSet(opt: string, current: string | undefined): HotplugVerdict {
  if (LXC_FASTPLUG.has(opt) || LXC_LIVE.has(opt) || /^net\d+$/.test(opt)) return LIVE;
  if (/^(mp|dev)\d+$/.test(opt)) return current === undefined ? LIVE : PENDING;
  return PENDING;
}

/** Deleting `opt` from a running container; only `net0`–`net9` are unplugged (`^net(\d)$`). */
export function lxcHotplugDelete(opt: string): HotplugVerdict {
  const live = LXC_FASTPLUG.has(opt) || /^unused\d+$/.test(opt) || ['swap', 'cpulimit', 'cpuunits'].includes(opt) || /^net\d$/.test(opt);
  return live ? LIVE : PENDING;
}

/** One flavour's hotplug rules in one shape: what setting or deleting a key does to a running guest. */
interface HotplugRules {
  set(key: string, value: string, config: ConfigLookup): HotplugVerdict;
  delete(key: string, config: ConfigLookup): HotplugVerdict;
}

/** The hotplug rules of each guest type, for callers that hold a guest of either. */
export const HOTPLUG_RULES: { readonly [T in GuestType]: HotplugRules } = {
  qemu: { set: qemuHotplugSet, delete: qemuHotplugDelete },
  lxc: { set: (key, _value, config) => lxcHotplugSet(key, config(key)), delete: (key) => lxcHotplugDelete(key) },
};
