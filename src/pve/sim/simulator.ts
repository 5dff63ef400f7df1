/**
 * The state of a simulated cluster and the injection API tests and demos drive: guests, tasks,
 * volumes, tokens, counters, latency, faults, locks held "by a backup", operator edits.
 */
import type { GuestType } from '../../core/guest-flavours.js';
import { TokenRegistry } from './auth.js';
import { ConfigLocks } from './config-lock.js';
import { ApiError, DieError, PermissionError, SimulatorError } from './errors.js';
import { configObjectToRaw } from './fixture.js';
import { Guest } from './guest/guest.js';
import { flavourOf } from './guest/flavours.js';
import { StatsCollector, type SimStats } from './stats.js';
import { TaskRegistry, type SimTask } from './tasks.js';
import type { UpdateOutcome } from './config-update/common.js';
import { applyLxcUpdate, checkLxcUpdateLists, prepareLxcUpdate } from './config-update/container.js';
import { applyQemuUpdate, prepareQemuUpdate } from './config-update/vm.js';
import { VolumeStore, type SimFile, type StorageDefinition } from './volumes.js';

/** An operator's edit: options to set and options to delete. */
export interface OperatorEdit {
  set?: Record<string, string | number>;
  delete?: string[];
}

/** What `getGuest` reports. */
interface SimGuestInfo {
  vmid: number;
  type: GuestType;
  node: string;
  running: boolean;
  rawConfig: string;
  digest: string;
}

/** A guest to add directly (tests, fixtures). */
interface SimGuestDefinition {
  vmid: number;
  type: GuestType;
  node: string;
  running?: boolean;
  /** Raw config text, or key → value (serialised as Proxmox would). */
  config: string | Record<string, string | number | boolean | undefined>;
  lock?: string;
}

/** Fault injection settings. */
interface FailureSettings {
  rate: number;
  methods?: string[];
  /** `error`: 500 `got timeout`; `reset`: connection dropped; `mixed` (default): either. */
  mode?: 'error' | 'reset' | 'mixed';
}

/** Construction settings of a {@link Simulator}. */
interface SimulatorSettings {
  nodes: string[];
  clusterName: string;
  taskMs: number;
  latencyMs: number;
  /** Delay of 401 answers (Proxmox: 3000 ms). */
  authFailureDelayMs: number;
  nextId: { lower: number; upper: number };
  /** Configured storages; undefined accepts any storage id. */
  storages?: (string | StorageDefinition)[];
  /** Templates, ISOs and other files; undefined lists a few and accepts any template. */
  files?: SimFile[];
  /** Resource pools that exist; undefined accepts any pool name (and creates it on first use). */
  pools?: (string | PoolDefinition)[];
  /** CPUs per node; a node not named has {@link DEFAULT_NODE_CPUS}. */
  nodeCpus?: Record<string, number>;
  /** Bridges (and VNets) per node; a node not named has every bridge. */
  bridges?: Record<string, string[]>;
}

/** The CPUs of a simulated node unless its settings say otherwise. */
export const DEFAULT_NODE_CPUS = 32;

/** A resource pool as a fixture describes it. */
interface PoolDefinition {
  poolid: string;
  comment?: string;
  vmids?: number[];
  storage?: string[];
}

/** A resource pool (`user.cfg` `pool:` entry). */
export interface SimPool {
  poolid: string;
  comment?: string;
  vmids: Set<number>;
  storage: Set<string>;
}

