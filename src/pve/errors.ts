/**
 * Typed errors of the Proxmox client. Proxmox reports most business failures as HTTP 500 with a
 * plain text (`VM is locked (backup)`), so the class is chosen from the status *and* the text;
 * callers branch on `instanceof` instead of matching strings themselves.
 *
 * `status` is the HTTP status of the response that carried the error, or 0 when none did
 * (transport failures, read-only refusals, a task's exit status).
 */
import { STATUS_CODES } from 'node:http';
import { GUEST_FLAVOURS } from '../core/guest-flavours.js';
import type { GuestType } from '../core/guest-flavours.js';

/** Where an error happened: the request, and optionally the cluster and an underlying cause. */
export interface PveErrorInit {
  status: number;
  method: string;
  /** API path below `/api2/json`, without the query string. */
  path: string;
  cluster?: string;
  cause?: unknown;
}

/** Base of every error the client throws. The message is Proxmox's text without trailing newline. */
export class PveError extends Error {
  override name = 'PveError';
  readonly status: number;
  readonly method: string;
  readonly path: string;
  cluster: string | undefined;

  constructor(message: string, init: PveErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.method = init.method;
    this.path = stripQuery(init.path);
    this.cluster = init.cluster;
  }

  /** Own data only: `JSON.stringify(err)` must never pull in a request or socket via `cause`. */
  toJSON(): Record<string, unknown> {
    const { stack: _stack, cause: _cause, ...fields } = Object.fromEntries(Object.entries(this));
    return { ...fields, name: this.name, message: this.message };
  }
}

/** 401: the token was refused (wrong secret, unknown token, expired). */
export class PveAuthError extends PveError {
  override name = 'PveAuthError';
}

/** 403: authenticated, but the token lacks the privilege (`Permission check failed (/vms/100, …)`). */
export class PvePermissionError extends PveError {
  override name = 'PvePermissionError';
}

/** 400 `Parameter verification failed.`: `errors` maps each rejected parameter to its message. */
export class PveParameterError extends PveError {
  override name = 'PveParameterError';
  readonly errors: Record<string, string>;

  constructor(message: string, errors: Record<string, string>, init: PveErrorInit) {
    super(message, init);
    this.errors = errors;
  }
}

/** The config changed since it was read: the write carried a digest that no longer matches. */
export class PveDigestConflictError extends PveError {
  override name = 'PveDigestConflictError';
  /** The digest the write carried (what was read). */
  expectedDigest: string | undefined;
  /** The digest on the cluster now, when the client could read it. */
  actualDigest: string | undefined;

  constructor(message: string, init: PveErrorInit & { expectedDigest?: string; actualDigest?: string }) {
    super(message, init);
    this.expectedDigest = init.expectedDigest;
    this.actualDigest = init.actualDigest;
  }
}

/** The guest holds a lock (`VM is locked (backup)`) or its config lock file timed out. */
export class PveLockedError extends PveError {
  override name = 'PveLockedError';
  /** The config `lock` value (`backup`, `create`, …); undefined for a lock-file timeout. */
  readonly lock: string | undefined;
  readonly guestType: GuestType | undefined;
  /** For `can't lock file '…' - got timeout`: the lock file. */
  readonly lockFile: string | undefined;

  constructor(message: string, init: PveErrorInit & { lock?: string; guestType?: GuestType; lockFile?: string }) {
    super(message, init);
    this.lock = init.lock;
    this.guestType = init.guestType;
    this.lockFile = init.lockFile;
  }
}

/** A create (or `nextid?vmid=`) hit a VMID that is taken somewhere in the cluster. */
export class PveAlreadyExistsError extends PveError {
  override name = 'PveAlreadyExistsError';
  readonly vmid: number;
  /** Node of the existing guest, when Proxmox said (`nextid` does not). */
  readonly node: string | undefined;

  constructor(message: string, init: PveErrorInit & { vmid: number; node?: string }) {
    super(message, init);
    this.vmid = init.vmid;
    this.node = init.node;
  }
}

/** The guest's config file or the task does not exist (Proxmox answers 500/400, never 404). */
export class PveNotFoundError extends PveError {
  override name = 'PveNotFoundError';
}

/** `… - protection mode enabled`: the guest's `protection` flag blocks the operation. */
export class PveProtectedError extends PveError {
  override name = 'PveProtectedError';
}

/** Destroy refused because the guest is running (`VM 100 is running - destroy failed`). */
export class PveRunningError extends PveError {
  override name = 'PveRunningError';
}

/**
 * A power change refused because the guest is already in that state: `VM 100 already running`
 * (qemu-server `PVE/QemuServer.pm` `vm_start_nolock`), `CT 100 already running` / `CT 100 not
 * running` (pve-container `PVE/API2/LXC/Status.pm` `vm_start`, `vm_stop`, `vm_shutdown`).
 */
