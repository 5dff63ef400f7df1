/**
 * The HTTP layer under `PveClient`: one undici Pool per cluster, the token header, a per-request
 * deadline, bounded concurrency, retries for reads only, and the mapping of every failure to a
 * typed, redacted `PveError`.
 */
import { EventEmitter } from 'node:events';
import { Pool, poolRequest } from './undici-parts.js';
import {
  PveError,
  PveReadOnlyError,
  PveTlsError,
  PveTransportError,
  parsePveError,
  type PveErrorInit,
  type SentContext,
} from './errors.js';
import { Semaphore } from '../util/semaphore.js';
import { createRedactor, type Redactor } from './redact.js';
import { Envelope } from './schema.js';
import { sleep } from '../util/sleep.js';
import { createConnector, TLS_VERIFY_CODES, TlsPinMismatch, type TlsPolicy } from './tls.js';
import { type PreconnectingConnector, preconnecting } from './preconnect.js';
import { errorMessage } from '../util/error-message.js';

/** The subset of a pino logger the client uses. */
export interface PveLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** Request parameters: booleans go out as Proxmox's `1`/`0`, arrays comma-joined, undefined dropped. */
export type PveParams = Record<string, string | number | boolean | readonly string[] | undefined>;

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A request that has waited `elapsedMs` for its answer, reported for a person watching. */
export interface SlowRequest {
  cluster: string;
  method: HttpMethod;
  path: string;
  elapsedMs: number;
  /** When the request gives up. */
  timeoutMs: number;
}

/**
 * One answered (or failed) attempt, for an observer such as a metrics counter: `status` is the
 * HTTP status, 0 when no answer came (refused, reset, timed out). No token, no parameters.
 */
export interface PveResponseEvent {
  cluster: string;
  method: HttpMethod;
  path: string;
  status: number;
  ms: number;
}

/** Default time for the TCP connection and TLS handshake of one connection. */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Default time one request may wait for its whole answer. */
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_SLOW_REQUEST_MS = 5_000;

/** Settings of a transport; see `PveClientOptions` for their meaning and defaults. */
interface TransportOptions extends TlsPolicy {
  cluster: string;
  url: string;
  token: string;
  timeoutMs?: number;
  connectTimeoutMs?: number;
  slowRequestMs?: number;
  onSlowRequest?: (event: SlowRequest) => void;
  concurrency?: number;
  retries?: number;
  retryDelayMs?: number;
  readOnly?: boolean;
  preconnect?: boolean;
  logger?: PveLogger;
  /** Called once per attempt when it ends, answered or not. */
  onResponse?: (event: PveResponseEvent) => void;
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

/**
 * The deadline of one attempt, as the signal undici aborts the request by: undici takes an
 * EventEmitter with `aborted` and `reason` as well as an AbortSignal, and an AbortController (an
 * EventTarget) per request cost about a tenth of a drift's time in its transport.
 */
class Deadline extends EventEmitter {
  aborted = false;
  reason: unknown;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/** Sends API requests to one cluster. */
export class PveTransport {
  readonly cluster: string;
  /** Origin only (`https://host:8006`). */
  readonly url: string;
  readonly readOnly: boolean;
  readonly #token: string;
  readonly #redact: Redactor;
  readonly #pool: Pool;
  readonly #limit: Semaphore;
  readonly #timeoutMs: number;
  readonly #slowRequestMs: number;
  readonly #onSlowRequest: ((event: SlowRequest) => void) | undefined;
  readonly #retries: number;
  readonly #retryDelayMs: number;
  readonly #log: PveLogger;
  readonly #onResponse: ((event: PveResponseEvent) => void) | undefined;
  readonly #ahead: PreconnectingConnector | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: TransportOptions) {
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
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#slowRequestMs = options.slowRequestMs ?? DEFAULT_SLOW_REQUEST_MS;
    this.#onSlowRequest = options.onSlowRequest;
    const connectTimeoutMs = options.connectTimeoutMs ?? Math.min(DEFAULT_CONNECT_TIMEOUT_MS, this.#timeoutMs);
    this.#retries = options.retries ?? 3;
    this.#retryDelayMs = options.retryDelayMs ?? 250;
    this.#log = options.logger ?? NO_LOGGER;
    this.#onResponse = options.onResponse;
    const concurrency = options.concurrency ?? 8;
    this.#limit = new Semaphore(concurrency);
    const connector = createConnector({ ca: options.ca, fingerprint: options.fingerprint, insecure: options.insecure }, connectTimeoutMs);
    this.#ahead = options.preconnect === true && concurrency > 1 ? preconnecting(connector, concurrency - 1) : undefined;
    this.#pool = new Pool(origin.origin, {
      connections: concurrency,
      pipelining: 1,
      // Each attempt's own deadline (timeoutMs for the whole answer) is stricter than undici's
      // timeouts for the headers and between body chunks, and starts earlier: they would only
      // add two timers per request.
      headersTimeout: 0,
      bodyTimeout: 0,
      connect: this.#ahead?.connect ?? connector,
    });
  }

