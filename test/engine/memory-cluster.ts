/**
 * An in-memory cluster behind the core's ports, for unit tests of the engine: deterministic, no
 * HTTP, time from a {@link VirtualClock}. It keeps what the engine's guarantees depend on —
 * a digest per config that every guarded write is checked against, locks that refuse writes,
 * tasks that take time and show up as active, a VMID unique in the cluster, power changes refused
 * when the state is already there — and nothing of Proxmox's value formats (tests use plain keys
 * such as `memory` and `cores`). Faithful behaviour over HTTP is the simulator's job.
 *
 * Tests steer it with hooks (`afterRead`, `beforeWrite`), with `fail(op, vmid, error)` for a
 * failure of the next call, and read back every call in `calls`.
 */
import { createHash } from 'node:crypto';
import type { ListedGuest, ObservedGuest } from '../../src/core/model.js';
import type { GuestType } from '../../src/core/guest-flavours.js';
import {
  AlreadyInPowerStateError,
  DigestConflictError,
  GuestNotFoundError,
  LockedError,
  PortError,
  VmidTakenError,
} from '../../src/core/port-errors.js';
import type { ClusterWriter, GuestRef, WriteContext, WriteResult } from '../../src/core/ports.js';
import type { VirtualClock } from './virtual-clock.js';

export interface MemoryGuest {
  vmid: number;
  type: GuestType;
  node: string;
  running: boolean;
  /** The main section: every key, `name`/`tags`/`lock` included, as strings. */
  config: Record<string, string>;
  pending: Record<string, string>;
  pendingDelete: string[];
}

export type MemoryOp =
  | 'listGuests'
  | 'listNodes'
  | 'vmidExists'
  | 'readGuest'
  | 'activeTasks'
  | 'create'
  | 'updateConfig'
  | 'resize'
  | 'moveDisk'
  | 'start'
  | 'shutdown'
  | 'stop'
  | 'destroy';

export interface MemoryCall {
  op: MemoryOp;
  vmid?: number;
  node?: string;
  at: number;
}

interface Task {
  upid: string;
  node: string;
  vmid: number;
}

const WRITES: ReadonlySet<MemoryOp> = new Set(['create', 'updateConfig', 'resize', 'moveDisk', 'start', 'shutdown', 'stop', 'destroy']);
// Parameters Proxmox takes at creation and does not keep in the config.
const CREATE_ONLY = new Set(['ostemplate', 'storage', 'pool', 'start', 'unique', 'password']);

export interface MemoryClusterOptions {
  cluster?: string;
  nodes?: string[];
  clock: VirtualClock;
  /** How long every task runs, in virtual ms (default 200). */
  taskMs?: number;
  /** Keys a running guest only takes at its next start (they go to pending). Default none. */
  pendingKeys?: string[];
  /** How long a guest read takes, in virtual ms (default 0). */
  readMs?: number;
}

/** A cluster in memory that implements the writer port. */
export class MemoryCluster implements ClusterWriter {
  readonly cluster: string;
  readonly nodes: string[];
  readonly guests = new Map<number, MemoryGuest>();
  readonly calls: MemoryCall[] = [];
  readonly clock: VirtualClock;
  taskMs: number;
  /** Runs after every successful guest read (between the engine's read and its write). */
  afterRead: ((vmid: number) => void) | undefined;
  /** Runs before every write reaches the guest; may change the cluster or throw. */
  beforeWrite: ((op: MemoryOp, ref: GuestRef) => void) | undefined;
  /** Most writes to one guest that were ever in progress at once. */
  maxConcurrentWrites = 0;
  /** Most writes (tasks included) in progress at once in the whole cluster. */
  maxClusterWrites = 0;
  /** Most guest reads in progress at once. */
  maxConcurrentReads = 0;
  #reads = 0;
  readonly #readMs: number;
  #clusterWrites = 0;
  readonly #pendingKeys: Set<string>;
  readonly #failures: { op: MemoryOp; vmid: number | undefined; error: Error }[] = [];
  readonly #tasks = new Set<Task>();
  readonly #writing = new Map<number, number>();
  #taskSeq = 0;

