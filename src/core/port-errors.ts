/**
 * The failures a cluster port reports, in the core's own words. Adapters (the Proxmox client,
 * the in-memory cluster of the tests) translate what their backend says into these classes, so
 * the engine branches on `instanceof` and never on a backend's error classes or message texts.
 * The message stays the backend's own text (what a person reads); the original error, when
 * there is one, is the `cause` (except for {@link TaskFailedError}, whose cause is the typed
 * reason the task failed).
 */

/** Where a port failure happened. */
interface PortErrorInit {
  /** The cluster the port talks to. */
  cluster?: string;
  /** The backend's own error, for logs. */
  cause?: unknown;
}

/** Base of every port failure; a plain one is a failure with no class of its own (a parameter refused, …). */
export class PortError extends Error {
  override name = 'PortError';
  readonly cluster: string | undefined;

  constructor(message: string, init: PortErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.cluster = init.cluster;
  }
}

/** The guest (or the task asked about) does not exist where it was looked for. */
export class GuestNotFoundError extends PortError {
  override name = 'GuestNotFoundError';
}

/** The config changed since the read whose digest a write carried; nothing was written. */
export class DigestConflictError extends PortError {
  override name = 'DigestConflictError';
  /** The digest the write carried. */
  readonly expectedDigest: string | undefined;
  /** The digest on the cluster now, when known. */
  readonly actualDigest: string | undefined;

  constructor(message: string, init: PortErrorInit & { expectedDigest?: string; actualDigest?: string } = {}) {
    super(message, init);
    this.expectedDigest = init.expectedDigest;
    this.actualDigest = init.actualDigest;
  }
}

/** The guest holds a lock (a backup, a migration) or its config could not be locked in time. */
export class LockedError extends PortError {
  override name = 'LockedError';
  /** The lock (`backup`, `migrate`, …); undefined when only the config file's lock timed out. */
  readonly lock: string | undefined;

  constructor(message: string, init: PortErrorInit & { lock?: string } = {}) {
    super(message, init);
    this.lock = init.lock;
  }
}

/** A create found its VMID already in use somewhere in the cluster. */
export class VmidTakenError extends PortError {
  override name = 'VmidTakenError';
  readonly vmid: number;
  /** Node of the guest holding it, when the cluster said. */
  readonly node: string | undefined;

  constructor(message: string, init: PortErrorInit & { vmid: number; node?: string }) {
    super(message, init);
    this.vmid = init.vmid;
    this.node = init.node;
  }
}

/** A start of a running guest, or a stop or shutdown of a stopped one: the state is already there. */
export class AlreadyInPowerStateError extends PortError {
  override name = 'AlreadyInPowerStateError';
  readonly state: 'running' | 'stopped';

  constructor(message: string, init: PortErrorInit & { state: 'running' | 'stopped' }) {
    super(message, init);
    this.state = init.state;
  }
}

/**
 * A task ended with an error. `cause` is the typed reason when the exit status is one the
 * adapter recognises (a lock, a taken VMID, a digest conflict, …).
 */
export class TaskFailedError extends PortError {
  override name = 'TaskFailedError';
  readonly upid: string;
  readonly exitStatus: string;
  declare readonly cause: PortError | undefined;

  constructor(upid: string, exitStatus: string, init: Omit<PortErrorInit, 'cause'> & { cause?: PortError } = {}) {
    super(exitStatus, init);
    this.upid = upid;
    this.exitStatus = exitStatus;
  }
}

/**
 * The cluster could not be reached or did not answer (refused, reset, timed out, a gateway
 * error). Says nothing about the guest: trying again later is safe, because every write starts
 * from a fresh read. `writeUncertain` is true when a write was sent and may have happened.
 */
export class UnavailableError extends PortError {
  override name = 'UnavailableError';
  readonly writeUncertain: boolean;

  constructor(message: string, init: PortErrorInit & { writeUncertain?: boolean } = {}) {
    super(message, init);
    this.writeUncertain = init.writeUncertain ?? false;
  }
}

/** The credential was refused, or lacks a privilege the call needs. */
export class PermissionDeniedError extends PortError {
  override name = 'PermissionDeniedError';
}

/** `err` as an instance of `type`, also when it arrives as the typed reason of a failed task. */
export function portFailure<T extends PortError>(err: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  if (err instanceof type) return err;
  if (err instanceof TaskFailedError && err.cause instanceof type) return err.cause;
  return undefined;
}
