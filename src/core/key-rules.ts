/**
 * The one registry of what the product decides about individual config keys: which ones hold a
 * disk or a NIC, which are owned only when a spec sets them, which hold secrets, how SSH keys are
 * encoded, and which reach beyond the guest into the host. Planner, renderers and spec loader ask
 * here, so a rule changes in one place. Sources for the Proxmox side of each rule are in
 * docs/identity-and-privileges.md ("Options that reach the host").
 */
import { flavourOf, type GuestType } from './guest-flavours.js';
import { parsePropertyString, propertyValue } from './property-string.js';

// ---------------------------------------------------------------------------------------------
// Devices

/** True for keys holding a disk or mount point (`scsi0`, `efidisk0`, `rootfs`, `mp3`). */
export function isDiskKey(type: GuestType, key: string): boolean {
  return flavourOf(type).diskKey.test(key);
}

/** True for keys holding a network device. */
export function isNicKey(key: string): boolean {
  return /^net\d+$/.test(key);
}

// ---------------------------------------------------------------------------------------------
// Ownership

/**
 * True when the repository owns `key` only if the spec sets it: what Proxmox fills in at creation,
 * and what a token cannot write (the flavour's `ownedWhenSet`).
 */
export function isOwnedOnlyWhenSet(type: GuestType, key: string): boolean {
  return flavourOf(type).ownedWhenSet.has(key);
}

/** The value a missing config line stands for, when a spec may name it (the flavour's `defaultsWhenAbsent`). */
export function valueWhenAbsent(type: GuestType, key: string): string | undefined {
  const defaults = flavourOf(type).defaultsWhenAbsent;
  return Object.hasOwn(defaults, key) ? defaults[key] : undefined;
}

// ---------------------------------------------------------------------------------------------
// Secrets

/** Keys whose values must never be shown in a comment or a terminal (cipassword, sshkeys, tokens). */
const SENSITIVE_KEY_RE = /password|sshkeys|secret|token/i;

/** True for keys whose values are secrets. */
export function isSensitiveKey(key: string): boolean {
  return SENSITIVE_KEY_RE.test(key);
}

/**
 * Proxmox's `sshkeys` value: the public keys one per line (surrounding space and blank lines
 * dropped), percent-encoded as the web UI does (`encodeURIComponent`; the API's `urlencoded`
 * format). A value that is already encoded is decoded first, so encoding twice changes nothing.
 */
