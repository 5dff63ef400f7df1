/**
 * VMs and containers are two flavours of one kind of object, the guest. Most of what the product
 * does with a guest is the same for both; where Proxmox treats them differently — the key that
 * holds the name, which keys are disks, which endpoint moves a volume, what Proxmox fills in at
 * creation — the difference is a fact about the flavour, and it is written down here, once, as one
 * row per flavour. Code asks the table (`flavourOf(type).nameKey`) instead of branching on the
 * type, so what a VM and a container differ in is read in one place, and a new fact or flavour is
 * one row: the mapped type below makes a missing field or a missing flavour a compile error.
 *
 * Behaviour that is code rather than data stays with its rules, in the same exhaustive shape
 * (the hotplug rules in `hotplug.ts`, the host-access rules in `key-rules.ts`). The facts are
 * checked against Proxmox's API schema in `guest-flavours.test.ts`.
 *
 * This module imports nothing, so every other module of the core may use it, `model.ts` included.
 */

/** Proxmox guest type as the API names it in paths: `qemu` for VMs, `lxc` for containers. */
export type GuestType = 'qemu' | 'lxc';

/** The spec document's `kind` for each guest type. */
interface DocumentKinds {
  qemu: 'VM';
  lxc: 'Container';
}

/** The `kind` of a guest's spec document: `VM` or `Container`. */
export type GuestKind = DocumentKinds[GuestType];

/** A config option that needs one more privilege than the `VM.Config.*` every guest needs. */
interface ExtraConfigPrivilege {
  privilege: string;
  /** What the privilege is for, as a missing-privilege message says. */
  why: string;
  /** The config keys that need it. */
  keys: RegExp;
}

/** What Proxmox does differently for one guest type, as data. */
export interface GuestFlavour<T extends GuestType = GuestType> {
  /** The guest type, which is also the API's path segment (`/nodes/{node}/qemu/{vmid}`). */
  type: T;
  /** The spec document's `kind`. */
  documentKind: DocumentKinds[T];
  /** How the product's messages name one (`taken by a VM`, `a container's volume`). */
  noun: string;
  /** How Proxmox's own messages name one (`VM 100 is locked`, `CT 100 is locked`). */
  proxmoxLabel: string;
  /** The type part of the IDs HA resources and firewall rule sets give a guest (`vm:100`, `ct:200`). */
  resourcePrefix: 'vm' | 'ct';
  /** The config key that holds the guest's DNS name; it defaults to the spec's `name`. */
  nameKey: string;
  /** Config keys that hold a disk or mount point (`scsi0`, `rootfs`, `mp3`); `unusedN` is not one. */
  diskKey: RegExp;
  /** The sub-key of a disk's property string that names its volume (`file=`, `volume=`). */
  volumeKey: string;
  /**
   * How a config change is written: QEMU's asynchronous `POST …/config` returns a task to await;
   * containers have only the synchronous `PUT …/config`.
   */
  configWrite: { method: 'POST' | 'PUT'; task: boolean };
  /** The endpoint that moves a disk to another storage (`POST …/{vmid}/<endpoint>`). */
  move: {
    endpoint: string;
    /** The parameter naming the disk being moved. */
    diskParam: string;
    /** Whether the endpoint takes a target `format`. */
    takesFormat: boolean;
    /** Whether it moves a running guest's disk (`move_volume` refuses a running container). */
    whileRunning: boolean;
  };
  /** How a NIC's property string is written back with the MAC Proxmox assigned kept. */
  nic: {
    /** The sub-key written first (`virtio=…`, `name=eth0`). */
    leadKey: string;
    /** True when the model key carries the MAC (`virtio=BC:24:11:…`), as QEMU writes it. */
    macInModel: boolean;
    /** The sub-key of the MAC when it is written on its own. */
    macKey: string;
    /** Sub-keys Proxmox writes into every NIC that does not name them: no drift when a spec is silent. */
    filledIn: Readonly<Record<string, string>>;
  };
  /**
   * Keys owned only when the spec sets them (docs/design.md#owned-keys): those Proxmox fills in at
   * creation (`boot`, a Windows VM's pinned `machine`, a container's `arch`, `ostype`, `rootfs`,
   * default `memory` and `swap`), and those a token cannot write or the product refuses (`args`,
   * `cipassword`), which would otherwise be deleted on every apply and fail every time.
   */
  ownedWhenSet: ReadonlySet<string>;
  /**
   * Options Proxmox leaves out of the config file when they hold their default, though a spec may
   * name the default explicitly: a container created with `unprivileged=0` has no `unprivileged`
   * line (pve-container `API2/LXC.pm`, `create_vm`, writes it only when true).
   */
  defaultsWhenAbsent: Readonly<Record<string, string>>;
  /** Options Proxmox takes only at creation: a spec's `create:` section. */
  createOptions: readonly string[];
  /** Create options without which the guest cannot be created (a container's template). */
  requiredCreateOptions: readonly string[];
  /** Config options Proxmox lets no one change after creation (`unable to modify read-only option`). */
  fixedAtCreation: readonly string[];
  /** Options Proxmox knows but this product refuses in a spec, with the reason a user is shown. */
  refusedKeys: Readonly<Record<string, string>>;
  /** Options Proxmox stores as a space-separated list whatever separator was sent (`verify_nameserver_list`). */
  spaceSeparatedKeys: ReadonlySet<string>;
  /** Config options that need a privilege of their own on top of `VM.Config.*`. */
  extraConfigPrivileges: readonly ExtraConfigPrivilege[];
  /** The header of the config file's section of pending values. */
  pendingSection: string;
}

