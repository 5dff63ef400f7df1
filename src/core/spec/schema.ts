/**
 * The spec documents as users write them (docs/design.md#the-spec-repository). Strict objects: an unknown key is an error,
 * never silently ignored, because a misspelt key would otherwise quietly do nothing.
 *
 * These schemas check shape and types only. Rules that need context (a node of the named cluster,
 * a VMID inside the cluster's range, a config key Proxmox knows) live in `validate-specs.ts`, where
 * each error can point at the exact YAML node.
 */
import { z } from 'zod';
import { RestartDocument } from './restart-policy.js';

/** The three document kinds. */
export const SpecKind = z.enum(['Cluster', 'VM', 'Container']);
export type SpecKind = z.infer<typeof SpecKind>;

/** Proxmox accepts VMIDs 100…999999999. */
export const VMID_MIN = 100;
export const VMID_MAX = 999_999_999;

/** A guest's VMID as written: an integer in Proxmox's range. */
const Vmid = z.int().min(VMID_MIN).max(VMID_MAX);

const nonEmpty = z.string().min(1);

/** `kind: Cluster`: policy only. URLs and credentials are server-side and never in git. */
export const ClusterDocument = z.strictObject({
  kind: z.literal('Cluster'),
  name: nonEmpty,
  /** Every guest of the cluster has its VMID in [lower, upper). */
  vmids: z.strictObject({ lower: z.int(), upper: z.int() }),
  /** Tag that marks a guest as owned by this repository. */
  ownerTag: nonEmpty.default('pve-gitops'),
  nodes: z.array(nonEmpty).min(1),
  /** Optional naming contract: disks may only use these storages. */
  storages: z.array(nonEmpty).optional(),
  /** Optional naming contract: NICs may only use these bridges. */
  bridges: z.array(nonEmpty).optional(),
  /** true: a guest whose document is removed is destroyed; false: reported as an orphan. */
  prune: z.boolean().default(false),
  /** The restart policy of guests that set none (restart-policy.ts); default `never`. */
  restart: RestartDocument.optional(),
  /** Guests restarted at once on this cluster, at most (default 1). */
  restartsInFlight: z.int().min(1).max(100).optional(),
  /** When applies may change its guests (apply-windows.ts); absent: any time. */
  windows: z.array(nonEmpty).min(1).optional(),
  /** Snapshot a VM before its apply (plan-snapshot.ts): always, risky changes only, or never (default). */
  snapshot: z.enum(['always', 'risky', 'never']).optional(),
  /** Snapshots this tool keeps per VM (the oldest of its own are deleted past it; default 3). */
  snapshotsKept: z.int().min(1).max(20).optional(),
});
export type ClusterDocument = z.infer<typeof ClusterDocument>;

const scalar = z.union([z.string(), z.number(), z.boolean()]);

/**
 * One value under `config:`. Scalars are Proxmox's own syntax (`net0: virtio,bridge=vmbr0`);
 * booleans become `1`/`0`. A list is accepted where Proxmox takes a list (`tags`, `sshkeys`,
 * `nameserver`, `searchdomain`); a mapping is a property string written as YAML
 * (`net0: { model: virtio, bridge: vmbr0, firewall: true }`), see `wire-values.ts`.
 */
export const ConfigValue = z.union([scalar, z.array(z.union([z.string(), z.number()])), z.record(z.string(), scalar)], {
  error: 'expected a string, number, boolean, list or mapping of scalars',
});
export type ConfigValue = z.infer<typeof ConfigValue>;

/** Proxmox option names and values, as `qm set` / `pct set` take them. */
const GuestConfig = z.record(z.string(), ConfigValue);

/**
 * `create.clone`: the template a guest is cloned from — its name or VMID on the guest's cluster —
 * and how (docs/design.md#creating-guests-by-cloning). Proxmox's default for a template is a
 * linked clone; `storage` (and a VM's `format`) only go with `full: true`.
 */
const cloneFields = {
  /** The template's name (`name` / `hostname`) or VMID on the cluster. */
  template: z.union([nonEmpty, z.number().int().positive()]),
  /** A full copy of every disk; linked to the template's base images when false or left out. */
  full: z.boolean().optional(),
  /** Target storage of a full clone's disks. */
  storage: nonEmpty.optional(),
};