/** A simulated Proxmox VE cluster. */
export class Simulator {
  readonly nodes: string[];
  readonly clusterName: string;
  readonly guests = new Map<number, Guest>();
  readonly tasks: TaskRegistry;
  readonly volumes: VolumeStore;
  readonly tokens = new TokenRegistry();
  readonly statsCollector = new StatsCollector();
  /** The per-guest config locks (`lock_config`) that writers of one guest queue on. */
  readonly configLocks = new ConfigLocks();
  readonly nextId: { lower: number; upper: number };
  /** Resource pools by id, sorted on read. */
  readonly pools = new Map<string, SimPool>();
  /** Whether only the configured pools exist (else any name is accepted and created on first use). */
  readonly strictPools: boolean;
  /** Backup jobs (`jobs.cfg` entries of type `vzdump`) by id: each option as Proxmox stores it. */
  readonly backupJobs = new Map<string, Record<string, string>>();
  private readonly cpusByNode: ReadonlyMap<string, number>;
  private readonly bridgesByNode: ReadonlyMap<string, ReadonlySet<string>>;
  /** Guests that do not answer a clean shutdown (`guest/shutdown-timeout.ts`); tests add them. */
  readonly ignoresShutdown = new Set<number>();
  latencyMs: number;
  /**
   * pvestatd's publishing interval for `/cluster/resources` name/status (Proxmox: 10 s); 0 shows
   * them live. With a lag, a new guest is listed as `unknown` without a name, and a rename or power
   * change shows up at the next tick.
   */
  rrdLagMs = 0;
  authFailureDelayMs: number;
  failure: { rate: number; methods?: Set<string>; mode: 'error' | 'reset' | 'mixed' } = { rate: 0, mode: 'mixed' };
  private readonly armedEdits = new Map<number, OperatorEdit[]>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private sorted: Guest[] | undefined;

  constructor(settings: SimulatorSettings) {
    this.nodes = [...settings.nodes];
    this.clusterName = settings.clusterName;
    this.tasks = new TaskRegistry(settings.taskMs);
    this.volumes = new VolumeStore(settings.storages, settings.files);
    this.latencyMs = settings.latencyMs;
    this.authFailureDelayMs = settings.authFailureDelayMs;
    this.nextId = settings.nextId;
    this.strictPools = settings.pools !== undefined;
    this.cpusByNode = new Map(Object.entries(settings.nodeCpus ?? {}));
    this.bridgesByNode = new Map(Object.entries(settings.bridges ?? {}).map(([node, names]) => [node, new Set(names)]));
    for (const def of settings.pools ?? []) {
      const pool = typeof def === 'string' ? { poolid: def } : def;
      this.pools.set(pool.poolid, {
        poolid: pool.poolid,
        ...(pool.comment !== undefined ? { comment: pool.comment } : {}),
        vmids: new Set(pool.vmids ?? []),
        storage: new Set(pool.storage ?? []),
      });
    }
  }

  /** The CPUs of `node` (`cpuinfo.cpus`). */
  nodeCpus(node: string): number {
    return this.cpusByNode.get(node) ?? DEFAULT_NODE_CPUS;
  }

  /** Whether `bridge` exists on `node` (`/sys/class/net/<bridge>`); every bridge does on a node the settings do not name. */
  hasBridge(node: string, bridge: string): boolean {
    return this.bridgesByNode.get(node)?.has(bridge) ?? true;
  }

  /** The bridges of `node`, sorted: the configured ones, else `vmbr0` (RHS-7). */
  bridgesOn(node: string): string[] {
    const names = this.bridgesByNode.get(node);
    return names ? [...names].sort() : ['vmbr0'];
  }

  /** Request and write counters (same JSON as `GET /_sim/stats`). */
  stats(): SimStats {
    return this.statsCollector.snapshot();
  }

  resetStats(): void {
    this.statsCollector.reset();
  }

  /** Latency added to every API request from now on. */
  setLatency(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new SimulatorError(`invalid latency ${ms}`);
    this.latencyMs = ms;
  }

  /** Sets the RRD publishing interval of the listing (0: live). */
  setRrdLag(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new SimulatorError('rrd lag must be a non-negative number');
    this.rrdLagMs = ms;
  }

  /** How long tasks started from now on run. */
  setTaskMs(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new SimulatorError(`invalid task duration ${ms}`);
    this.tasks.setTaskMs(ms);
  }

  /** Random failures (500 `got timeout` or a dropped connection) on matching API requests. */
  setFailureRate(rate: number, opts: { methods?: string[]; mode?: FailureSettings['mode'] } = {}): void {
    if (!(rate >= 0 && rate <= 1)) throw new SimulatorError(`failure rate must be within 0..1, got ${rate}`);
    this.failure = {
      rate,
      ...(opts.methods ? { methods: new Set(opts.methods.map((m) => m.toUpperCase())) } : {}),
      mode: opts.mode ?? 'mixed',
    };
  }

