/**
 * The typed Proxmox VE API client: one per cluster, on an undici Pool. Reads are retried on
 * transient failures; writes are sent exactly once. Every request is bounded in time and in
 * concurrency, authenticated with an API token that never appears in any error, log or
 * inspection of the client.
 */
import { inspect } from 'node:util';
import type { z } from 'zod';
import { flavourOf, isGuestType } from '../core/guest-flavours.js';
import type { ListedGuest, ObservedGuest } from '../core/model.js';
import type { GuestType } from '../core/guest-flavours.js';
import { PveDigestConflictError, PveError, PveTaskFailedError, type PveErrorInit, type SentContext } from './errors.js';
import {
  ClusterResource,
  GuestConfig,
  GuestStatus,
  NextId,
  NodeGuest,
  PendingEntry,
  PveNode,
  PveVersion,
  TaskListEntry,
  TaskLogLine,
  TaskStatus,
  SnapshotEntry,
  StorageResource,
  Upid,
} from './schema.js';
import { observedFromPending } from './observed-guest.js';
import { pollTask, type WaitOptions } from './task.js';
import { PveTransport, type HttpMethod, type PveLogger, type PveParams, type PveResponseEvent, type SlowRequest } from './transport.js';

/** How to reach and trust one cluster. */
export interface PveClientOptions {
  /** Cluster name, for errors and logs. */
  cluster: string;
  /** `https://host:8006` (without `/api2/json`). */
  url: string;
  /** `USER@REALM!ID=SECRET`; never appears in any log or error text. */
  token: string;
  /** PEM text of a CA to trust instead of the system CAs. */
  ca?: string;
  /** Pinned SHA-256 of the server certificate (`AB:CD:…` or plain hex, any case); wins over `ca`. */
  fingerprint?: string;
  /** Explicit opt-out of TLS verification (the caller logs it). */
  insecure?: boolean;
  /**
   * How long one request may wait for its whole answer (default 30 s). A request that times out
   * is not repeated: the error comes after this long at most (plus the connect timeout).
   */
  timeoutMs?: number;
  /** How long a new connection (TCP and TLS handshake) may take (default 10 s, at most `timeoutMs`). */
  connectTimeoutMs?: number;
  /** Called every `slowRequestMs` (default 5 s) while a request waits for its answer. */
  onSlowRequest?: (event: SlowRequest) => void;
  slowRequestMs?: number;
  /** Requests in flight to this cluster at most (default 8). */
  concurrency?: number;
  /** Extra attempts for reads on transient failures (default 3); writes are never retried. */
  retries?: number;
  /** First retry delay; doubles per attempt with full jitter (default 250 ms). */
  retryDelayMs?: number;
  /** Refuse anything but GET with `PveReadOnlyError`, before any I/O. */
  readOnly?: boolean;
  /**
   * Once the first connection is made, open the others up to `concurrency` at once, for the
   * requests that will follow (`preconnect.ts`): for a command that reads every guest, not one
   * that sends a few requests.
   */
  preconnect?: boolean;
  logger?: PveLogger;
  /** Observer of every attempt's outcome (metrics); must not throw. */
  onResponse?: (event: PveResponseEvent) => void;
}

/** A config write: values to set, keys to delete, and the digest of the read it is based on. */
interface ConfigChange {
  set?: Record<string, string | number | boolean>;
  delete?: readonly string[];
  /** Digest from the read the change was computed from; Proxmox refuses the write if it moved. */
  digest: string;
}

/** Options of `moveDisk`: `delete` removes the source volume after copying. */
interface MoveDiskOptions {
  delete?: boolean;
  digest?: string;
  format?: string;
  bwlimit?: number;
}

/** Options of `destroyGuest`. */
interface DestroyOptions {
  /** Also remove the VMID from backup/replication/HA configuration. */
  purge?: boolean;
  destroyUnreferencedDisks?: boolean;
}

/** A typed client for one Proxmox VE cluster. */
export class PveClient {
  readonly cluster: string;
  readonly url: string;
  readonly readOnly: boolean;
  readonly #http: PveTransport;

  constructor(options: PveClientOptions) {
    this.#http = new PveTransport(options);
    this.cluster = this.#http.cluster;
    this.url = this.#http.url;
    this.readOnly = this.#http.readOnly;
  }

  /** Requests in flight now (for metrics and tests). */
  get inFlight(): number {
    return this.#http.inFlight;
  }

