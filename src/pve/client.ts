/**
 * The typed Proxmox VE API client: one per cluster, on an undici Pool. Reads are retried on
 * transient failures; writes are sent exactly once. Every request is bounded in time and in
 * concurrency, authenticated with an API token that never appears in any error, log or
 * inspection of the client.
 */
import { inspect } from 'node:util';
import { Pool } from 'undici';
import type { z } from 'zod';
import type { GuestType, ListedGuest, ObservedGuest } from '../core/model.js';
import {
  PveDigestConflictError,
  PveError,
  PveReadOnlyError,
  PveTaskFailedError,
  PveTlsError,
  PveTransportError,
  parsePveError,
  type PveErrorInit,
  type SentContext,
} from './errors.js';
import { Semaphore } from './limit.js';
import { createRedactor, type Redactor } from './redact.js';
import {
  ClusterResource,
  Envelope,
  GuestConfig,
  GuestStatus,
  NextId,
  NodeGuest,
  PendingEntry,
  PveNode,
  PveVersion,
  TaskLogLine,
  TaskStatus,
  Upid,
} from './schema.js';
import { pollTask, sleep, type WaitOptions } from './task.js';
import { createConnector, TLS_VERIFY_CODES, TlsPinMismatch } from './tls.js';

export type { PveNode, PveVersion, PendingEntry, TaskLogLine, TaskStatus } from './schema.js';
export type { WaitOptions } from './task.js';

/** The subset of a pino logger the client uses. */
export interface PveLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

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
  /** Per request, from first byte to last (default 30 s). */
  timeoutMs?: number;
  /** Requests in flight to this cluster at most (default 8). */
  concurrency?: number;
  /** Extra attempts for reads on transient failures (default 3); writes are never retried. */
  retries?: number;
  /** First retry delay; doubles per attempt with full jitter (default 250 ms). */
  retryDelayMs?: number;
  /** Refuse anything but GET with `PveReadOnlyError`, before any I/O. */
  readOnly?: boolean;
  logger?: PveLogger;
}

/** Request parameters: booleans go out as Proxmox's `1`/`0`, arrays comma-joined, undefined dropped. */
export type PveParams = Record<string, string | number | boolean | readonly string[] | undefined>;

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A config write: values to set, keys to delete, and the digest of the read it is based on. */
export interface ConfigChange {
  set?: Record<string, string | number | boolean>;
  delete?: readonly string[];
  /** Digest from the read the change was computed from; Proxmox refuses the write if it moved. */
  digest: string;
}

/** Options of `moveDisk`: `delete` removes the source volume after copying. */
export interface MoveDiskOptions {
  delete?: boolean;
  digest?: string;
  format?: string;
  bwlimit?: number;
}

/** Options of `destroyGuest`. */
export interface DestroyOptions {
  /** Also remove the VMID from backup/replication/HA configuration. */
  purge?: boolean;
  destroyUnreferencedDisks?: boolean;
}

// Gateway failures (and pveproxy's 595/596 when it cannot reach another node) say nothing about
// the request itself. A 500 is Proxmox answering (a lock, a missing guest) and is not retried,
// except the bare `got timeout` of `run_with_timeout` (pvedaemon or QMP too slow): no state
// behind it, so repeating a read is the fix. `can't lock file … - got timeout` is a lock instead.
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([502, 503, 504, 595, 596]);
const TRANSIENT_500_MESSAGE = 'got timeout';

// Failures before the request could have been written: safe to report as "not sent".
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const NO_LOGGER: PveLogger = { debug() {}, warn() {} };
const RETRY_CAP_MS = 5000;

/** Marks the abort our own timer caused, as opposed to any other cancellation. */
class RequestTimeout extends Error {
  override name = 'RequestTimeout';
}

/** A typed client for one Proxmox VE cluster. */
export class PveClient {
  readonly cluster: string;
  readonly url: string;
  readonly readOnly: boolean;
  readonly #token: string;
  readonly #redact: Redactor;
  readonly #pool: Pool;
  readonly #limit: Semaphore;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #retryDelayMs: number;
  readonly #log: PveLogger;
  #closing: Promise<void> | undefined;