  /** Requests holding a concurrency slot now. */
  get inFlight(): number {
    return this.#limit.active;
  }

  /**
   * One logical request: the read-only gate, then attempts (several for GET, one for writes),
   * each holding a concurrency slot. Resolves with the `{data, total?}` envelope.
   */
  async send(method: HttpMethod, path: string, params: PveParams = {}, sent: SentContext = {}): Promise<Envelope> {
    if (method !== 'GET' && this.readOnly) {
      throw new PveReadOnlyError(`read-only client for cluster ${this.cluster} refuses ${method} ${path}`, this.init(method, path, 0));
    }
    if (this.#closing) {
      throw new PveTransportError(`client for cluster ${this.cluster} is closed`, { ...this.init(method, path, 0), retryable: false });
    }
    if (!path.startsWith('/')) throw new TypeError(`API path must start with '/': ${path}`);
    const encoded = encodeParams(params);
    const attempts = method === 'GET' ? this.#retries + 1 : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#limit.run(() => this.#attempt(method, path, encoded, sent));
      } catch (err) {
        if (attempt >= attempts || !isRetryableRead(err)) throw err;
        const delay = Math.random() * Math.min(RETRY_CAP_MS, this.#retryDelayMs * 2 ** (attempt - 1));
        this.#log.warn(
          { cluster: this.cluster, method, path, attempt, delayMs: Math.round(delay), err: (err as Error).message },
          'proxmox read failed, retrying',
        );
        await sleep(delay);
      }
    }
  }

  /** Error context for this cluster. */
  init(method: string, path: string, status: number): PveErrorInit {
    return { status, method, path, cluster: this.cluster };
  }

  /** Closes the pool once in-flight requests finish; later sends are refused. Idempotent. */
  close(): Promise<void> {
    this.#ahead?.close();
    this.#closing ??= this.#pool.close().catch((err: unknown) => {
      this.#log.warn({ cluster: this.cluster, err: this.#redact(String(err)) }, 'closing proxmox client failed');
    });
    return this.#closing;
  }

  async #attempt(method: HttpMethod, path: string, encoded: string, sent: SentContext): Promise<Envelope> {
    const inQuery = method === 'GET' || method === 'DELETE';
    const headers: Record<string, string> = {
      authorization: `PVEAPIToken=${this.#token}`,
      accept: 'application/json',
    };
    if (!inQuery) headers['content-type'] = 'application/x-www-form-urlencoded';
    const fullPath = `/api2/json${path}${inQuery && encoded ? `?${encoded}` : ''}`;

    const deadline = new Deadline();
    const timer = setTimeout(() => deadline.abort(new RequestTimeout()), this.#timeoutMs);
    const started = Date.now();
    const slow = this.#watchSlow(method, path, started);
    let status = 0;
    try {
      const response = await poolRequest(this.#pool, {
        method,
        path: fullPath,
        headers,
        body: inQuery ? undefined : encoded,
        signal: deadline,
      });
      const text = await response.body.text();
      status = response.statusCode;
      if (this.#log !== NO_LOGGER)
        this.#log.debug({ cluster: this.cluster, method, path, status, ms: Date.now() - started }, 'proxmox request');
      if (status >= 200 && status < 300) return this.#parseEnvelope(method, path, status, text);
      const error = parsePveError(status, method, path, this.#redact(response.statusText ?? ''), this.#redact(text), sent);
      error.cluster = this.cluster;
      throw error;
    } catch (err) {
      if (err instanceof PveError) throw err;
      throw this.#transportError(err, method, path, deadline.reason instanceof RequestTimeout);
    } finally {
      clearTimeout(timer);
      if (slow) clearInterval(slow);
      this.#onResponse?.({ cluster: this.cluster, method, path, status, ms: Date.now() - started });
    }
  }

  /** Reports a request still unanswered every `slowRequestMs`, so a hung cluster is visible. */
  #watchSlow(method: HttpMethod, path: string, started: number): NodeJS.Timeout | undefined {
    const report = this.#onSlowRequest;
    if (!report || this.#slowRequestMs >= this.#timeoutMs) return undefined;
    const timer = setInterval(() => {
      report({ cluster: this.cluster, method, path, elapsedMs: Date.now() - started, timeoutMs: this.#timeoutMs });
    }, this.#slowRequestMs);
    timer.unref();
    return timer;
  }

  #parseEnvelope(method: string, path: string, status: number, text: string): Envelope {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new PveError(`response is not JSON (HTTP ${status}, ${text.length} bytes)`, this.init(method, path, status));
    }
    // Every answer comes here: one of the envelope's shape is used as parsed, without the schema's copy.
    if (isEnvelope(body)) return body;
    const parsed = Envelope.safeParse(body);
    if (!parsed.success) throw new PveError('response has no data envelope', this.init(method, path, status));
    return parsed.data;
  }

  #transportError(err: unknown, method: HttpMethod, path: string, timedOut: boolean): PveError {
    const init = this.init(method, path, 0);
    if (err instanceof TlsPinMismatch) {
      return new PveTlsError(this.#redact(err.message), { ...init, expected: err.expected, presented: err.presented });
    }
    const code = errorCode(err);
    const detail = this.#redact(errorMessage(err));
    if (code !== undefined && TLS_VERIFY_CODES.has(code)) {
      return new PveTlsError(`TLS verification of ${this.url} failed: ${detail} (${code})`, init);
    }
    const what = timedOut ? `timed out after ${this.#timeoutMs} ms` : `failed: ${detail}${code ? ` (${code})` : ''}`;
    if (code !== undefined && NOT_SENT_CODES.has(code)) {
      return new PveTransportError(`${method} ${path} ${what}; the request was not sent`, { ...init, retryable: true, code, cause: err });
    }
    const failure = { ...init, code: timedOut ? 'TIMEOUT' : code, cause: err };
    if (method === 'GET') return new PveTransportError(`${method} ${path} ${what}`, { ...failure, retryable: true });
    // The request may have reached Proxmox and acted; only a re-read can tell.
    return new PveTransportError(`${method} ${path} ${what}; the write may or may not have happened`, { ...failure, retryable: false });
  }
}

// A cluster that did not answer (or connect) within its timeout is not asked again at once: a
// second attempt would double the wait of a person watching, for a server that is hung or
// overloaded. Quick failures (refused, reset, a gateway error) are retried.
const TIMEOUT_CODES: ReadonlySet<string> = new Set(['TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/** Whether a failed read is worth repeating: quick transport failures and gateway statuses, never Proxmox's answers. */
function isRetryableRead(err: unknown): boolean {
  if (err instanceof PveTransportError) return err.retryable && !TIMEOUT_CODES.has(err.code ?? '');
  if (err instanceof PveTlsError || !(err instanceof PveError)) return false;
  if (err.status === 500) return err.constructor === PveError && err.message === TRANSIENT_500_MESSAGE;
  return TRANSIENT_STATUSES.has(err.status);
}

/** An answer `Envelope` accepts as it is: an object with `data`, and a numeric `total` if any. */
function isEnvelope(body: unknown): body is Envelope {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('data' in body)) return false;
  const total = (body as { total?: unknown }).total;
  return total === undefined || (typeof total === 'number' && Number.isFinite(total));
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