  /**
   * Sends one API request and returns the unwrapped `data`. `path` is below `/api2/json`, with
   * segments already encoded. Parameters go in the query for GET/DELETE and form-encoded in the
   * body otherwise.
   */
  async request<T>(method: HttpMethod, path: string, params?: PveParams): Promise<T> {
    return (await this.#http.send(method, path, params)).data as T;
  }

  /** `GET /version`. */
  async version(): Promise<PveVersion> {
    return this.#get('/version', PveVersion);
  }

  /** `GET /nodes`: every node the API reports, online or not. */
  async nodes(): Promise<PveNode[]> {
    return this.#get('/nodes', PveNode.array());
  }

  /** `GET /cluster/resources?type=vm`, mapped to the core's listing type (qemu and lxc only). */
  async clusterResources(): Promise<ListedGuest[]> {
    const envelope = await this.#http.send('GET', '/cluster/resources', { type: 'vm' });
    // A listing holds every guest of the cluster with some twenty fields each: the fields used are
    // checked here without copying each entry as the schema would; the schema explains what fails.
    const quick = quickListing(envelope.data);
    if (quick) return quick;
    const entries = this.#shape('GET', '/cluster/resources', ClusterResource.array(), envelope.data);
    const listed: ListedGuest[] = [];
    for (const entry of entries) {
      if (!isGuestType(entry.type) || entry.vmid === undefined || entry.node === undefined) continue;
      listed.push(toListed(entry.vmid, entry.type, entry.node, entry));
    }
    return listed;
  }

  /** `GET /cluster/nextid`: the next free VMID, or `vmid` itself if free (else PveAlreadyExistsError). */
  async nextId(vmid?: number): Promise<number> {
    return this.#get('/cluster/nextid', NextId, { vmid });
  }

  /** `GET /nodes/{node}/{type}`: the guests of one node, in the listing shape. */
  async listGuests(node: string, type: GuestType): Promise<ListedGuest[]> {
    const entries = await this.#get(`/nodes/${seg(node)}/${type}`, NodeGuest.array());
    return entries.map((entry) => toListed(Number(entry.vmid), type, node, entry));
  }

  /**
   * `GET …/config`. By default Proxmox merges pending values in; `current: true` returns only
   * what is in effect.
   */
  async getConfig(
    node: string,
    type: GuestType,
    vmid: number,
    options: { current?: boolean } = {},
  ): Promise<Record<string, string | number>> {
    const raw = await this.#get(`${guestPath(node, type, vmid)}/config`, GuestConfig, {
      current: options.current === true ? true : undefined,
    });
    const config: Record<string, string | number> = {};
    for (const [key, value] of Object.entries(raw)) {
      if (typeof value === 'string' || typeof value === 'number') config[key] = value;
    }
    return config;
  }

  /** `GET …/pending`: every key with its current and queued value, and the digest entry. */
  async getPending(node: string, type: GuestType, vmid: number): Promise<PendingEntry[]> {
    const path = `${guestPath(node, type, vmid)}/pending`;
    const envelope = await this.#http.send('GET', path);
    // Every plan and drift read comes here: entries of the right shape are used as parsed, without
    // the schema's copy of each; the schema explains any that are not.
    if (isPendingList(envelope.data)) return envelope.data;
    return this.#shape('GET', path, PendingEntry.array(), envelope.data);
  }

  /**
   * Reads one guest for planning: `…/pending` (current, pending, pending deletes and the digest
   * of exactly that read) and `…/status/current`, in parallel.
   */
  async readGuest(node: string, type: GuestType, vmid: number): Promise<ObservedGuest> {
    const [entries, status] = await Promise.all([
      this.getPending(node, type, vmid),
      this.#get(`${guestPath(node, type, vmid)}/status/current`, GuestStatus),
    ]);
    const observed = observedFromPending(entries, { vmid, type, node }, status.status);
    if (status.ha?.managed === 1 || status.ha?.managed === true) {
      observed.ha = status.ha.state !== undefined ? { state: status.ha.state } : {};
    }
    return observed;
  }

  /**
   * Writes config keys and deletions, guarded by `digest`. QEMU uses the asynchronous POST and
   * waits for its task; LXC has only the synchronous PUT. A change with nothing in it sends nothing.
   */
  async updateConfig(node: string, type: GuestType, vmid: number, change: ConfigChange, wait: WaitOptions = {}): Promise<void> {
    if (!change.digest) throw new TypeError('updateConfig needs the digest of the read the change is based on');
    const set = change.set ?? {};
    const deletes = change.delete ?? [];
    if (Object.keys(set).length === 0 && deletes.length === 0) return;

    const path = `${guestPath(node, type, vmid)}/config`;
    const params: PveParams = { ...set, delete: deletes.length > 0 ? deletes.join(',') : undefined, digest: change.digest };
    const sent = { digest: change.digest };
    try {
      const write = flavourOf(type).configWrite;
      if (write.task) {
        const upid = await this.#write(write.method, path, Upid, params, sent);
        await this.waitForTask(node, upid, wait);
      } else {
        await this.#http.send(write.method, path, params, sent);
      }
    } catch (err) {
      await this.#completeDigestConflict(err, node, type, vmid, change.digest);
      throw err;
    }
  }

  /** `POST /nodes/{node}/{type}` with the given VMID; returns the create task's UPID. */
  async createGuest(node: string, type: GuestType, vmid: number, params: PveParams): Promise<string> {
    return this.#write('POST', `/nodes/${seg(node)}/${type}`, Upid, { ...params, vmid });
  }

  /** `POST …/clone` of `vmid` to `newid`; returns the UPID (whose id is `vmid`, the source). */
  async cloneGuest(node: string, type: GuestType, vmid: number, newid: number, params: PveParams): Promise<string> {
    return this.#write('POST', `${guestPath(node, type, vmid)}/clone`, Upid, { ...params, newid });
  }

  /** `POST …/template`: a VM answers the task's UPID, a container `null` (its task runs all the same). */
  async convertToTemplate(node: string, type: GuestType, vmid: number): Promise<string | null> {
    return this.#write('POST', `${guestPath(node, type, vmid)}/template`, Upid.nullable(), {});
  }

  /** `PUT …/qemu/{vmid}/cloudinit`: the cloud-init drive generated again; answers null. */
  async regenerateCloudinit(node: string, vmid: number): Promise<void> {
    await this.#write('PUT', `${guestPath(node, 'qemu', vmid)}/cloudinit`, Upid.nullable(), {});
  }

  /** `POST …/status/start`; returns the UPID. */
  async start(node: string, type: GuestType, vmid: number, options: PveParams = {}): Promise<string> {
    return this.#write('POST', `${guestPath(node, type, vmid)}/status/start`, Upid, options);
  }

  /** `POST …/status/stop` (hard stop); returns the UPID. */
  async stop(node: string, type: GuestType, vmid: number, options: PveParams = {}): Promise<string> {
    return this.#write('POST', `${guestPath(node, type, vmid)}/status/stop`, Upid, options);
  }

  /** `POST …/status/shutdown` (ACPI / clean shutdown); returns the UPID. */
  async shutdown(node: string, type: GuestType, vmid: number, options: PveParams = {}): Promise<string> {
    return this.#write('POST', `${guestPath(node, type, vmid)}/status/shutdown`, Upid, options);
  }

  /** `PUT …/resize` (`size` like `+10G` or `40G`); a UPID on current PVE, null on older ones. */
  async resizeDisk(node: string, type: GuestType, vmid: number, disk: string, size: string, digest?: string): Promise<string | null> {
    return this.#write('PUT', `${guestPath(node, type, vmid)}/resize`, Upid.nullable(), { disk, size, digest }, { digest });
  }

  /** QEMU `move_disk` / LXC `move_volume` to another storage; returns the UPID. */
  async moveDisk(
    node: string,
    type: GuestType,
    vmid: number,
    disk: string,
    storage: string,
    options: MoveDiskOptions = {},
  ): Promise<string> {
    const { delete: remove, digest, format, bwlimit } = options;
    const move = flavourOf(type).move;
    const params: PveParams = {
      [move.diskParam]: disk,
      storage,
      delete: remove,
      digest,
      ...(move.takesFormat ? { format } : {}),
      bwlimit,
    };
    return this.#write('POST', `${guestPath(node, type, vmid)}/${move.endpoint}`, Upid, params, { digest });
  }

  /** `GET …/{type}/{vmid}/snapshot`: the guest's snapshots, then `current` (docs/proxmox-behaviour.md "Snapshots"). */
  async listSnapshots(node: string, type: GuestType, vmid: number): Promise<z.output<typeof SnapshotEntry>[]> {
    return this.#get(`${guestPath(node, type, vmid)}/snapshot`, SnapshotEntry.array());
  }

  /** `POST …/{type}/{vmid}/snapshot` (`qmsnapshot`, `vzsnapshot`); returns the UPID. */
  async snapshot(node: string, type: GuestType, vmid: number, snapname: string, description?: string): Promise<string> {
    return this.#write('POST', `${guestPath(node, type, vmid)}/snapshot`, Upid, { snapname, description });
  }

  /** `DELETE …/{type}/{vmid}/snapshot/{snapname}` (`qmdelsnapshot`, `vzdelsnapshot`); returns the UPID. */
  async deleteSnapshot(node: string, type: GuestType, vmid: number, snapname: string): Promise<string> {
    return this.#write('DELETE', `${guestPath(node, type, vmid)}/snapshot/${seg(snapname)}`, Upid);
  }

  /** `POST …/{type}/{vmid}/snapshot/{snapname}/rollback` (`qmrollback`, `vzrollback`); returns the UPID. */
  async rollbackSnapshot(node: string, type: GuestType, vmid: number, snapname: string, start?: boolean): Promise<string> {
    return this.#write('POST', `${guestPath(node, type, vmid)}/snapshot/${seg(snapname)}/rollback`, Upid, start ? { start: 1 } : {});
  }

  /**
   * `GET /cluster/resources?type=storage`: each storage's plugin type (`dir`, `lvmthin`, …), by
   * id. One entry per storage and node, of the storages the token holds Datastore.Audit on
   * (docs/proxmox-behaviour.md, CSN-9, RES-4): one a token cannot see is not there.
   */
  async storageTypes(): Promise<Record<string, string>> {
    const entries = await this.#get('/cluster/resources', StorageResource.array(), { type: 'storage' });
    return Object.fromEntries(entries.filter((e) => e.plugintype !== undefined).map((e) => [e.storage, e.plugintype as string]));
  }

  /** `DELETE /nodes/{node}/{type}/{vmid}`; returns the UPID (QEMU checks locks only in the task). */
  async destroyGuest(node: string, type: GuestType, vmid: number, options: DestroyOptions = {}): Promise<string> {
    return this.#write('DELETE', guestPath(node, type, vmid), Upid, {
      purge: options.purge,
      'destroy-unreferenced-disks': options.destroyUnreferencedDisks,
    });
  }

  /**
   * Tasks still running for one guest (`GET /nodes/{node}/tasks?vmid=…&source=active`): a start,
   * a migration or an earlier run's write that has not finished yet. Without Sys.Audit on the
   * node Proxmox lists only the token's own tasks.
   */
  async activeTasks(node: string, vmid: number): Promise<TaskListEntry[]> {
    return this.#get(`/nodes/${seg(node)}/tasks`, TaskListEntry.array(), { vmid, source: 'active' });
  }

  /** `GET /nodes/{node}/tasks/{upid}/status`. */
  async taskStatus(node: string, upid: string): Promise<TaskStatus> {
    return this.#get(`/nodes/${seg(node)}/tasks/${seg(upid)}/status`, TaskStatus);
  }

  /** `GET /nodes/{node}/tasks/{upid}/log`, every line (paged through `total`). */
  async taskLog(node: string, upid: string): Promise<TaskLogLine[]> {
    const path = `/nodes/${seg(node)}/tasks/${seg(upid)}/log`;
    const pageSize = 500;
    const lines: TaskLogLine[] = [];
    for (;;) {
      const envelope = await this.#http.send('GET', path, { start: lines.length, limit: pageSize });
      const page = this.#shape('GET', path, TaskLogLine.array(), envelope.data);
      lines.push(...page);
      const total = envelope.total ?? lines.length;
      if (page.length === 0 || lines.length >= total) return lines;
    }
  }

  /**
   * Polls a task until it stops. `OK` and `WARNINGS: N` resolve with the final status; any other
   * exit status rejects with `PveTaskFailedError`. Aborting `signal` rejects with its reason and
   * leaves the task running.
   */
  async waitForTask(node: string, upid: string, options: WaitOptions = {}): Promise<TaskStatus> {
    const path = `/nodes/${seg(node)}/tasks/${seg(upid)}/status`;
    return pollTask(() => this.taskStatus(node, upid), upid, options, this.#init('GET', path, 0));
  }

  /** Closes the connection pool once in-flight requests finish; later requests are refused. Idempotent. */
  close(): Promise<void> {
    return this.#http.close();
  }

  /** Never the token: this is what `console.log(client)` and loggers show. */
  [inspect.custom](): string {
    return `PveClient { cluster: '${this.cluster}', url: '${this.url}', readOnly: ${this.readOnly} }`;
  }

  toJSON(): Record<string, unknown> {
    return { cluster: this.cluster, url: this.url, readOnly: this.readOnly };
  }

  async #get<S extends z.ZodType>(path: string, schema: S, params?: PveParams): Promise<z.output<S>> {
    const envelope = await this.#http.send('GET', path, params);
    return this.#shape('GET', path, schema, envelope.data);
  }

  async #write<S extends z.ZodType>(
    method: Exclude<HttpMethod, 'GET'>,
    path: string,
    schema: S,
    params?: PveParams,
    sent?: SentContext,
  ): Promise<z.output<S>> {
    const envelope = await this.#http.send(method, path, params, sent);
    return this.#shape(method, path, schema, envelope.data);
  }

  #shape<S extends z.ZodType>(method: string, path: string, schema: S, data: unknown): z.output<S> {
    const parsed = schema.safeParse(data);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new PveError(`unexpected response shape${where}: ${issue?.message ?? 'invalid'}`, this.#init(method, path, 200));
  }

  /** Fills in what the cluster holds now, so the conflict report can show both digests. */
  async #completeDigestConflict(err: unknown, node: string, type: GuestType, vmid: number, digest: string): Promise<void> {
    const conflict =
      err instanceof PveDigestConflictError
        ? err
        : err instanceof PveTaskFailedError && err.cause instanceof PveDigestConflictError
          ? err.cause
          : undefined;
    if (!conflict) return;
    conflict.expectedDigest ??= digest;
    try {
      const config = await this.getConfig(node, type, vmid, { current: true });
      if (typeof config.digest === 'string') conflict.actualDigest = config.digest;
    } catch {
      // Best effort: the conflict itself is the news; the caller re-reads anyway.
    }
  }

  #init(method: string, path: string, status: number): PveErrorInit {
    return this.#http.init(method, path, status);
  }
}