export class PvePowerStateError extends PveError {
  override name = 'PvePowerStateError';
  /** The state the guest is in: true for `already running`, false for `not running`. */
  readonly running: boolean;

  constructor(message: string, init: PveErrorInit & { running: boolean }) {
    super(message, init);
    this.running = init.running;
  }
}

/** 501: the method/path does not exist on this server (or a body was sent with GET/DELETE). */
export class PveNotImplementedError extends PveError {
  override name = 'PveNotImplementedError';
}

/**
 * A task ended with an error exit status. When that text is one the client recognises (a lock, an
 * existing VMID, a digest mismatch, …) `cause` is the matching typed error.
 */
export class PveTaskFailedError extends PveError {
  override name = 'PveTaskFailedError';
  readonly upid: string;
  readonly exitstatus: string;
  declare readonly cause: PveError | undefined;

  constructor(upid: string, exitstatus: string, init: PveErrorInit & { cause?: PveError }) {
    super(exitstatus, { ...init, status: 0 });
    this.upid = upid;
    this.exitstatus = exitstatus;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), cause: this.cause?.toJSON() };
  }
}

/** `waitForTask` gave up waiting; the task itself keeps running on the cluster. */
export class PveTaskTimeoutError extends PveError {
  override name = 'PveTaskTimeoutError';
  readonly upid: string;

  constructor(upid: string, timeoutMs: number, init: PveErrorInit) {
    super(`task ${upid} still running after ${timeoutMs} ms (not stopped; it continues on the cluster)`, {
      ...init,
      status: 0,
    });
    this.upid = upid;
  }
}

/**
 * No usable HTTP response: connection refused/reset, timeout, a gateway error after retries.
 * `retryable` is false when a write may have reached Proxmox, so repeating it is not safe blindly.
 */
export class PveTransportError extends PveError {
  override name = 'PveTransportError';
  readonly retryable: boolean;
  /** The underlying error code (`ECONNRESET`, `UND_ERR_CONNECT_TIMEOUT`, `TIMEOUT`, …). */
  readonly code: string | undefined;

  constructor(message: string, init: PveErrorInit & { retryable: boolean; code?: string }) {
    super(message, init);
    this.retryable = init.retryable;
    this.code = init.code;
  }
}

/** A write was attempted on a client built with `readOnly: true`; nothing was sent. */
export class PveReadOnlyError extends PveError {
  override name = 'PveReadOnlyError';
}

/** The server's certificate was refused: pinned fingerprint mismatch or failed verification. */
export class PveTlsError extends PveError {
  override name = 'PveTlsError';
  /** Pinned fingerprint (`AB:CD:…`), for a mismatch. */
  readonly expected: string | undefined;
  /** Fingerprint of the certificate the server presented. */
  readonly presented: string | undefined;

  constructor(message: string, init: PveErrorInit & { expected?: string; presented?: string }) {
    super(message, init);
    this.expected = init.expected;
    this.presented = init.presented;
  }
}

/** What the client sent, for errors that report it back (the digest of a conflicting write). */
export interface SentContext {
  digest?: string;
}

/**
 * Turns an error response into the right class. `body` is the parsed JSON or the raw text.
 * The text comes from JSON `message` and falls back to the reason phrase: servers before
 * libpve-http-server-perl 5.2 put it only in the status line (docs/proxmox-api.md#error-bodies).
 */
export function parsePveError(
  status: number,
  method: string,
  path: string,
  reasonPhrase: string | undefined,
  body: unknown,
  sent: SentContext = {},
): PveError {
  const envelope = asEnvelope(body);
  const message = cleanText(envelope.message) || cleanText(reasonPhrase) || STATUS_CODES[status] || `HTTP ${status}`;
  const init: PveErrorInit = { status, method, path };

  if (status === 401) return new PveAuthError(message, init);
  if (status === 403) return new PvePermissionError(message, init);
  if (status === 501) return new PveNotImplementedError(message, init);
  if (status === 400 && envelope.errors) return fromParameterErrors(message, envelope.errors, init);
  return classifyMessage(message, init, sent) ?? new PveError(message, init);
}

/**
 * Recognises Proxmox's business error texts (from a 500 body or a task exit status).
 * Returns undefined for texts with no dedicated class.
 */