  /**
   * Writes `lock: <lock>` into the guest's config (the digest changes) and removes it after
   * `ms` (the digest changes again), like a backup job. Resolves when the lock is gone.
   */
  holdLock(vmid: number, lock: string, ms: number): Promise<void> {
    const guest = this.requireGuest(vmid);
    guest.main.set('lock', lock);
    guest.commit();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.endPlannedLock(vmid, lock);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }

  /**
   * Ends a `lock: <lock>` the guest holds as the job that took it would (a backup, a snapshot:
   * the lock is removed and the digest changes); a guest holding another lock, or none, is left
   * as it is. True when the lock was ended.
   */
  endPlannedLock(vmid: number, lock: string): boolean {
    const guest = this.guests.get(vmid);
    if (guest?.lock !== lock) return false;
    guest.main.delete('lock');
    guest.commit();
    return true;
  }

  /**
   * An immediate edit as if an operator used the GUI (root@pam, no digest): the same code path
   * as `PUT …/config`, so a running guest gets pending values. Throws the API's error if the
   * edit is refused (locked guest, protection, …).
   */
  operatorEdit(vmid: number, params: OperatorEdit): UpdateOutcome {
    const guest = this.requireGuest(vmid);
    const set: Record<string, string> = {};
    for (const [k, v] of Object.entries(params.set ?? {})) set[k] = String(v);
    const update = { set, ...(params.delete?.length ? { delete: params.delete.join(',') } : {}) };
    if (guest.type === 'qemu') {
      const prepared = prepareQemuUpdate(update, {}, vmid);
      if (guest.lock) throw new DieError(`VM is locked (${guest.lock})\n`);
      return applyQemuUpdate(this, guest, prepared);
    }
    const prepared = prepareLxcUpdate(update);
    if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
    checkLxcUpdateLists(prepared, guest);
    return applyLxcUpdate(this, guest, prepared);
  }

  /** Arms an operator edit that lands right after the next config/pending read of the guest. */
  editAfterNextRead(vmid: number, params: OperatorEdit): void {
    this.requireGuest(vmid);
    const list = this.armedEdits.get(vmid) ?? [];
    list.push(params);
    this.armedEdits.set(vmid, list);
  }

  /** Called by the server once a read of the guest has been answered. */
  fireArmedEdit(vmid: number): void {
    const list = this.armedEdits.get(vmid);
    const edit = list?.shift();
    if (list && list.length === 0) this.armedEdits.delete(vmid);
    if (!edit) return;
    try {
      this.operatorEdit(vmid, edit);
    } catch (err) {
      // The operator's edit failing (e.g. the guest is locked) is part of the scenario, not a crash.
      if (!(err instanceof ApiError)) throw err;
    }
  }

  /** Whether an edit is armed for the guest (cheap check on the read path). */
  hasArmedEdit(vmid: number): boolean {
    return this.armedEdits.has(vmid);
  }

  /** A guest's identity, power state and raw config, or undefined. */
  getGuest(vmid: number): SimGuestInfo | undefined {
    const guest = this.guests.get(vmid);
    if (!guest) return undefined;
    return { vmid, type: guest.type, node: guest.node, running: guest.running, rawConfig: guest.raw, digest: guest.digest };
  }

  /** Adds a guest directly (no task). */
  addGuest(def: SimGuestDefinition): SimGuestInfo {
    if (this.guests.has(def.vmid)) throw new SimulatorError(`guest ${def.vmid} already exists`);
    if (!this.nodes.includes(def.node)) throw new SimulatorError(`unknown node '${def.node}'`);
    const raw = typeof def.config === 'string' ? def.config : configObjectToRaw(def.type, def.config);
    const guest = new Guest(def.vmid, def.type, def.node, raw, def.running ?? false);
    if (def.lock !== undefined) {
      guest.main.set('lock', def.lock);
      guest.commit();
    }
    this.volumes.registerFromConfig(def.type, guest.main);
    for (const snapshot of guest.config.snapshots.values()) this.volumes.registerFromConfig(def.type, snapshot.values);
    this.insertGuest(guest);
    return this.getGuest(def.vmid) as SimGuestInfo;
  }

  /** Removes a guest and its volumes directly. */
  removeGuest(vmid: number): void {
    this.requireGuest(vmid);
    this.deleteGuest(vmid);
  }