  constructor(options: PveClientOptions) {
    const origin = new URL(options.url);
    if (origin.protocol !== 'https:' && origin.protocol !== 'http:') {
      throw new TypeError(`cluster ${options.cluster}: url must be http(s), got ${origin.protocol}`);
    }
    if (origin.protocol === 'http:' && (options.fingerprint !== undefined || options.ca !== undefined)) {
      // A pin or CA on plain HTTP would be silently meaningless while the token travels in clear.
      throw new TypeError(`cluster ${options.cluster}: ca/fingerprint given for a plain http url`);
    }
    if (!options.token.includes('=')) {
      throw new TypeError(`cluster ${options.cluster}: token must look like USER@REALM!ID=SECRET`);
    }
    this.cluster = options.cluster;
    this.url = origin.origin;
    this.readOnly = options.readOnly ?? false;
    this.#token = options.token;
    this.#redact = createRedactor(options.token);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#retries = options.retries ?? 3;
    this.#retryDelayMs = options.retryDelayMs ?? 250;
    this.#log = options.logger ?? NO_LOGGER;
    const concurrency = options.concurrency ?? 8;
    this.#limit = new Semaphore(concurrency);
    this.#pool = new Pool(origin.origin, {
      connections: concurrency,
      pipelining: 1,
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs,
      connect: createConnector(
        { ca: options.ca, fingerprint: options.fingerprint, insecure: options.insecure },
        this.#timeoutMs,
      ),
    });
  }

  /** Requests in flight now (for metrics and tests). */
  get inFlight(): number {
    return this.#limit.active;
  }

  /**
   * Sends one API request and returns the unwrapped `data`. `path` is below `/api2/json`, with
   * segments already encoded. Parameters go in the query for GET/DELETE and form-encoded in the
   * body otherwise.
   */
  async request<T>(method: HttpMethod, path: string, params?: PveParams): Promise<T> {
    return (await this.#send(method, path, params)).data as T;
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
    const entries = await this.#get('/cluster/resources', ClusterResource.array(), { type: 'vm' });
    const listed: ListedGuest[] = [];
    for (const entry of entries) {
      if ((entry.type !== 'qemu' && entry.type !== 'lxc') || entry.vmid === undefined || entry.node === undefined) {
        continue;
      }
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
    return this.#get(`${guestPath(node, type, vmid)}/pending`, PendingEntry.array());
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
    const guest: ObservedGuest = {
      vmid,
      type,
      node,
      status: status.status,
      digest: '',
      current: {},
      pending: {},
      pendingDelete: [],
    };
    for (const entry of entries) {
      if (entry.key === 'digest') {
        guest.digest = String(entry.value ?? '');
        continue;
      }
      if (entry.value !== undefined) guest.current[entry.key] = String(entry.value);
      if (entry.pending !== undefined) guest.pending[entry.key] = String(entry.pending);
      if (entry.delete !== undefined && entry.delete !== 0) guest.pendingDelete.push(entry.key);
    }
    return guest;
  }

  /**
   * Writes config keys and deletions, guarded by `digest`. QEMU uses the asynchronous POST and
   * waits for its task; LXC has only the synchronous PUT. A change with nothing in it sends nothing.
   */
  async updateConfig(
    node: string,
    type: GuestType,
    vmid: number,
    change: ConfigChange,
    wait: WaitOptions = {},
  ): Promise<void> {
    if (!change.digest) throw new TypeError('updateConfig needs the digest of the read the change is based on');
    const set = change.set ?? {};
    const deletes = change.delete ?? [];
    if (Object.keys(set).length === 0 && deletes.length === 0) return;

    const path = `${guestPath(node, type, vmid)}/config`;
    const params: PveParams = { ...set, delete: deletes.length > 0 ? deletes.join(',') : undefined, digest: change.digest };
    const sent = { digest: change.digest };
    try {
      if (type === 'qemu') {
        const upid = await this.#write('POST', path, Upid, params, sent);
        await this.waitForTask(node, upid, wait);
      } else {
        await this.#send('PUT', path, params, sent);
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
  async resizeDisk(
    node: string,
    type: GuestType,
    vmid: number,
    disk: string,
    size: string,
    digest?: string,
  ): Promise<string | null> {
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
    const params: PveParams =
      type === 'qemu'
        ? { disk, storage, delete: remove, digest, format, bwlimit }
        : { volume: disk, storage, delete: remove, digest, bwlimit };
    const endpoint = type === 'qemu' ? 'move_disk' : 'move_volume';
    return this.#write('POST', `${guestPath(node, type, vmid)}/${endpoint}`, Upid, params, { digest });
  }

  /** `DELETE /nodes/{node}/{type}/{vmid}`; returns the UPID (QEMU checks locks only in the task). */
  async destroyGuest(node: string, type: GuestType, vmid: number, options: DestroyOptions = {}): Promise<string> {
    return this.#write('DELETE', guestPath(node, type, vmid), Upid, {
      purge: options.purge,
      'destroy-unreferenced-disks': options.destroyUnreferencedDisks,
    });
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
      const envelope = await this.#send('GET', path, { start: lines.length, limit: pageSize });
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

  /** Closes the connection pool once in-flight requests finish. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#pool.close().catch((err: unknown) => {
      this.#log.warn({ cluster: this.cluster, err: this.#redact(String(err)) }, 'closing proxmox client failed');
    });
    return this.#closing;
  }

  /** Never the token: this is what `console.log(client)` and loggers show. */
  [inspect.custom](): string {
    return `PveClient { cluster: '${this.cluster}', url: '${this.url}', readOnly: ${this.readOnly} }`;
  }

  toJSON(): Record<string, unknown> {
    return { cluster: this.cluster, url: this.url, readOnly: this.readOnly };
  }

  async #get<S extends z.ZodType>(path: string, schema: S, params?: PveParams): Promise<z.output<S>> {
    const envelope = await this.#send('GET', path, params);
    return this.#shape('GET', path, schema, envelope.data);
  }

  async #write<S extends z.ZodType>(
    method: Exclude<HttpMethod, 'GET'>,
    path: string,
    schema: S,
    params?: PveParams,
    sent?: SentContext,
  ): Promise<z.output<S>> {
    const envelope = await this.#send(method, path, params, sent);
    return this.#shape(method, path, schema, envelope.data);
  }

  #shape<S extends z.ZodType>(method: string, path: string, schema: S, data: unknown): z.output<S> {
    const parsed = schema.safeParse(data);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new PveError(`unexpected response shape${where}: ${issue?.message ?? 'invalid'}`, this.#init(method, path, 200));
  }

  /** One logical request: read-only gate, then attempts (several for GET), each holding a slot. */
  async #send(method: HttpMethod, path: string, params: PveParams = {}, sent: SentContext = {}): Promise<Envelope> {
    if (method !== 'GET' && this.readOnly) {
      throw new PveReadOnlyError(`read-only client for cluster ${this.cluster} refuses ${method} ${path}`, this.#init(method, path, 0));
    }
    if (this.#closing) {
      throw new PveTransportError(`client for cluster ${this.cluster} is closed`, { ...this.#init(method, path, 0), retryable: false });
    }
    const encoded = encodeParams(params);
    const attempts = method === 'GET' ? this.#retries + 1 : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#limit.run(() => this.#attempt(method, path, encoded, sent));
      } catch (err) {
        if (attempt >= attempts || !isRetryable(err)) throw err;
        const delay = Math.random() * Math.min(RETRY_CAP_MS, this.#retryDelayMs * 2 ** (attempt - 1));
        this.#log.warn(
          { cluster: this.cluster, method, path, attempt, delayMs: Math.round(delay), err: (err as Error).message },
          'proxmox read failed, retrying',
        );
        await sleep(delay);
      }
    }
  }

  async #attempt(method: HttpMethod, path: string, encoded: string, sent: SentContext): Promise<Envelope> {
    const inQuery = method === 'GET' || method === 'DELETE';
    const headers: Record<string, string> = {
      authorization: `PVEAPIToken=${this.#token}`,
      accept: 'application/json',
    };
    if (!inQuery) headers['content-type'] = 'application/x-www-form-urlencoded';
    const fullPath = `/api2/json${path}${inQuery && encoded ? `?${encoded}` : ''}`;

    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new RequestTimeout()), this.#timeoutMs);
    const started = Date.now();
    try {
      const response = await this.#pool.request({
        method,
        path: fullPath,
        headers,
        body: inQuery ? undefined : encoded,
        signal: controller.signal,
      });
      const text = await response.body.text();
      this.#log.debug(
        { cluster: this.cluster, method, path, status: response.statusCode, ms: Date.now() - started },
        'proxmox request',
      );
      if (response.statusCode >= 200 && response.statusCode < 300) return this.#parseEnvelope(method, path, response.statusCode, text);
      const error = parsePveError(
        response.statusCode,
        method,
        path,
        this.#redact(response.statusText ?? ''),
        this.#redact(text),
        sent,
      );
      error.cluster = this.cluster;
      throw error;
    } catch (err) {
      if (err instanceof PveError) throw err;
      throw this.#transportError(err, method, path, controller.signal.reason instanceof RequestTimeout);
    } finally {
      clearTimeout(timer);
    }
  }

  #parseEnvelope(method: string, path: string, status: number, text: string): Envelope {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new PveError(`response is not JSON (HTTP ${status}, ${text.length} bytes)`, this.#init(method, path, status));
    }
    const parsed = Envelope.safeParse(body);
    if (!parsed.success) throw new PveError('response has no data envelope', this.#init(method, path, status));
    return parsed.data;
  }

  #transportError(err: unknown, method: HttpMethod, path: string, timedOut: boolean): PveError {
    const init = this.#init(method, path, 0);
    if (err instanceof TlsPinMismatch) {
      return new PveTlsError(this.#redact(err.message), { ...init, expected: err.expected, presented: err.presented });
    }
    const code = errorCode(err);
    const detail = this.#redact(err instanceof Error ? err.message : String(err));
    if (code !== undefined && TLS_VERIFY_CODES.has(code)) {
      return new PveTlsError(`TLS verification of ${this.url} failed: ${detail} (${code})`, init);
    }
    const isRead = method === 'GET';
    const what = timedOut ? `timed out after ${this.#timeoutMs} ms` : `failed: ${detail}${code ? ` (${code})` : ''}`;
    if (code !== undefined && NOT_SENT_CODES.has(code)) {
      return new PveTransportError(`${method} ${path} ${what}; the request was not sent`, { ...init, retryable: true, code, cause: err });
    }
    if (isRead) {
      return new PveTransportError(`${method} ${path} ${what}`, {
        ...init,
        retryable: true,
        code: timedOut ? 'TIMEOUT' : code,
        cause: err,
      });
    }
    return new PveTransportError(`${method} ${path} ${what}; the write may or may not have happened`, {
      ...init,
      retryable: false,
      code: timedOut ? 'TIMEOUT' : code,
      cause: err,
    });
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
    return { status, method, path, cluster: this.cluster };
  }
}