function seg(value: string | number): string {
  return encodeURIComponent(String(value));
}

function guestPath(node: string, type: GuestType, vmid: number): string {
  return `/nodes/${seg(node)}/${type}/${seg(vmid)}`;
}

const isOptional = (value: unknown, type: 'string' | 'number'): boolean => value === undefined || typeof value === type;
const isOptionalScalar = (value: unknown): boolean => value === undefined || typeof value === 'string' || Number.isFinite(value);

/** Whether `data` is a `…/pending` answer of exactly the shape `PendingEntry` requires. */
function isPendingList(data: unknown): data is PendingEntry[] {
  if (!Array.isArray(data)) return false;
  for (const entry of data as unknown[]) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return false;
    const { key, value, pending, delete: remove } = entry as Record<string, unknown>;
    if (typeof key !== 'string' || !isOptionalScalar(value) || !isOptionalScalar(pending)) return false;
    if (remove !== undefined && !Number.isFinite(remove)) return false;
  }
  return true;
}

/**
 * The guests of a `/cluster/resources` answer whose entries all have the shape `ClusterResource`
 * requires, read without a copy of each entry; undefined when any entry might not (the schema then
 * says why, or reads it).
 */
function quickListing(data: unknown): ListedGuest[] | undefined {
  if (!Array.isArray(data)) return undefined;
  const listed: ListedGuest[] = [];
  for (const entry of data as unknown[]) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined;
    const { type, vmid, node, name, status, tags, lock, template } = entry as Record<string, unknown>;
    if (typeof type !== 'string' || !isOptional(vmid, 'number') || !isOptional(node, 'string')) return undefined;
    if (!isOptional(name, 'string') || !isOptional(status, 'string') || !isOptional(tags, 'string') || !isOptional(lock, 'string')) {
      return undefined;
    }
    if (template !== undefined && typeof template !== 'string' && typeof template !== 'number') return undefined;
    if (typeof vmid === 'number' && !Number.isFinite(vmid)) return undefined;
    if (!isGuestType(type) || vmid === undefined || node === undefined) continue;
    listed.push(toListed(vmid as number, type, node as string, entry as Parameters<typeof toListed>[3]));
  }
  return listed;
}

function toListed(
  vmid: number,
  type: GuestType,
  node: string,
  entry: { name?: string; status?: string; tags?: string; lock?: string; template?: string | number; hastate?: string },
): ListedGuest {
  const listed: ListedGuest = { vmid, type, node };
  if (entry.hastate !== undefined) listed.hastate = entry.hastate;
  if (entry.name !== undefined) listed.name = entry.name;
  if (entry.status !== undefined) listed.status = entry.status;
  if (entry.tags !== undefined) listed.tags = entry.tags;
  if (entry.lock !== undefined) listed.lock = entry.lock;
  if (entry.template !== undefined) listed.template = Number(entry.template) === 1;
  return listed;
}
