/**
 * The simulated storages: which storages exist with their type and content types, which volumes
 * exist and how big they are (allocation picks the next free `vm-<vmid>-disk-<n>` like
 * `find_free_diskname`, resize knows the old size, a referenced-but-missing volume fails like
 * `volume_size_info` would), and the files on them (templates, ISO images, snippets, backups).
 * An LVM storage has a volume group of fixed size: an allocation or a grow that does not fit is
 * refused as pve-storage and LVM refuse it (docs/proxmox-behaviour.md RHM-1…).
 */
import { DieError, ParamError } from './errors.js';
import { parseAllocation, parseOption, parseSize, parseVolumeId } from './property-format.js';
import type { GuestType } from '../../core/guest-flavours.js';

/** Every content type a storage can hold (`valid_content_types('dir')` plus `import`). */
const CONTENT_TYPES = ['backup', 'images', 'import', 'iso', 'rootdir', 'snippets', 'vztmpl'] as const;

/** One configured storage (`storage.cfg` entry). */
export interface SimStorage {
  storage: string;
  /** Plugin type: `dir`, `lvmthin`, `rbd`, `nfs`, `zfspool`, … */
  type: string;
  content: ReadonlySet<string>;
  shared: boolean;
  /** Mount path of file-based storages (`path` in `storage.cfg`). */
  path?: string;
  /** Capacity reported by the status listing, bytes. */
  total: number;
  /**
   * Bytes in use when the simulator started (a rehearsal's copy: `disk` of
   * `/cluster/resources`); undefined: what the simulator's own volumes and files take.
   */
  used?: number;
  /** The volume group of an `lvm`/`lvmthin` storage (`vgname` in `storage.cfg`). */
  vgname?: string;
  /** The nodes the storage is restricted to (`nodes` in `storage.cfg`); undefined: every node. */
  nodes?: ReadonlySet<string>;
}

/** A file on a storage that is not a guest volume: template, ISO, snippet, backup. */
export interface SimFile {
  volid: string;
  size: number;
  /** Seconds since the epoch. */
  ctime: number;
}

/** How a fixture or option describes a storage. */
export interface StorageDefinition {
  storage: string;
  type?: string;
  content?: string[];
  shared?: boolean;
  nodes?: string[];
  /** Capacity, bytes (default 500 GiB for `local-lvm`, else 100 GiB). */
  total?: number;
  /** Bytes in use at start, beyond the simulator's own volumes (see {@link SimStorage.used}). */
  used?: number;
  vgname?: string;
}

const FILE_STORAGE_TYPES = new Set(['dir', 'nfs', 'cifs', 'cephfs', 'glusterfs', 'btrfs']);
const GIB = 1024 ** 3;
/** A guest image's volume name, with its owner: `vm-<vmid>-…`, `base-<vmid>-…` (`<vmid>/…` on file storages). */
const GUEST_IMAGE = /^(?:\d+\/)?(?:vm|base)-(\d+)-/;
/** LVM's default physical extent (`vgcreate -s`): volumes are allocated in whole extents. */
const LVM_EXTENT = 4 * 1024 ** 2;
// A fixed time so listings are reproducible.
const DEFAULT_CTIME = 1_735_689_600;