  constructor(options: MemoryClusterOptions) {
    this.cluster = options.cluster ?? 'lab';
    this.nodes = options.nodes ?? ['pve-01', 'pve-02'];
    this.clock = options.clock;
    this.taskMs = options.taskMs ?? 200;
    this.#pendingKeys = new Set(options.pendingKeys ?? []);
    this.#readMs = options.readMs ?? 0;
  }

  /** Adds a guest as it would be after a create; `name` and the `pve-gitops` tag by default. */
  add(guest: Partial<MemoryGuest> & { vmid: number }): MemoryGuest {
    const full: MemoryGuest = {
      type: 'qemu',
      node: this.nodes[0]!,
      running: false,
      pending: {},
      pendingDelete: [],
      ...guest,
      config: { name: `guest-${guest.vmid}`, tags: 'pve-gitops', ...guest.config },
    };
    this.guests.set(full.vmid, full);
    return full;
  }

  /** The next call of `op` (for `vmid`, or any) fails with `error`. */
  fail(op: MemoryOp, vmid: number | undefined, error: Error): void {
    this.#failures.push({ op, vmid, error });
  }

  /** Sets a lock that clears itself after `ms` virtual ms, as a backup would. */
  holdLock(vmid: number, lock: string, ms: number): Promise<void> {
    this.#guest(vmid).config.lock = lock;
    return this.clock.sleep(ms).then(() => {
      const guest = this.guests.get(vmid);
      if (guest?.config.lock === lock) delete guest.config.lock;
    });
  }

  /** A task of someone else on the guest (a migration, an earlier run's start), running for `ms`. */
  foreignTask(vmid: number, type: string, ms: number): Promise<void> {
    const guest = this.#guest(vmid);
    const task = this.#newTask(guest.node, type, vmid);
    return this.clock.sleep(ms).then(() => void this.#tasks.delete(task));
  }

  /** Calls of one operation (for one VMID). */
  count(op: MemoryOp, vmid?: number): number {
    return this.calls.filter((c) => c.op === op && (vmid === undefined || c.vmid === vmid)).length;
  }

  /** The digest of a guest's config as it is now: any change to it, a lock included, moves it. */
  digest(vmid: number): string {
    const guest = this.#guest(vmid);
    const text = JSON.stringify([Object.entries(guest.config).sort(), Object.entries(guest.pending).sort(), guest.pendingDelete]);
    return createHash('sha1').update(text).digest('hex');
  }

  async listGuests(): Promise<ListedGuest[]> {
    this.#enter('listGuests');
    return [...this.guests.values()].map((g) => {
      const listed: ListedGuest = { vmid: g.vmid, type: g.type, node: g.node, status: g.running ? 'running' : 'stopped' };
      if (g.config.name !== undefined) listed.name = g.config.name;
      if (g.config.tags !== undefined) listed.tags = g.config.tags;
      if (g.config.lock !== undefined) listed.lock = g.config.lock;
      return listed;
    });
  }

  /** Whether the VMID is in use, as the cluster's VMID list says (every guest counts here). */
  async vmidExists(vmid: number): Promise<boolean> {
    this.#enter('vmidExists', { node: '', type: 'qemu', vmid });
    return this.guests.has(vmid);
  }

  async listNodes(): Promise<string[]> {
    this.#enter('listNodes');
    return [...this.nodes];
  }

  readGuest(listed: ListedGuest): Promise<ObservedGuest> {
    return this.readGuestForApply(listed);
  }

  async readGuestForApply(ref: GuestRef): Promise<ObservedGuest> {
    this.#enter('readGuest', ref);
    if (this.#readMs > 0) {
      this.#reads += 1;
      this.maxConcurrentReads = Math.max(this.maxConcurrentReads, this.#reads);
      try {
        await this.clock.sleep(this.#readMs);
      } finally {
        this.#reads -= 1;
      }
    }
    const guest = this.#at(ref);
    const observed: ObservedGuest = {
      vmid: guest.vmid,
      type: guest.type,
      node: guest.node,
      status: guest.running ? 'running' : 'stopped',
      digest: this.digest(guest.vmid),
      current: { ...guest.config },
      pending: { ...guest.pending },
      pendingDelete: [...guest.pendingDelete],
    };
    this.afterRead?.(guest.vmid);
    return observed;
  }

  async activeTasks(ref: GuestRef): Promise<string[]> {
    this.#enter('activeTasks', ref);
    return [...this.#tasks].filter((t) => t.node === ref.node && t.vmid === ref.vmid).map((t) => t.upid);
  }

  create(ref: GuestRef, params: Record<string, string>, context?: WriteContext): Promise<WriteResult> {
    return this.#write('create', ref, context, () => {
      const holder = this.guests.get(ref.vmid);
      if (holder) {
        throw new VmidTakenError(`unable to create VM ${ref.vmid} - VM ${ref.vmid} already exists on node '${holder.node}'`, {
          vmid: ref.vmid,
          node: holder.node,
          cluster: this.cluster,
        });
      }
      const config: Record<string, string> = { lock: 'create' };
      for (const [key, value] of Object.entries(params)) if (!CREATE_ONLY.has(key)) config[key] = value;
      this.guests.set(ref.vmid, { vmid: ref.vmid, type: ref.type, node: ref.node, running: false, config, pending: {}, pendingDelete: [] });
      return () => {
        const guest = this.guests.get(ref.vmid);
        if (guest?.config.lock === 'create') delete guest.config.lock;
      };
    });
  }

  updateConfig(ref: GuestRef, set: Record<string, string>, remove: string[], digest: string, context?: WriteContext): Promise<WriteResult> {
    return this.#write('updateConfig', ref, context, () => {
      const guest = this.#writable(ref, digest);
      for (const [key, value] of Object.entries(set)) {
        if (guest.running && this.#pendingKeys.has(key)) guest.pending[key] = value;
        else guest.config[key] = value;
      }
      for (const key of remove) {
        if (guest.running && this.#pendingKeys.has(key)) guest.pendingDelete.push(key);
        else delete guest.config[key];
      }
      return undefined;
    });
  }

  resize(ref: GuestRef, disk: string, size: string, digest: string, context?: WriteContext): Promise<WriteResult> {
    return this.#write('resize', ref, context, () => {
      const guest = this.#writable(ref, digest);
      guest.config[disk] = `${(guest.config[disk] ?? '').replace(/,size=[^,]*/, '')},size=${size}`;
      return undefined;
    });
  }

