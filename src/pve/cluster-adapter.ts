import type { ListedGuest, ObservedGuest } from '../core/model.js';
import type { ClusterWriter, GuestRef, WriteResult } from '../core/ports.js';
import type { PveClient, WaitOptions } from './client.js';
import { PveAlreadyExistsError } from './errors.js';
import { observedFromPending } from './observed-guest.js';

/**
 * The core's reader/writer ports over a {@link PveClient}. Every write waits for its task, so a
 * returned promise means Proxmox has finished.
 */
export class PveClusterAdapter implements ClusterWriter {
  readonly cluster: string;
  readonly #client: PveClient;
  readonly #wait: WaitOptions;

  constructor(client: PveClient, options: { wait?: WaitOptions } = {}) {
    this.#client = client;
    this.cluster = client.cluster;
    this.#wait = options.wait ?? {};
  }

  listGuests(): Promise<ListedGuest[]> {
    return this.#client.clusterResources();
  }

  async listNodes(): Promise<string[]> {
    return (await this.#client.nodes()).map((n) => n.node);
  }

  async readGuest(listed: ListedGuest, options: { liveStatus?: boolean } = {}): Promise<ObservedGuest> {
    const status = listed.status;
    if (!options.liveStatus && (status === 'running' || status === 'stopped')) {
      const entries = await this.#client.getPending(listed.node, listed.type, listed.vmid);
      return observedFromPending(entries, listed, status);
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
      throw err;
    }
  }

  readGuestForApply(ref: GuestRef): Promise<ObservedGuest> {
    return this.#client.readGuest(ref.node, ref.type, ref.vmid);
  }

  async activeTasks(ref: GuestRef): Promise<string[]> {
    return (await this.#client.activeTasks(ref.node, ref.vmid)).map((t) => t.upid);
  }

  async #task(node: string, upid: string | null): Promise<WriteResult> {
    if (!upid) return {};
    await this.#client.waitForTask(node, upid, this.#wait);
    return { upid };
  }

  async create(ref: GuestRef, params: Record<string, string>): Promise<WriteResult> {
    return this.#task(ref.node, await this.#client.createGuest(ref.node, ref.type, ref.vmid, params));
  }

  async updateConfig(ref: GuestRef, set: Record<string, string>, remove: string[], digest: string): Promise<WriteResult> {
    await this.#client.updateConfig(ref.node, ref.type, ref.vmid, { set, delete: remove, digest }, this.#wait);
    return {};
  }

  async resize(ref: GuestRef, disk: string, size: string, digest: string): Promise<WriteResult> {
    return this.#task(ref.node, await this.#client.resizeDisk(ref.node, ref.type, ref.vmid, disk, size, digest));
  }

  async moveDisk(ref: GuestRef, disk: string, storage: string, digest: string): Promise<WriteResult> {
    return this.#task(ref.node, await this.#client.moveDisk(ref.node, ref.type, ref.vmid, disk, storage, { digest }));
  }

  async start(ref: GuestRef): Promise<WriteResult> {
    return this.#task(ref.node, await this.#client.start(ref.node, ref.type, ref.vmid));
  }

  async shutdown(ref: GuestRef): Promise<WriteResult> {
    return this.#task(ref.node, await this.#client.shutdown(ref.node, ref.type, ref.vmid));
  }

  async stop(ref: GuestRef): Promise<WriteResult> {
    return this.#task(ref.node, await this.#client.stop(ref.node, ref.type, ref.vmid));
  }

  async destroy(ref: GuestRef): Promise<WriteResult> {
    const upid = await this.#client.destroyGuest(ref.node, ref.type, ref.vmid, { purge: true });
    return this.#task(ref.node, upid);
  }
}