/**
 * Create-only options of a VM: passed to `POST /nodes/{node}/qemu` when the guest is created and
 * never compared afterwards (Proxmox keeps them nowhere in the config).
 */
export const VmCreateOptions = z.strictObject({
  /** Resource pool the new guest joins. */
  pool: nonEmpty.optional(),
  /** Default storage for disks written as a bare size. */
  storage: nonEmpty.optional(),
  /** Create the VM as a clone of a template on its cluster (docs/design.md#creating-guests-by-cloning). */
  clone: z
    .strictObject({
      ...cloneFields,
      /** Disk format of a full clone's copies. */
      format: z.enum(['raw', 'qcow2', 'vmdk']).optional(),
    })
    .optional(),
});
export type VmCreateOptions = z.infer<typeof VmCreateOptions>;

/**
 * Create-only options of a container (`POST /nodes/{node}/lxc`). `password` is deliberately not
 * accepted: a root password does not belong in a git repository; use `ssh-public-keys`.
 */
export const ContainerCreateOptions = z.strictObject({
  /** Create the container as a clone of a container template on its cluster. */
  clone: z.strictObject(cloneFields).optional(),
  /** Template volume the container is created from, e.g. `local:vztmpl/debian-12-…tar.zst`. */
  ostemplate: nonEmpty.optional(),
  /** Public keys for root, one per list item. */
  'ssh-public-keys': z.union([z.string(), z.array(z.string())]).optional(),
  pool: nonEmpty.optional(),
  storage: nonEmpty.optional(),
});
export type ContainerCreateOptions = z.infer<typeof ContainerCreateOptions>;

const guestFields = {
  /** DNS name, unique per cluster. Not the identity: that is the VMID. */
  name: nonEmpty,
  cluster: nonEmpty,
  /** Placement at creation only. */
  node: nonEmpty,
  /** The identity; derived from `cluster/name` when left out (see `vmid.ts`). */
  vmid: Vmid.optional(),
  power: z.enum(['running', 'stopped', 'ignore']).default('ignore'),
  state: z.enum(['present', 'absent']).default('present'),
  /** Take ownership of an existing, unowned guest with this VMID and name. */
  adopt: z.boolean().default(false),
  /** Config keys this repository does not own: never set, never deleted. */
  ignore: z.array(nonEmpty).default([]),
  config: GuestConfig.default({}),
  /** Restart to put pending values in effect (restart-policy.ts); default: the cluster's. */
  restart: RestartDocument.optional(),
  /** Names of guests of the same cluster this one applies after. */
  dependsOn: z.array(nonEmpty).optional(),
  /** Converted to a template after creation (`POST …/template`) and never started. */
  template: z.boolean().optional(),
  /** When applies may change this guest (apply-windows.ts), in place of its cluster's. */
  windows: z.array(nonEmpty).min(1).optional(),
  /** Snapshot the VM before its apply (plan-snapshot.ts), in place of its cluster's policy. */
  snapshot: z.enum(['always', 'risky', 'never']).optional(),
};

/** `kind: VM` (QEMU). */
export const VmDocument = z.strictObject({
  kind: z.literal('VM'),
  ...guestFields,
  /**
   * `regenerate`: when an apply changes cloud-init options of a running VM, its cloud-init drive
   * is generated again right after the config write (`PUT …/cloudinit`), so the guest's next
   * cloud-init run sees them (docs/design.md#cloud-init-on-a-running-vm).
   */
  cloudinit: z.literal('regenerate').optional(),
  create: VmCreateOptions.default({}),
});
export type VmDocument = z.infer<typeof VmDocument>;

/** `kind: Container` (LXC). */
export const ContainerDocument = z.strictObject({
  kind: z.literal('Container'),
  ...guestFields,
  create: ContainerCreateOptions.default({}),
});
export type ContainerDocument = z.infer<typeof ContainerDocument>;

/** The schema for each kind, for looking up by the document's `kind` value. */
export const DOCUMENT_SCHEMAS = {
  Cluster: ClusterDocument,
  VM: VmDocument,
  Container: ContainerDocument,
} as const;
