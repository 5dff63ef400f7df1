/**
 * The guest kind's adapter: the core's cluster reader and writer ports (`core/ports.ts`) over the
 * Proxmox client, with its errors in the port's vocabulary. Other kinds' adapters are in `kinds/`,
 * reached through `kindPort`.
 */
import type { ListedGuest, ObservedGuest } from '../core/model.js';
import { AlreadyInPowerStateError, PortError, TaskFailedError } from '../core/port-errors.js';
import type { ClusterWriter, GuestRef, ShutdownOptions, SnapshotInfo, WriteContext, WriteResult } from '../core/ports.js';
import type { PveClient } from './client.js';
import type { WaitOptions } from './task.js';
import { PveAlreadyExistsError } from './errors.js';
import { observedFromPending } from './observed-guest.js';
import { toPortError } from './to-port-error.js';
import { kindAdapter } from './kinds/adapters.js';
import type { ClusterFacts } from '../core/rehearse/copy.js';
import type { FactsOptions } from '../core/rehearse/kinds-copy.js';
import { readClusterFacts } from './rehearse/read-facts.js';

/** A power error only means "already there" for the call that asked for that state. */
function powerError(err: unknown, wanted: 'running' | 'stopped'): unknown {
  const mapped = toPortError(err);
  const already =
    mapped instanceof AlreadyInPowerStateError
      ? mapped
      : mapped instanceof TaskFailedError && mapped.cause instanceof AlreadyInPowerStateError
        ? mapped.cause
        : undefined;
  if (already && already.state !== wanted) return new PortError(already.message, { cluster: already.cluster, cause: err });
  return mapped;
}

/** Options of {@link PveClusterAdapter}. */
interface ClusterAdapterOptions {
  /** How tasks are polled (see `WaitOptions`). */
  wait?: WaitOptions;
  /** Called every `slowTaskMs` while a task is still running, for a person watching. */
  onSlowTask?: (event: { cluster: string; upid: string; elapsedMs: number }) => void;
  /** Default 10 s. */
  slowTaskMs?: number;
}

/**
 * The core's reader/writer ports over a {@link PveClient}. Every write waits for its task, so a
 * returned promise means Proxmox has finished; every failure is one of the port's errors.
 */
export class PveClusterAdapter implements ClusterWriter {
  readonly cluster: string;
  readonly #client: PveClient;
  readonly #options: ClusterAdapterOptions;

  readonly #kindPorts = new Map<string, unknown>();

  constructor(client: PveClient, options: ClusterAdapterOptions = {}) {
    this.#client = client;
    this.cluster = client.cluster;
    this.#options = options;
  }