/**
 * One row per guest type. Sources: qemu-server `API2/Qemu.pm` and pve-container `API2/LXC.pm`
 * for the endpoints, `QemuServer.pm` (`is_valid_drivename`, `parse_net`) and `LXC/Config.pm`
 * (`valid_volume_keys`, `parse_lxc_network`) for the keys, `PVE/QemuConfig.pm` and
 * `PVE/LXC/Config.pm` for the config files.
 */
export const GUEST_FLAVOURS: { readonly [T in GuestType]: GuestFlavour<T> } = {
  qemu: {
    type: 'qemu',
    documentKind: 'VM',
    noun: 'VM',
    proxmoxLabel: 'VM',
    resourcePrefix: 'vm',
    nameKey: 'name',
    diskKey: /^(ide[0-3]|sata[0-5]|scsi(?:[0-9]|[12][0-9]|30)|virtio(?:[0-9]|1[0-5])|efidisk0|tpmstate0)$/,
    volumeKey: 'file',
    configWrite: { method: 'POST', task: true },
    move: { endpoint: 'move_disk', diskParam: 'disk', takesFormat: true, whileRunning: true },
    nic: { leadKey: 'model', macInModel: true, macKey: 'macaddr', filledIn: {} },
    ownedWhenSet: new Set(['boot', 'bootdisk', 'smbios1', 'vmgenid', 'template', 'machine', 'args', 'cipassword']),
    defaultsWhenAbsent: {},
    createOptions: ['pool', 'storage'],
    requiredCreateOptions: [],
    fixedAtCreation: [],
    refusedKeys: {
      cipassword:
        'cipassword cannot be managed from git: Proxmox never returns it (reads show **********) and a password does not belong in a repository; use sshkeys',
    },
    spaceSeparatedKeys: new Set(),
    extraConfigPrivileges: [
      // `$check_vm_modify_config_perm`: the `$cloudinitoptions` and `ipconfigN`.
      { privilege: 'VM.Config.Cloudinit', why: 'to change cloud-init options', keys: /^(ci|ipconfig\d|nameserver|searchdomain|sshkeys)/ },
    ],
    pendingSection: '[PENDING]',
  },
  lxc: {
    type: 'lxc',
    documentKind: 'Container',
    noun: 'container',
    proxmoxLabel: 'CT',
    resourcePrefix: 'ct',
    nameKey: 'hostname',
    diskKey: /^(rootfs|mp\d+)$/,
    volumeKey: 'volume',
    configWrite: { method: 'PUT', task: false },
    move: { endpoint: 'move_volume', diskParam: 'volume', takesFormat: false, whileRunning: false },
    nic: { leadKey: 'name', macInModel: false, macKey: 'hwaddr', filledIn: { type: 'veth' } },
    ownedWhenSet: new Set(['arch', 'ostype', 'rootfs', 'template', 'unprivileged', 'memory', 'swap']),
    defaultsWhenAbsent: { unprivileged: '0' },
    createOptions: ['ostemplate', 'ssh-public-keys', 'pool', 'storage'],
    requiredCreateOptions: ['ostemplate'],
    fixedAtCreation: ['unprivileged'],
    refusedKeys: {},
    spaceSeparatedKeys: new Set(['nameserver', 'searchdomain']),
    extraConfigPrivileges: [],
    pendingSection: '[pve:pending]',
  },
};

/** The flavour of a guest type. */
export function flavourOf<T extends GuestType>(type: T): GuestFlavour<T> {
  return GUEST_FLAVOURS[type];
}

/** True for the guest types this product manages (a listing also holds storages, nodes, …). */
export function isGuestType(value: unknown): value is GuestType {
  return typeof value === 'string' && Object.hasOwn(GUEST_FLAVOURS, value);
}