export function classifyMessage(message: string, init: PveErrorInit, sent: SentContext = {}): PveError | undefined {
  if (DIGEST_RE.test(message)) return new PveDigestConflictError(message, { ...init, expectedDigest: sent.digest });

  const locked = LOCKED_RE.exec(message);
  if (locked) {
    const guestType = Object.values(GUEST_FLAVOURS).find((flavour) => flavour.proxmoxLabel === locked[1])?.type;
    return new PveLockedError(message, { ...init, guestType, lock: locked[2] });
  }
  const lockFile = LOCK_FILE_RE.exec(message);
  if (lockFile) return new PveLockedError(message, { ...init, lockFile: lockFile[1] });

  const exists = EXISTS_RE.exec(message);
  if (exists) return new PveAlreadyExistsError(message, { ...init, vmid: Number(exists[1]), node: exists[2] });
  const cloneExists = CLONE_EXISTS_RE.exec(message);
  if (cloneExists) return new PveAlreadyExistsError(message, { ...init, vmid: Number(cloneExists[1]) });

  if (NOT_FOUND_RE.test(message)) return new PveNotFoundError(message, init);
  if (PROTECTED_RE.test(message)) return new PveProtectedError(message, init);
  if (RUNNING_RE.test(message)) return new PveRunningError(message, init);
  if (ALREADY_RUNNING_RE.test(message)) return new PvePowerStateError(message, { ...init, running: true });
  if (NOT_RUNNING_RE.test(message)) return new PvePowerStateError(message, { ...init, running: false });
  return undefined;
}

// qemu config update / lxc config update, move_disk, move_volume (PVE::Tools::assert_if_modified).
const DIGEST_RE =
  /checksum mismatch \(file change by other user\?\)|detected modified configuration - file changed by other user\? Try again\./;
// AbstractConfig::check_lock: "VM is locked (backup)" / "CT is locked (create)".
const LOCKED_RE = /\b(VM|CT) is locked \(([^)]+)\)/;
// PVE::Tools::lock_file_full timeout.
const LOCK_FILE_RE = /can't lock file '([^']+)' - got timeout/;
// Cluster::check_vmid_unused (create) and nextid's "VM 100 already exists"; the first match is the
// existing guest because the "unable to create VM 100 -" prefix has no "already exists".
const EXISTS_RE = /\b(?:VM|CT) (\d+) already exists(?: on node '([^']*)')?/;
// qemu-server clone_vm: the new VMID's config file is there already (docs/proxmox-behaviour.md, QCL-16).
const CLONE_EXISTS_RE = /^unable to create VM (\d+): config file already exists$/;
const NOT_FOUND_RE = /Configuration file '[^']*' does not exist|\bno such task\b/;
const PROTECTED_RE = /protection mode enabled/;
// qemu destroy_vm / lxc destroy early checks.
const RUNNING_RE = /\bVM \d+ is running - destroy failed|\bunable to destroy CT \d+ - container is running/;

// Power changes to the state the guest is already in; the whole text, so "not running locally on
// node …" (a migration parameter error) is not taken for one.
const ALREADY_RUNNING_RE = /^(?:VM|CT) \d+ already running$/;
const NOT_RUNNING_RE = /^(?:VM|CT) \d+ not running$/;

function fromParameterErrors(message: string, raw: Record<string, unknown>, init: PveErrorInit): PveError {
  const errors: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) errors[key] = cleanText(String(value));

  // `GET /cluster/nextid?vmid=N` reports a taken VMID as a parameter error.
  const vmidText = errors.vmid;
  const exists = vmidText === undefined ? null : EXISTS_RE.exec(vmidText);
  if (exists && Object.keys(errors).length === 1) {
    return new PveAlreadyExistsError(vmidText ?? message, { ...init, vmid: Number(exists[1]), node: exists[2] });
  }
  // Task status of an unknown UPID is `{"upid":"no such task"}`.
  if (errors.upid === 'no such task' && Object.keys(errors).length === 1) {
    return new PveNotFoundError('no such task', init);
  }
  const details = Object.entries(errors)
    .map(([key, value]) => `${key}: ${value}`)
    .join('; ');
  return new PveParameterError(details ? `${message} (${details})` : message, errors, init);
}

function asEnvelope(body: unknown): { message?: unknown; errors?: Record<string, unknown> } {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      return {};
    }
  }
  if (typeof value !== 'object' || value === null) return {};
  const record = value as Record<string, unknown>;
  const errors = record.errors;
  return {
    message: record.message,
    errors: typeof errors === 'object' && errors !== null && !Array.isArray(errors) ? (errors as Record<string, unknown>) : undefined,
  };
}

/** Proxmox texts end in `\n` (Perl `die "…\n"`); callers compare without it. */
function cleanText(value: unknown): string {
  return typeof value === 'string' ? value.replace(/\s+$/, '') : '';
}

function stripQuery(path: string): string {
  const q = path.indexOf('?');
  return q < 0 ? path : path.slice(0, q);
}
