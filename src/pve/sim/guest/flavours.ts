/**
 * VMs and containers as two flavours of one guest: what qemu-server and pve-container name and
 * do differently where the simulator's shared guest machinery (listings, reads, power, disks,
 * the config lock) would otherwise branch on the type. Facts are from docs/proxmox-api.md
 * (#power-endpoints, #locks, #destroy) and docs/proxmox-behaviour.md; behaviour that differs in
 * more than a name or a flag lives in the kind's own handlers under `kinds/vm` and
 * `kinds/container`.
 */
import type { GuestType } from '../../../core/guest-flavours.js';
import { isLxcMount } from '../property-format.js';
import { isQemuDrive } from '../../../core/hotplug.js';

/** One flavour of guest. */
export interface GuestFlavour {
  type: GuestType;
  /** How messages name one: `VM 100`, `CT 100`. */
  label: 'VM' | 'CT';
  /** The node's API folder: `/nodes/{node}/qemu`. */
  apiPath: string;
  /** The config folder under `nodes/<node>/` in pmxcfs. */
  configDir: string;
  /** The file `config_file_lock` locks (qemu-server `QemuConfig.pm`, pve-container `LXC/Config.pm`). */
  configLockFile(vmid: number): string;
  /** The privileges `PUT …/config` names in its permission check. */
  configPrivileges: string;
  /** Task type prefix: `qmstart`, `vzstart`. */
  taskPrefix: 'qm' | 'vz';
  /** A config key that holds a volume. */
  isVolumeKey(key: string): boolean;
  /** The property of a volume option that names the volume (`file=`, `volume=`). */
  volumeProperty: 'file' | 'volume';
  /** Content type of its images on a storage. */
  storageContent: 'images' | 'rootdir';
  /** `vmdiridx`: the subfolders of `GET …/{vmid}`. */
  subdirs: readonly string[];
  /** `vmcmdidx`: the subfolders of `GET …/{vmid}/status`. */
  statusSubdirs: readonly string[];
  /** `vmdiridx` loads the config first (pve-container) or lists without looking (qemu-server). */
  indexLoadsConfig: boolean;
  /** The start task's "you can't start a … if it's a template". */
  templateWord: 'vm' | 'CT';
  /** A lock that does not stop a start: a suspended VM resumes, a mounted CT starts. */
  startExemptLock: 'suspended' | 'mounted';
  /** A running VM whose backup holds the lock is resumed by a start, which is no error. */
  startResumesBackup: boolean;
  /**
   * `check_running` before the task is forked: pve-container asks the node, so a start of a
   * running CT or a stop of a stopped one fails at once; qemu-server checks in the task.
   */
  powerChecksRunningFirst: boolean;
  /** qemu applies pending changes in `vm_stop_cleanup`; containers only when they start. */
  stopAppliesPending: boolean;
  /** qemu's shutdown task logs `VM <id> shutting down`. */
  shutdownLogs: boolean;
  /** The config key listings take the guest's name from, and the name when it is unset. */
  nameKey: 'name' | 'hostname';
  defaultName(vmid: number): string;
  /** The CPU count `vmstatus` reports (qemu: `vcpus`, else cores × sockets; a CT: cores, 2 by default). */
  cpus(main: ReadonlyMap<string, string>): number;
  /**
   * Where `vmstatus` looks for the boot disk's size, in order: qemu the disks of `boot` order,
   * `bootdisk`, then every disk (CD-ROMs never); a container its `rootfs`.
   */
  bootDiskCandidates(main: ReadonlyMap<string, string>): string[];
  /** `/cluster/resources` reports `memhost`: the memory the host sees the VM's qemu process use. */
  reportsMemhost: boolean;
  /** The start task warns about NIC MTUs qemu ignores (`print_netdevice_full`). */
  startWarnsIgnoredMtu: boolean;
  /** qemu's create task logs `Execute autostart` before it forks the start task; pve-container's logs nothing. */
  createLogsAutostart: boolean;
}

