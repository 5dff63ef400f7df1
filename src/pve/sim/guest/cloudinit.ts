/**
 * A VM's cloud-init state as qemu-server keeps it (docs/proxmox-behaviour.md, CIN- rows): a
 * cloud-init value written to the config takes effect in the file at once, but the guest sees it
 * only once the drive is generated again — at start, or by `PUT …/cloudinit`. Until then the
 * `[special:cloudinit]` section keeps the value the drive was made with, and `added` lists keys
 * the drive does not have yet (qemu-server `QemuServer.pm`, `vmconfig_hotplug_pending`
 * `$cloudinit_record_changed`, `vmconfig_update_cloudinit_drive`; `QemuServer/Cloudinit.pm`,
 * `apply_cloudinit_config`; `API2/Qemu.pm`, `cloudinit_pending`).
 */
import { isCloudinitVolume, isQemuDrive } from '../../../core/hotplug.js';
import type { ConfigSection } from '../config-file.js';
import { parseOption } from '../property-format.js';
import type { Guest } from './guest.js';

/** `cloudinit_pending_properties`: the cloud-init options and `name`. */
export function isCloudinitProperty(key: string): boolean {
  return /^(?:cicustom|cipassword|citype|ciupgrade|ciuser|nameserver|searchdomain|sshkeys|name|ipconfig\d+)$/.test(key);
}

/** The options `cloudinit_pending` reports (`$cloudinitoptions` and `ipconfigN`; not `name`). */
const REPORTED = /^(?:cicustom|cipassword|citype|ciuser|ciupgrade|nameserver|searchdomain|sshkeys|ipconfig\d+)$/;

function section(guest: Guest): ConfigSection {
  let ci = guest.config.special.get('cloudinit');
  if (!ci) {
    ci = { values: new Map(), lxc: [] };
    guest.config.special.set('cloudinit', ci);
  }
  return ci;
}

/** `$cloudinit_record_changed`: `old` → `value` (undefined: deleted) as the drive sees it. */
export function recordCloudinitChange(guest: Guest, key: string, old: string | undefined, value: string | undefined): void {
  if (!isCloudinitProperty(key)) return;
  const ci = section(guest);
  const recorded = ci.values.get(key);
  const added = new Set((ci.values.get('added') ?? '').split(/[,;\s]+/).filter(Boolean));
  ci.values.delete('added');
  if (value !== undefined) {
    if (recorded !== undefined) {
      if (value === recorded) {
        ci.values.delete(key);
        added.delete(key);
      }
    } else if (old !== undefined) {
      if (!added.has(key)) ci.values.set(key, old);
    } else {
      added.add(key);
    }
  } else if (old !== undefined && recorded === undefined) {
    if (added.has(key)) added.delete(key);
    else ci.values.set(key, old);
  }
  if (added.size > 0) ci.values.set('added', [...added].sort().join(','));
  if (ci.values.size === 0) guest.config.special.delete('cloudinit');
}

/** Whether the VM has a cloud-init drive. */
function hasCloudinitDrive(guest: Guest): boolean {
  for (const [key, value] of guest.main) {
    if (isQemuDrive(key) && isCloudinitVolume(parseOption('qemu', key, value)?.file ?? '')) return true;
  }
  return false;
}

/** `apply_cloudinit_config`: with a cloud-init drive, the drive is generated again and the record goes. */
export function regenerateCloudinit(guest: Guest): void {
  if (!hasCloudinitDrive(guest) || !guest.config.special.has('cloudinit')) return;
  guest.config.special.delete('cloudinit');
  guest.commit();
}

/** `GET …/cloudinit`: added keys, then each set option with the drive's value and the new one, then deletions. */
export function cloudinitView(guest: Guest): Record<string, unknown>[] {
  const ci = new Map(guest.config.special.get('cloudinit')?.values ?? []);
  const conf = new Map(guest.main);
  const mask = (key: string, value: string | undefined): string | undefined =>
    key === 'cipassword' && value !== undefined ? '**********' : value;
  const out: Record<string, unknown>[] = [];
  const added = (ci.get('added') ?? '').split(/[,;\s]+/).filter(Boolean);
  ci.delete('added');
  for (const key of added) out.push({ key, pending: mask(key, conf.get(key)) });
  for (const key of [...conf.keys()].filter((k) => REPORTED.test(k)).sort()) {
    if (!conf.get(key) || added.some((a) => a.includes(key))) continue;
    const recorded = ci.get(key);
    out.push(recorded ? { key, value: mask(key, recorded), pending: mask(key, conf.get(key)) } : { key, value: mask(key, conf.get(key)) });
  }
  for (const key of [...ci.keys()].sort()) if (!conf.get(key)) out.push({ key, delete: 1 });
  return out;
}