  /** The adapter of another kind (`kinds/adapters.ts`), over the same client. */
  kindPort(kind: string): unknown {
    if (!this.#kindPorts.has(kind)) this.#kindPorts.set(kind, kindAdapter(kind, this.#client));
    return this.#kindPorts.get(kind);
  }

  /** The rehearsal's cluster facts (`rehearse/read-facts.ts`). */
  readFacts(nodes: readonly string[], options: FactsOptions = {}): Promise<ClusterFacts> {
    return mapped(() => readClusterFacts(this.#client, nodes, options));
  }

  listGuests(): Promise<ListedGuest[]> {
    return mapped(() => this.#client.clusterResources());
  }

  storageTypes(): Promise<Record<string, string>> {
    return mapped(() => this.#client.storageTypes());
  }

  listNodes(): Promise<string[]> {
    return mapped(async () => (await this.#client.nodes()).map((n) => n.node));
  }

  readGuest(listed: ListedGuest, options: { liveStatus?: boolean } = {}): Promise<ObservedGuest> {
    const status = listed.status;
    if (!options.liveStatus && (status === 'running' || status === 'stopped')) {
      return mapped(async () => observedFromPending(await this.#client.getPending(listed.node, listed.type, listed.vmid), listed, status));
    }
    // The listing's power state comes from pvestatd's 10-second cycle: `unknown` right after a
    // create, absent, or a QMP state like `paused`. Ask the node itself.
    return this.readGuestForApply(listed);
  }

  /** `GET /cluster/nextid?vmid=N` answers 400 "VM N already exists" for any VMID in the cluster's list. */
  async vmidExists(vmid: number): Promise<boolean> {
    try {
      await this.#client.nextId(vmid);
      return false;
    } catch (err) {
      if (err instanceof PveAlreadyExistsError) return true;
      throw toPortError(err);
    }
  }

  readGuestForApply(ref: GuestRef): Promise<ObservedGuest> {
    return mapped(() => this.#client.readGuest(ref.node, ref.type, ref.vmid));
  }

  activeTasks(ref: GuestRef): Promise<string[]> {
    return mapped(async () => (await this.#client.activeTasks(ref.node, ref.vmid)).map((t) => t.upid));
  }

  create(ref: GuestRef, params: Record<string, string>, context: WriteContext = {}): Promise<WriteResult> {
    return mapped(async () => this.#task(ref.node, await this.#client.createGuest(ref.node, ref.type, ref.vmid, params), context));
  }

  updateConfig(
    ref: GuestRef,
    set: Record<string, string>,
    remove: string[],
    digest: string,
    context: WriteContext = {},
  ): Promise<WriteResult> {
    return mapped(async () => {
      await this.#client.updateConfig(ref.node, ref.type, ref.vmid, { set, delete: remove, digest }, this.#waitOptions(context));
      return {};
    });
  }

  resize(ref: GuestRef, disk: string, size: string, digest: string, context: WriteContext = {}): Promise<WriteResult> {
    return mapped(async () =>
      this.#task(ref.node, await this.#client.resizeDisk(ref.node, ref.type, ref.vmid, disk, size, digest), context),
    );
  }

  moveDisk(ref: GuestRef, disk: string, storage: string, digest: string, context: WriteContext = {}): Promise<WriteResult> {
    return mapped(async () =>
      this.#task(ref.node, await this.#client.moveDisk(ref.node, ref.type, ref.vmid, disk, storage, { digest }), context),
    );
  }

  async start(ref: GuestRef, context: WriteContext = {}): Promise<WriteResult> {
    try {
      return await this.#task(ref.node, await this.#client.start(ref.node, ref.type, ref.vmid), context);
    } catch (err) {
      throw powerError(err, 'running');
    }
  }

  async shutdown(ref: GuestRef, context: WriteContext = {}, options: ShutdownOptions = {}): Promise<WriteResult> {
    const params = {
      ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      ...(options.forceStop ? { forceStop: 1 } : {}),
    };
    try {
      return await this.#task(ref.node, await this.#client.shutdown(ref.node, ref.type, ref.vmid, params), context);
    } catch (err) {
      throw powerError(err, 'stopped');
    }
  }

  async stop(ref: GuestRef, context: WriteContext = {}): Promise<WriteResult> {
    try {
      return await this.#task(ref.node, await this.#client.stop(ref.node, ref.type, ref.vmid), context);
    } catch (err) {
      throw powerError(err, 'stopped');
    }
  }

  listSnapshots(ref: GuestRef): Promise<SnapshotInfo[]> {
    return mapped(async () =>
      (await this.#client.listSnapshots(ref.node, ref.type, ref.vmid))
        .filter((s) => s.name !== 'current')
        .map((s) => ({
          name: s.name,
          ...(s.snaptime !== undefined ? { snaptime: s.snaptime } : {}),
          ...(s.description !== undefined ? { description: s.description } : {}),
        })),
    );
  }

  snapshot(ref: GuestRef, name: string, description: string, context: WriteContext = {}): Promise<WriteResult> {
    return mapped(async () => this.#task(ref.node, await this.#client.snapshot(ref.node, ref.type, ref.vmid, name, description), context));
  }

  deleteSnapshot(ref: GuestRef, name: string, context: WriteContext = {}): Promise<WriteResult> {
    return mapped(async () => this.#task(ref.node, await this.#client.deleteSnapshot(ref.node, ref.type, ref.vmid, name), context));
  }

  rollbackSnapshot(ref: GuestRef, name: string, context: WriteContext = {}, options: { start?: boolean } = {}): Promise<WriteResult> {
    return mapped(async () =>
      this.#task(ref.node, await this.#client.rollbackSnapshot(ref.node, ref.type, ref.vmid, name, options.start), context),
    );
  }

  destroy(ref: GuestRef, context: WriteContext = {}): Promise<WriteResult> {
    return mapped(async () =>
      this.#task(ref.node, await this.#client.destroyGuest(ref.node, ref.type, ref.vmid, { purge: true }), context),
    );
  }

  clone(source: GuestRef, newid: number, params: Record<string, string>, context: WriteContext = {}): Promise<WriteResult> {
    return mapped(async () =>
      this.#task(source.node, await this.#client.cloneGuest(source.node, source.type, source.vmid, newid, params), context),
    );
  }

  /** The source's running clone tasks, each asked by its log's first line which VMID it makes (docs/proxmox-behaviour.md, QCL-8). */
  activeCloneTo(source: GuestRef, newid: number): Promise<string | undefined> {
    return mapped(async () => {
      const type = source.type === 'qemu' ? 'qmclone' : 'vzclone';
      const running = (await this.#client.activeTasks(source.node, source.vmid)).filter((t) => t.type === type);
      for (const task of running) {
        const log = await this.#client.taskLog(source.node, task.upid);
        if (log.some((line) => new RegExp(`with ID ${newid}$`).test(line.t))) return task.upid;
      }
      return undefined;
    });
  }

  convertToTemplate(ref: GuestRef, context: WriteContext = {}): Promise<WriteResult> {
    return mapped(async () => {
      const upid = await this.#client.convertToTemplate(ref.node, ref.type, ref.vmid);
      if (upid) return this.#task(ref.node, upid, context);
      // A container answers null: its `vztemplate` task is found among the guest's tasks.
      const [task] = (await this.#client.activeTasks(ref.node, ref.vmid)).filter((t) => t.type === 'vztemplate');
      return this.#task(ref.node, task?.upid ?? null, context);
    });
  }

  regenerateCloudinit(ref: GuestRef): Promise<WriteResult> {
    return mapped(async () => {
      await this.#client.regenerateCloudinit(ref.node, ref.vmid);
      return {};
    });
  }

  async #task(node: string, upid: string | null, context: WriteContext): Promise<WriteResult> {
    if (!upid) return {};
    const status = await this.#client.waitForTask(node, upid, this.#waitOptions(context));
    return status.exitstatus ? { upid, exitStatus: status.exitstatus } : { upid };
  }

  /** The wait options of one call: its signal, and a heartbeat for a person watching a long task. */
  #waitOptions(context: WriteContext): WaitOptions {
    const { wait = {}, onSlowTask, slowTaskMs = 10_000 } = this.#options;
    const options: WaitOptions = { ...wait };
    if (context.signal) options.signal = context.signal;
    if (!onSlowTask) return options;
    const started = Date.now();
    let next = slowTaskMs;
    options.onProgress = (status) => {
      wait.onProgress?.(status);
      const elapsedMs = Date.now() - started;
      if (status.status === 'running' && elapsedMs >= next) {
        next = elapsedMs + slowTaskMs;
        onSlowTask({ cluster: this.cluster, upid: status.upid, elapsedMs });
      }
    };
    return options;
  }
}

async function mapped<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toPortError(err);
  }
}