/** Reads (only reads reach here) are retried on transport failures and gateway statuses, never on Proxmox's answers. */
function isRetryable(err: unknown): boolean {
  if (err instanceof PveTransportError) return err.retryable;
  if (err instanceof PveTlsError || !(err instanceof PveError)) return false;
  if (err.status === 500) return err.constructor === PveError && err.message === TRANSIENT_500_MESSAGE;
  return TRANSIENT_STATUSES.has(err.status);
}

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const cause = (err as { cause?: unknown }).cause;
  return cause === undefined || cause === err ? undefined : errorCode(cause);
}

function encodeParams(params: PveParams): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (typeof value === 'boolean') search.append(key, value ? '1' : '0');
    else if (typeof value === 'string' || typeof value === 'number') search.append(key, String(value));
    else search.append(key, value.join(','));
  }
  return search.toString();
}

function seg(value: string | number): string {
  return encodeURIComponent(String(value));
}

function guestPath(node: string, type: GuestType, vmid: number): string {
  return `/nodes/${seg(node)}/${type}/${seg(vmid)}`;
}

function toListed(
  vmid: number,
  type: GuestType,
  node: string,
  entry: { name?: string; status?: string; tags?: string; lock?: string; template?: string | number },
): ListedGuest {
  const listed: ListedGuest = { vmid, type, node };
  if (entry.name !== undefined) listed.name = entry.name;
  if (entry.status !== undefined) listed.status = entry.status;
  if (entry.tags !== undefined) listed.tags = entry.tags;
  if (entry.lock !== undefined) listed.lock = entry.lock;
  if (entry.template !== undefined) listed.template = Number(entry.template) === 1;
  return listed;
}