/** Files of a fresh node's `local` storage: the templates and ISO people usually download first. */
const DEFAULT_FILES: SimFile[] = [
  { volid: 'local:iso/debian-13.1.0-amd64-netinst.iso', size: 783_286_272, ctime: DEFAULT_CTIME },
  { volid: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', size: 126_023_475, ctime: DEFAULT_CTIME },
  { volid: 'local:vztmpl/debian-13-standard_13.1-2_amd64.tar.zst', size: 129_425_868, ctime: DEFAULT_CTIME },
  { volid: 'local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst', size: 141_434_216, ctime: DEFAULT_CTIME },
];

/**
 * A storage from a definition. A bare id (or an id seen for the first time in lenient mode) is a
 * directory storage holding every content type, except `local-lvm`, which is the LVM-thin pool
 * of a default install; `local` is the default install's directory at `/var/lib/vz`.
 */
function makeStorage(def: StorageDefinition): SimStorage {
  const thin = def.storage === 'local-lvm';
  const type = def.type ?? (thin ? 'lvmthin' : 'dir');
  const content = new Set(def.content ?? (thin ? ['images', 'rootdir'] : CONTENT_TYPES));
  const storage: SimStorage = {
    storage: def.storage,
    type,
    content,
    shared: def.shared ?? false,
    total: def.total ?? (thin ? 500 : 100) * GIB,
  };
  if (def.used !== undefined) storage.used = def.used;
  if (type === 'lvm' || type === 'lvmthin') storage.vgname = def.vgname ?? (thin ? 'pve' : def.storage);
  if (def.nodes) storage.nodes = new Set(def.nodes);
  if (FILE_STORAGE_TYPES.has(type)) storage.path = def.storage === 'local' ? '/var/lib/vz' : `/mnt/pve/${def.storage}`;
  return storage;
}

/** Volume registry of the whole simulated cluster (shared storage semantics: one namespace). */
export class VolumeStore {
  private readonly volumes = new Map<string, number>();
  /** Per storage with a given start usage, the bytes allocated (less those freed) since. */
  private readonly grown = new Map<string, number>();
  /** Per storage, the bytes its volumes take: kept as they change, so a status listing sums nothing. */
  private readonly volumeBytes = new Map<string, number>();
  private readonly defined = new Map<string, SimStorage>();
  /** Whether the storages were given (strict) or any id is accepted (lenient). */
  readonly strict: boolean;
  private readonly files: SimFile[];
  /** Whether the files were given: then a template that is not among them does not exist. */
  readonly strictFiles: boolean;

  /** `storages` undefined: any storage id is accepted (lenient default). */
  constructor(storages?: (string | StorageDefinition)[], files?: SimFile[]) {
    this.strict = storages !== undefined;
    for (const def of storages ?? ['local', 'local-lvm']) {
      const storage = makeStorage(typeof def === 'string' ? { storage: def } : def);
      this.defined.set(storage.storage, storage);
    }
    this.strictFiles = files !== undefined;
    this.files = files ?? (this.defined.has('local') ? DEFAULT_FILES : []);
  }

  /** Storage ids for listings, in configuration order. */
  storageIds(): string[] {
    return [...this.defined.keys()];
  }

  /** A storage by id; in lenient mode an unknown id is created on first use. */
  storage(id: string): SimStorage | undefined {
    let storage = this.defined.get(id);
    if (!storage && !this.strict) {
      storage = makeStorage({ storage: id });
      this.defined.set(id, storage);
    }
    return storage;
  }

  /** Dies like `storage_config` when the storage is not configured. */
  checkStorage(storage: string): void {
    if (!this.storage(storage)) throw new DieError(`storage '${storage}' does not exist\n`);
  }

  /**
   * Dies like pve-storage `storage_check_node` when the storage is restricted to other nodes
   * (docs/proxmox-behaviour.md RHS-2): every allocation activates the storage on its node first.
   */
  checkOnNode(storage: string, node: string): void {
    const nodes = this.storage(storage)?.nodes;
    if (nodes && !nodes.has(node)) throw new DieError(`storage '${storage}' is not available on node '${node}'\n`);
  }

  /** Refuses a VM disk on a storage without `images` content, as qemu-server's `$check_storage_access` does (RHS-1). */
  checkVmImages(storage: string): void {
    this.checkStorage(storage);
    if (!this.storage(storage)?.content.has('images')) {
      throw new ParamError({ storage: `storage '${storage}' does not support vm images` });
    }
  }

  /**
   * Allocates `storage:vm-<vmid>-disk-<n>` (lowest free n) of `bytes`, on `node` when given
   * (RHS-2); on an LVM storage only when it fits (RHM-1, RHM-2).
   */
  allocate(storage: string, vmid: number, bytes: number, node?: string): string {
    this.checkStorage(storage);
    if (node !== undefined) this.checkOnNode(storage, node);
    for (let n = 0; ; n++) {
      const volid = `${storage}:vm-${vmid}-disk-${n}`;
      if (!this.volumes.has(volid)) {
        this.checkLvmAllocation(storage, `vm-${vmid}-disk-${n}`, bytes);
        this.setSize(volid, bytes);
        return volid;
      }
    }
  }

  /** Allocates the cloud-init drive volume of a VM. */
  allocateCloudinit(storage: string, vmid: number): string {
    this.checkStorage(storage);
    const volid = `${storage}:vm-${vmid}-cloudinit`;
    this.checkLvmAllocation(storage, `vm-${vmid}-cloudinit`, 4 * 1024 * 1024);
    this.setSize(volid, 4 * 1024 * 1024);
    return volid;
  }

  /** Bytes free on a storage (`avail`; for LVM the volume group's `vg_free`). */
  private freeBytes(storage: string): number {
    const defined = this.storage(storage);
    return defined ? Math.max(0, defined.total - this.used(storage)) : 0;
  }

  /** The thick LVM storage `storage` is, or undefined (a thin pool and files are over-committed, never refused). */
  private thickLvm(storage: string): (SimStorage & { vgname: string }) | undefined {
    const defined = this.storage(storage);
    return defined?.type === 'lvm' && defined.vgname !== undefined ? (defined as SimStorage & { vgname: string }) : undefined;
  }

  /**
   * Refuses a new volume that does not fit on an LVM storage, as `alloc_lvm_image` does — its
   * own check compares `vg_free` in bytes with the size in KiB (RHM-1) — and else as `lvcreate`
   * does, in whole extents (RHM-2).
   */
  private checkLvmAllocation(storage: string, name: string, bytes: number): void {
    const lvm = this.thickLvm(storage);
    if (!lvm) return;
    const free = this.freeBytes(storage);
    const kib = Math.ceil(bytes / 1024);
    if (free < kib) throw new DieError(`not enough free space (${free} < ${kib})\n`);
    const needed = Math.ceil(bytes / LVM_EXTENT);
    const available = Math.floor(free / LVM_EXTENT);
    if (needed > available)
      throw new DieError(
        `lvcreate '${lvm.vgname}/${name}' error:   Volume group "${lvm.vgname}" has insufficient free space (${available} extents): ${needed} required.\n`,
      );
  }

  /**
   * Grows a volume to `bytes`, refused as `lvextend` refuses a grow an LVM storage has no room
   * for (RHM-3): the message names the extents the grow needs beyond the volume's own.
   */
  grow(volid: string, bytes: number): void {
    const id = parseVolumeId(volid);
    const lvm = id ? this.thickLvm(id.storage) : undefined;
    if (id && lvm) {
      const needed = Math.ceil(bytes / LVM_EXTENT) - Math.ceil((this.volumes.get(volid) ?? 0) / LVM_EXTENT);
      const available = Math.floor(this.freeBytes(id.storage) / LVM_EXTENT);
      if (needed > available)
        throw new DieError(
          `error resizing volume '/dev/${lvm.vgname}/${id.volname}':   Insufficient free space: ${needed} extents needed, but only ${available} available\n`,
        );
    }
    this.setSize(volid, bytes);
  }

  /** Registers an existing volume (fixtures). */
  register(volid: string, bytes: number): void {
    this.put(volid, bytes);
  }

  has(volid: string): boolean {
    return this.volumes.has(volid);
  }

  size(volid: string): number | undefined {
    return this.volumes.get(volid);
  }

  /** Sets a volume's size (no checks); on a storage with a start usage, the difference counts as used. */
  setSize(volid: string, bytes: number): void {
    this.count(volid, bytes - (this.volumes.get(volid) ?? 0));
    this.put(volid, bytes);
  }

  free(volid: string): void {
    this.count(volid, -(this.volumes.get(volid) ?? 0));
    this.put(volid, undefined);
  }

  /** Sets (or, with undefined, removes) a volume, keeping its storage's byte count. */
  private put(volid: string, bytes: number | undefined): void {
    const before = this.volumes.get(volid) ?? 0;
    if (bytes === undefined) this.volumes.delete(volid);
    else this.volumes.set(volid, bytes);
    // Counted as `images` lists them: a guest's image (`vm-`/`base-<vmid>-…`).
    const parsed = parseVolumeId(volid);
    if (parsed && GUEST_IMAGE.test(parsed.volname))
      this.volumeBytes.set(parsed.storage, (this.volumeBytes.get(parsed.storage) ?? 0) + (bytes ?? 0) - before);
  }

  /** Frees every volume owned by a guest (`vm-<vmid>-…`), as destroy does. */
  freeOwnedBy(vmid: number): void {
    const re = new RegExp(`^[^:]+:(?:${vmid}/)?(?:vm|base)-${vmid}-`);
    for (const volid of [...this.volumes.keys()]) if (re.test(volid)) this.free(volid);
  }

  /** Counts `bytes` more in use on the volume's storage, when that storage's usage is given rather than summed. */
  private count(volid: string, bytes: number): void {
    const storage = parseVolumeId(volid)?.storage;
    if (storage === undefined || this.defined.get(storage)?.used === undefined || bytes === 0) return;
    this.grown.set(storage, (this.grown.get(storage) ?? 0) + bytes);
  }

  /** Guest volumes on a storage, with their owner and size (`list_images`). */
  images(storage: string): { volid: string; vmid: number; size: number }[] {
    const out: { volid: string; vmid: number; size: number }[] = [];
    for (const [volid, size] of this.volumes) {
      const parsed = parseVolumeId(volid);
      if (parsed?.storage !== storage) continue;
      const owner = GUEST_IMAGE.exec(parsed.volname);
      if (owner) out.push({ volid, vmid: Number(owner[1]), size });
    }
    return out;
  }

  /** Bytes in use on a storage: its start usage and what was allocated since, else what its volumes and files take. */
  used(storage: string): number {
    const start = this.defined.get(storage)?.used;
    if (start !== undefined) return start + (this.grown.get(storage) ?? 0);
    let total = this.volumeBytes.get(storage) ?? 0;
    for (const file of this.files) if (parseVolumeId(file.volid)?.storage === storage) total += file.size;
    return total;
  }

  /** Files (templates, ISOs, …) on a storage. */
  filesOn(storage: string): SimFile[] {
    return this.files.filter((f) => parseVolumeId(f.volid)?.storage === storage);
  }

  /** Whether a template or ISO volume exists; always true when no files were given. */
  fileExists(volid: string): boolean {
    return !this.strictFiles || this.files.some((f) => f.volid === volid);
  }

  /** `path` of a file volume as `abs_filesystem_path` gives it (`local:vztmpl/x` → `/var/lib/vz/template/cache/x`). */
  filePath(volid: string): string {
    const parsed = parseVolumeId(volid);
    if (!parsed) return volid;
    const base = this.storage(parsed.storage)?.path ?? `/mnt/pve/${parsed.storage}`;
    const m = /^(vztmpl|iso|snippets|backup|import)\/(.+)$/.exec(parsed.volname);
    if (!m) return `${base}/${parsed.volname}`;
    const dir = { vztmpl: 'template/cache', iso: 'template/iso', snippets: 'snippets', backup: 'dump', import: 'import' }[
      m[1] as 'vztmpl' | 'iso' | 'snippets' | 'backup' | 'import'
    ];
    return `${base}/${dir}/${m[2] as string}`;
  }

  /** Registers every volume a config text references (fixture loading). */
  registerFromConfig(type: GuestType, values: Map<string, string>): void {
    for (const [key, value] of values) {
      const isVolumeKey =
        type === 'qemu' ? /^(ide|sata|scsi|virtio)\d+$|^efidisk0$|^tpmstate0$/.test(key) : key === 'rootfs' || /^mp\d+$/.test(key);
      if (/^unused\d+$/.test(key)) {
        if (parseVolumeId(value)) this.put(value, this.volumes.get(value) ?? 0);
        continue;
      }
      if (!isVolumeKey) continue;
      const parsed = parseOption(type, key, value);
      const volid = parsed?.file ?? parsed?.volume;
      const id = volid ? parseVolumeId(volid) : undefined;
      if (!volid || !id || parseAllocation(volid) || parsed?.media === 'cdrom') continue;
      // A lenient cluster learns the storages its guests use, so listings show them.
      this.storage(id.storage);
      this.put(volid, parseSize(parsed?.size ?? '') ?? 0);
    }
  }
}