export function encodeSshKeys(value: string): string {
  let plain = value;
  if (/^[-%a-zA-Z0-9_.!~*'()]*$/.test(value)) {
    try {
      plain = decodeURIComponent(value);
    } catch {
      // A lone `%`: not encoded after all.
    }
  }
  const lines = plain
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return encodeURIComponent(lines.join('\n'));
}

// ---------------------------------------------------------------------------------------------
// Options that reach the host

/**
 * Kinds of options that reach beyond the guest into its host. These names are also the values
 * of the per-cluster policy (`allowHostAccess`, `PVE_CLUSTER_<NAME>_ALLOW_HOST_ACCESS`).
 */
export const HOST_ACCESS_RULES = [
  'args',
  'hookscript',
  'hostpci',
  'usb',
  'serial',
  'parallel',
  'bind-mount',
  'dev',
  'lxc-raw',
  'privileged',
  'features',
] as const;

/** One kind of host-reaching option. */
export type HostAccessRule = (typeof HOST_ACCESS_RULES)[number];

/** Narrows a policy word to a rule; undefined when it is none. */
export function hostAccessRule(word: string): HostAccessRule | undefined {
  return (HOST_ACCESS_RULES as readonly string[]).includes(word) ? (word as HostAccessRule) : undefined;
}

/** Why one key's value reaches the host, and what Proxmox requires of whoever sets it. */
interface HostAccessFinding {
  rule: HostAccessRule;
  /** What the value does to the host, in a reader's words. */
  reason: string;
  /**
   * What Proxmox demands to write it: `root@pam` (which an API token never is) or a privilege.
   * Changing or removing such a value needs the same.
   */
  requires: string;
  /** A form of the option an API token may set, when Proxmox offers one. */
  alternative?: string;
}

const ROOT = 'root@pam (an API token never is root@pam)';
const MAPPING = (kind: 'pci' | 'usb'): string =>
  `a resource mapping (Datacenter → Resource Mappings) used as \`mapping=<name>\` needs only Mapping.Use on /mapping/${kind}/<name>, which a token can hold`;

/** Flags of a container's `features` other than `nesting` that are switched on. */
function hostFeatureFlags(value: string): string[] {
  const flags: string[] = [];
  const ps = parsePropertyString(value);
  for (const [flag, v] of ps.pairs) {
    if (flag === 'nesting') continue;
    if (flag === 'mount' ? v.trim() !== '' : v !== '0' && v !== '' && v.toLowerCase() !== 'false' && v.toLowerCase() !== 'off') {
      flags.push(flag);
    }
  }
  return flags;
}

/** A VM's options that reach the host (qemu-server's checks). */
function vmHostAccess(key: string, value: string): HostAccessFinding | undefined {
  if (key === 'args') return { rule: 'args', reason: 'passes raw arguments to the QEMU process on the host', requires: ROOT };
  if (/^hostpci\d+$/.test(key)) {
    const ps = parsePropertyString(value);
    const host = propertyValue(ps, 'host') ?? ps.head;
    if (host !== undefined && propertyValue(ps, 'mapping') === undefined) {
      return {
        rule: 'hostpci',
        reason: `passes the host's PCI device ${host} through to the guest`,
        requires: ROOT,
        alternative: MAPPING('pci'),
      };
    }
    if (propertyValue(ps, 'romfile') !== undefined) {
      return { rule: 'hostpci', reason: 'loads a ROM file from the host (romfile)', requires: ROOT };
    }
    return undefined;
  }
  if (/^usb\d+$/.test(key)) {
    const ps = parsePropertyString(value);
    const host = propertyValue(ps, 'host') ?? ps.head;
    if (host !== undefined && host.toLowerCase() !== 'spice' && propertyValue(ps, 'mapping') === undefined) {
      return {
        rule: 'usb',
        reason: `passes the host's USB device ${host} through to the guest`,
        requires: ROOT,
        alternative: MAPPING('usb'),
      };
    }
    return undefined;
  }
  if (/^serial\d+$/.test(key) && value !== 'socket') {
    return {
      rule: 'serial',
      reason: `connects the host's device ${value} to the guest`,
      requires: ROOT,
      alternative: '`socket` (a serial port without a host device) needs only VM.Config.HWType',
    };
  }
  if (/^parallel\d+$/.test(key)) {
    return { rule: 'parallel', reason: `connects the host's device ${value} to the guest`, requires: ROOT };
  }
  return undefined;
}

/** A container's options that reach the host (pve-container's checks). */
function containerHostAccess(key: string, value: string): HostAccessFinding | undefined {
  if (key.startsWith('lxc.')) {
    return { rule: 'lxc-raw', reason: 'a raw LXC key configures the container runtime on the host directly', requires: ROOT };
  }
  if (isDiskKey('lxc', key)) {
    const ps = parsePropertyString(value);
    const volume = propertyValue(ps, 'volume') ?? ps.head ?? '';
    if (volume.startsWith('/')) {
      return {
        rule: 'bind-mount',
        reason: `mounts the host's ${volume.startsWith('/dev/') ? 'device' : 'path'} ${volume} into the container`,
        requires: ROOT,
        alternative: 'a storage volume (`STORAGE:SIZE`) needs only VM.Config.Disk and Datastore.AllocateSpace',
      };
    }
    return undefined;
  }
  if (/^dev\d+$/.test(key)) {
    const ps = parsePropertyString(value);
    return {
      rule: 'dev',
      reason: `passes the host's device ${propertyValue(ps, 'path') ?? ps.head ?? value} through to the container`,
      requires: ROOT,
    };
  }
  if (key === 'unprivileged' && !/^(1|true|yes|on)$/i.test(value)) {
    return {
      rule: 'privileged',
      reason: "runs the container privileged: its root user is the host's root user",
      requires: 'Sys.Modify on /',
      alternative: '`unprivileged: 1` maps the container root to an unprivileged host user',
    };
  }
  if (key === 'features') {
    const flags = hostFeatureFlags(value);
    if (flags.length > 0) {
      return {
        rule: 'features',
        reason: `feature flag${flags.length > 1 ? 's' : ''} ${flags.join(', ')} open${flags.length > 1 ? '' : 's'} host kernel interfaces to the container`,
        requires: ROOT,
        alternative: '`nesting` alone needs only VM.Allocate',
      };
    }
  }
  return undefined;
}

/** The host-access rules of each flavour: QEMU and pve-container check different options. */
const HOST_ACCESS: { readonly [T in GuestType]: (key: string, value: string) => HostAccessFinding | undefined } = {
  qemu: vmHostAccess,
  lxc: containerHostAccess,
};

/**
 * Whether `key` set to `value` reaches the host, and why. Follows the permission checks of
 * qemu-server `API2/Qemu.pm` (`$check_vm_modify_config_perm`, `check_hostpci_perm`,
 * `check_usb_perm`, `$check_vm_create_serial_perm`) and pve-container `LXC.pm`
 * (`check_ct_modify_config_perm`) and `API2/LXC.pm` (`create_vm`: Sys.Modify on / for a
 * privileged container; a create without `unprivileged` makes an unprivileged one). Undefined for
 * anything an ordinary token with VM.Config.* may set.
 */
export function hostAccessOf(type: GuestType, key: string, value: string): HostAccessFinding | undefined {
  if (key === 'hookscript') {
    return { rule: 'hookscript', reason: `runs the script ${value} on the host at every start and stop of the guest`, requires: ROOT };
  }
  return HOST_ACCESS[type](key, value);
}