  moveDisk(ref: GuestRef, disk: string, storage: string, digest: string, context?: WriteContext): Promise<WriteResult> {
    return this.#write('moveDisk', ref, context, () => {
      const guest = this.#writable(ref, digest);
      guest.config[disk] = (guest.config[disk] ?? '').replace(/^[^:]*:/, `${storage}:`);
      return undefined;
    });
  }

  start(ref: GuestRef, context?: WriteContext): Promise<WriteResult> {
    return this.#power('start', ref, context, true);
  }

  shutdown(ref: GuestRef, context?: WriteContext): Promise<WriteResult> {
    return this.#power('shutdown', ref, context, false);
  }

  stop(ref: GuestRef, context?: WriteContext): Promise<WriteResult> {
    return this.#power('stop', ref, context, false);
  }

  destroy(ref: GuestRef, context?: WriteContext): Promise<WriteResult> {
    return this.#write('destroy', ref, context, () => {
      const guest = this.#unlocked(ref);
      if (guest.running) throw new PortError(`VM ${ref.vmid} is running - destroy failed`, { cluster: this.cluster });
      if (guest.config.protection === '1') {
        throw new PortError(`can't remove VM ${ref.vmid} - protection mode enabled`, { cluster: this.cluster });
      }
      return () => void this.guests.delete(ref.vmid);
    });
  }

  #power(op: 'start' | 'shutdown' | 'stop', ref: GuestRef, context: WriteContext | undefined, running: boolean): Promise<WriteResult> {
    return this.#write(op, ref, context, () => {
      const guest = this.#unlocked(ref);
      if (guest.running === running) {
        const text = running ? `VM ${ref.vmid} already running` : `VM ${ref.vmid} not running`;
        throw new AlreadyInPowerStateError(text, { state: running ? 'running' : 'stopped', cluster: this.cluster });
      }
      return () => {
        guest.running = running;
        if (running) {
          Object.assign(guest.config, guest.pending);
          for (const key of guest.pendingDelete) delete guest.config[key];
          guest.pending = {};
          guest.pendingDelete = [];
        }
      };
    });
  }

  /**
   * One write: hooks and injected failures first, then `check` (which may throw and returns what
   * the task does at its end), then the task, awaited in virtual time.
   */
  async #write(
    op: MemoryOp,
    ref: GuestRef,
    context: WriteContext | undefined,
    check: () => (() => void) | undefined,
  ): Promise<WriteResult> {
    this.#enter(op, ref);
    this.beforeWrite?.(op, ref);
    const writing = (this.#writing.get(ref.vmid) ?? 0) + 1;
    this.#writing.set(ref.vmid, writing);
    this.maxConcurrentWrites = Math.max(this.maxConcurrentWrites, writing);
    this.#clusterWrites += 1;
    this.maxClusterWrites = Math.max(this.maxClusterWrites, this.#clusterWrites);
    try {
      const finish = check();
      const task = this.#newTask(ref.node, op, ref.vmid);
      try {
        await this.clock.sleep(this.taskMs, context?.signal);
      } finally {
        this.#tasks.delete(task);
      }
      finish?.();
      return { upid: task.upid };
    } finally {
      this.#writing.set(ref.vmid, (this.#writing.get(ref.vmid) ?? 1) - 1);
      this.#clusterWrites -= 1;
    }
  }

  #enter(op: MemoryOp, ref?: GuestRef): void {
    const call: MemoryCall = { op, at: this.clock.now() };
    if (ref) {
      call.vmid = ref.vmid;
      call.node = ref.node;
    }
    this.calls.push(call);
    const index = this.#failures.findIndex((f) => f.op === op && (f.vmid === undefined || f.vmid === ref?.vmid));
    if (index >= 0) {
      const [failure] = this.#failures.splice(index, 1);
      throw failure!.error;
    }
    if (WRITES.has(op) && !ref) throw new TypeError(`${op} without a guest`);
  }

  #newTask(node: string, type: string, vmid: number): Task {
    const hex = (n: number, width: number): string => n.toString(16).toUpperCase().padStart(width, '0');
    const seq = this.#taskSeq++;
    const task = { upid: `UPID:${node}:${hex(seq, 8)}:${hex(seq, 8)}:${hex(this.clock.now(), 8)}:${type}:${vmid}:test@pve:`, node, vmid };
    this.#tasks.add(task);
    return task;
  }

  #guest(vmid: number): MemoryGuest {
    const guest = this.guests.get(vmid);
    if (!guest) throw new Error(`no guest ${vmid} in the memory cluster`);
    return guest;
  }

  /** The guest at `ref`, or "does not exist" as Proxmox says it for a config on another node. */
  #at(ref: GuestRef): MemoryGuest {
    const guest = this.guests.get(ref.vmid);
    if (!guest || guest.node !== ref.node || guest.type !== ref.type) {
      throw new GuestNotFoundError(`Configuration file 'nodes/${ref.node}/qemu-server/${ref.vmid}.conf' does not exist`, {
        cluster: this.cluster,
      });
    }
    return guest;
  }

  #unlocked(ref: GuestRef): MemoryGuest {
    const guest = this.#at(ref);
    const lock = guest.config.lock;
    if (lock) throw new LockedError(`VM is locked (${lock})`, { lock, cluster: this.cluster });
    return guest;
  }

  #writable(ref: GuestRef, digest: string): MemoryGuest {
    const guest = this.#unlocked(ref);
    const actual = this.digest(ref.vmid);
    if (digest !== actual) {
      throw new DigestConflictError('detected modified configuration - file changed by other user? Try again.', {
        expectedDigest: digest,
        actualDigest: actual,
        cluster: this.cluster,
      });
    }
    return guest;
  }
}