  /** Starts or stops a guest directly (no task, pending values untouched). */
  setRunning(vmid: number, running: boolean): void {
    this.requireGuest(vmid).setRunning(running);
  }

  /**
   * `pool` on create: an unknown pool is a 403 before anything else is checked (docs/proxmox-api.md#create).
   * Without a pool list every name is accepted, like storages.
   */
  assertPool(pool: string): void {
    if (this.strictPools && !this.pools.has(pool)) throw new PermissionError(`pool '${pool}' does not exist`);
  }

  /** `add_vm_to_pool` at the end of a create task (a lenient cluster creates the pool). */
  addToPool(pool: string, vmid: number): void {
    let entry = this.pools.get(pool);
    if (!entry) {
      if (this.strictPools) return;
      entry = { poolid: pool, vmids: new Set(), storage: new Set() };
      this.pools.set(pool, entry);
    }
    entry.vmids.add(vmid);
    this.guests.get(vmid)?.touch();
  }

  /** The pool a guest belongs to, if any. */
  poolOf(vmid: number): string | undefined {
    for (const pool of this.pools.values()) if (pool.vmids.has(vmid)) return pool.poolid;
    return undefined;
  }

  /** Moves a guest to another node at once, like a finished migration (the config file moves). */
  migrate(vmid: number, node: string): void {
    if (!this.nodes.includes(node)) throw new SimulatorError(`unknown node '${node}'`);
    const guest = this.requireGuest(vmid);
    guest.node = node;
    guest.version++;
    this.sorted = undefined;
  }

  /** A task by UPID. */
  getTask(upid: string): SimTask | undefined {
    return this.tasks.get(upid);
  }

  /** Inserts a guest into the cluster's vmlist. */
  insertGuest(guest: Guest): void {
    this.guests.set(guest.vmid, guest);
    this.sorted = undefined;
  }

  /** Drops a guest from the vmlist and frees its volumes. */
  deleteGuest(vmid: number): void {
    this.guests.delete(vmid);
    // `remove_vm_access`: the VMID also leaves its pool.
    for (const pool of this.pools.values()) pool.vmids.delete(vmid);
    this.armedEdits.delete(vmid);
    this.volumes.freeOwnedBy(vmid);
    this.sorted = undefined;
  }

  /**
   * pve-guest-common `remove_vmid_from_backup_jobs` (a destroy with `purge`): the VMID leaves every
   * job's `vmid` or `exclude` list, and a job whose `vmid` list it empties is deleted.
   */
  removeFromBackupJobs(vmid: number): void {
    for (const [id, job] of [...this.backupJobs]) {
      const key = job.vmid !== undefined ? 'vmid' : job.exclude !== undefined ? 'exclude' : undefined;
      if (key === undefined) continue;
      const rest = (job[key] as string).split(/[\s,;\0]+/).filter((v) => v !== '' && v !== String(vmid));
      if (rest.length > 0) job[key] = rest.join(',');
      else if (key === 'vmid') this.backupJobs.delete(id);
      else delete job.exclude;
    }
  }

  /** Guests in `sort keys %$vmlist` order (VMIDs as strings). */
  sortedGuests(): Guest[] {
    if (!this.sorted) {
      this.sorted = [...this.guests.values()].sort((a, b) => {
        const x = String(a.vmid);
        const y = String(b.vmid);
        return x < y ? -1 : x > y ? 1 : 0;
      });
    }
    return this.sorted;
  }

  /**
   * The guest a path addresses: same type and on that node, else Proxmox's missing-config error
   * (a guest on another node is not found there; pmxcfs paths are per node).
   */
  guestOnNode(type: GuestType, node: string, vmid: number): Guest {
    const guest = this.guests.get(vmid);
    if (!guest || guest.type !== type || guest.node !== node) {
      throw new DieError(`Configuration file 'nodes/${node}/${flavourOf(type).configDir}/${vmid}.conf' does not exist\n`);
    }
    return guest;
  }

  /** Stops timers (shutdown). */
  dispose(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.tasks.dispose();
    this.configLocks.dispose();
  }

  private requireGuest(vmid: number): Guest {
    const guest = this.guests.get(vmid);
    if (!guest) throw new SimulatorError(`no guest ${vmid}`);
    return guest;
  }
}