const QEMU_SUBDIRS = [
  'config',
  'cloudinit',
  'pending',
  'status',
  'unlink',
  'vncproxy',
  'termproxy',
  'migrate',
  'resize',
  'move',
  'rrd',
  'rrddata',
  'monitor',
  'agent',
  'snapshot',
  'spiceproxy',
  'sendkey',
  'firewall',
  'mtunnel',
  'remote_migrate',
];
const LXC_SUBDIRS = [
  'config',
  'pending',
  'status',
  'vncproxy',
  'termproxy',
  'vncwebsocket',
  'spiceproxy',
  'migrate',
  'clone',
  'rrd',
  'rrddata',
  'firewall',
  'snapshot',
  'resize',
  'interfaces',
];

const BOOTABLE_DISK_RE = /^(scsi|virtio|sata|ide)\d+$/;

function qemuBootDiskCandidates(main: ReadonlyMap<string, string>): string[] {
  const order = /order=([^,]+)/.exec(main.get('boot') ?? '')?.[1]?.split(';') ?? [];
  const disks = [...main.keys()].filter((k) => BOOTABLE_DISK_RE.test(k)).sort();
  return [...order, main.get('bootdisk') ?? '', ...disks].filter((key) => {
    const value = main.get(key);
    return BOOTABLE_DISK_RE.test(key) && value !== undefined && !/media=cdrom/.test(value);
  });
}

/** The table: one row per flavour. */
export const GUEST_FLAVOURS: Readonly<Record<GuestType, GuestFlavour>> = {
  qemu: {
    type: 'qemu',
    label: 'VM',
    apiPath: '/nodes/{node}/qemu',
    configDir: 'qemu-server',
    configLockFile: (vmid) => `/var/lock/qemu-server/lock-${vmid}.conf`,
    configPrivileges:
      'VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|VM.Config.Cloudinit',
    taskPrefix: 'qm',
    isVolumeKey: isQemuDrive,
    volumeProperty: 'file',
    storageContent: 'images',
    subdirs: QEMU_SUBDIRS,
    statusSubdirs: ['current', 'start', 'stop', 'reset', 'shutdown', 'suspend', 'reboot'],
    indexLoadsConfig: false,
    templateWord: 'vm',
    startExemptLock: 'suspended',
    startResumesBackup: true,
    powerChecksRunningFirst: false,
    stopAppliesPending: true,
    shutdownLogs: true,
    nameKey: 'name',
    defaultName: (vmid) => `VM ${vmid}`,
    cpus: (main) => {
      const vcpus = main.get('vcpus');
      if (vcpus) return Number(vcpus);
      return (Number(main.get('cores') ?? 1) || 1) * (Number(main.get('sockets') ?? 1) || 1);
    },
    bootDiskCandidates: qemuBootDiskCandidates,
    reportsMemhost: true,
    startWarnsIgnoredMtu: true,
    createLogsAutostart: true,
  },
  lxc: {
    type: 'lxc',
    label: 'CT',
    apiPath: '/nodes/{node}/lxc',
    configDir: 'lxc',
    configLockFile: (vmid) => `/run/lock/lxc/pve-config-${vmid}.lock`,
    configPrivileges: 'VM.Config.Disk|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.Options',
    taskPrefix: 'vz',
    isVolumeKey: isLxcMount,
    volumeProperty: 'volume',
    storageContent: 'rootdir',
    subdirs: LXC_SUBDIRS,
    statusSubdirs: ['current', 'start', 'stop', 'shutdown', 'reboot', 'migrate'],
    indexLoadsConfig: true,
    templateWord: 'CT',
    startExemptLock: 'mounted',
    startResumesBackup: false,
    powerChecksRunningFirst: true,
    stopAppliesPending: false,
    shutdownLogs: false,
    nameKey: 'hostname',
    defaultName: (vmid) => `CT${vmid}`,
    cpus: (main) => Number(main.get('cores') ?? 0) || 2,
    bootDiskCandidates: () => ['rootfs'],
    reportsMemhost: false,
    startWarnsIgnoredMtu: false,
    createLogsAutostart: false,
  },
};

/** The flavour of a guest type. */
export function flavourOf(type: GuestType): GuestFlavour {
  return GUEST_FLAVOURS[type];
}
