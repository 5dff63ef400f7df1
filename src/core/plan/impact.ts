import type { GuestType, Impact, Severity } from '../model.js';
import { isDiskKey, isNicKey, parseNic } from './values.js';

/**
 * How a config change reaches a guest, mirroring Proxmox's hotplug rules (API-FACTS §5.3, §5.4):
 * a stopped guest takes everything at once; a running one takes fast-plug keys at once,
 * hot-pluggable keys when `hotplug` allows, and queues the rest as pending until restart.
 */

const QEMU_FAST_PLUG = new Set([
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

const QEMU_ALWAYS_LIVE = new Set(['cpuunits', 'cpulimit', 'agent']);

const LXC_FAST_PLUG = new Set(['description', 'onboot', 'startup', 'protection', 'hostname', 'hookscript', 'cores', 'tags', 'lock']);
const LXC_LIVE = new Set(['cpulimit', 'cpuunits', 'memory', 'swap']);

/** NIC settings a running VM changes live whatever `hotplug` says. */
const NIC_LIVE_SETTINGS = new Set(['bridge', 'tag', 'firewall', 'rate', 'link_down', 'trunks']);

/** The guest's effective `hotplug` features (default `network,disk,usb`; `1` default; `0` none). */
export function hotplugFeatures(value: string | undefined): Set<string> {
  if (value === undefined || value === '1') return new Set(['network', 'disk', 'usb']);
  if (value === '0' || value === '') return new Set();
  return new Set(value.split(',').map((f) => f.trim()));
}

/** Context of a change: the guest's type, whether it runs, and its hotplug features. */
export interface ImpactContext {
  type: GuestType;
  running: boolean;
  hotplug: Set<string>;
}

function nicChangeIsLive(ctx: ImpactContext, key: string, from?: string, to?: string): boolean {
  if (ctx.hotplug.has('network')) return true;
  if (from === undefined || to === undefined) return false;
  const a = parseNic(ctx.type, key, from);
  const b = parseNic(ctx.type, key, to);
  const keys = new Set([...a.settings.keys(), ...b.settings.keys()]);
  for (const k of keys) {
    if (a.settings.get(k) !== b.settings.get(k) && !NIC_LIVE_SETTINGS.has(k)) return false;
  }
  return a.mac === b.mac || b.mac === undefined;
}

function qemuImpact(ctx: ImpactContext, key: string, from?: string, to?: string): Impact {
  if (QEMU_FAST_PLUG.has(key) || /^ipconfig\d+$/.test(key) || QEMU_ALWAYS_LIVE.has(key)) return 'live';
  if (isNicKey(key)) return nicChangeIsLive(ctx, key, from, to) ? 'live' : 'pending-restart';
  if (isDiskKey('qemu', key)) {
    if (key === 'efidisk0' || key === 'tpmstate0') return 'pending-restart';
    // Proxmox skips unplugging IDE and SATA drives from a running VM.
    if (to === undefined && /^(ide|sata)\d+$/.test(key)) return 'pending-restart';
    return ctx.hotplug.has('disk') ? 'live' : 'pending-restart';
  }
  if (key === 'memory') return ctx.hotplug.has('memory') ? 'live' : 'pending-restart';
  if (key === 'vcpus') return ctx.hotplug.has('cpu') ? 'live' : 'pending-restart';
  if (key === 'tablet' || /^usb\d+$/.test(key)) return ctx.hotplug.has('usb') ? 'live' : 'pending-restart';
  if (key === 'balloon') return from === '0' || to === '0' || from === undefined || to === undefined ? 'pending-restart' : 'live';
  if (key === 'hotplug') {
    const touchesCpuOrMemory = [from, to].some((v) => v !== undefined && /cpu|memory/.test(v));
    return touchesCpuOrMemory ? 'pending-restart' : 'live';
  }
  return 'pending-restart';
}

function lxcImpact(key: string, from?: string, to?: string): Impact {
  if (LXC_FAST_PLUG.has(key) || LXC_LIVE.has(key) || isNicKey(key)) return 'live';
  // A new mount point is hot-plugged; changing or removing one waits for a restart.
  if (/^mp\d+$/.test(key) && from === undefined && to !== undefined) return 'live';
  return 'pending-restart';
}

/** Impact of setting (`to`) or deleting (`to` undefined) one key. */
export function keyImpact(ctx: ImpactContext, key: string, from?: string, to?: string): Impact {
  if (!ctx.running) return 'live';
  return ctx.type === 'qemu' ? qemuImpact(ctx, key, from, to) : lxcImpact(key, from, to);
}

const SEVERITY_ORDER: Severity[] = ['read-only', 'configuration', 'service-impact', 'data-loss'];
const IMPACT_ORDER: Impact[] = ['live', 'pending-restart', 'needs-stop', 'data-loss'];

/** The more severe of two severities. */
export function maxSeverity(a: Severity, b: Severity): Severity {
  return SEVERITY_ORDER.indexOf(a) >= SEVERITY_ORDER.indexOf(b) ? a : b;
}

/** The stronger of two impacts (undefined counts as none). */
export function maxImpact(a: Impact | undefined, b: Impact): Impact {
  if (a === undefined) return b;
  return IMPACT_ORDER.indexOf(a) >= IMPACT_ORDER.indexOf(b) ? a : b;
}

/** Rank of a severity, for sorting (higher is more severe). */
export function severityRank(s: Severity): number {
  return SEVERITY_ORDER.indexOf(s);
}
