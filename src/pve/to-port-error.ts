/**
 * The Proxmox client's errors in the port's vocabulary (`core/port-errors.ts`), shared by the guest
 * adapter and every kind's adapter under `kinds/`.
 */
import {
  AlreadyInPowerStateError,
  DigestConflictError,
  GuestNotFoundError,
  LockedError,
  PermissionDeniedError,
  PortError,
  TaskFailedError,
  UnavailableError,
  VmidTakenError,
} from '../core/port-errors.js';
import {
  PveAlreadyExistsError,
  PveAuthError,
  PveDigestConflictError,
  PveError,
  PveLockedError,
  PveNotFoundError,
  PvePermissionError,
  PvePowerStateError,
  PveTaskFailedError,
  PveTransportError,
} from './errors.js';

// Statuses that say nothing about the request itself: a gateway, or pveproxy unable to reach the
// node that owns the guest (595/596).
const UNAVAILABLE_STATUSES: ReadonlySet<number> = new Set([502, 503, 504, 595, 596]);

/**
 * Translates a client error into the port's vocabulary (`core/port-errors.ts`). Errors that are
 * not a {@link PveError} (a programming error) pass through unchanged.
 */
export function toPortError(err: unknown): unknown {
  if (!(err instanceof PveError)) return err;
  const init = { cluster: err.cluster, cause: err };
  if (err instanceof PveTaskFailedError) {
    const reason = err.cause === undefined ? undefined : toPortError(err.cause);
    return new TaskFailedError(err.upid, err.exitstatus, {
      cluster: err.cluster,
      cause: reason instanceof PortError ? reason : undefined,
    });
  }
  if (err instanceof PveNotFoundError) return new GuestNotFoundError(err.message, init);
  if (err instanceof PveDigestConflictError) {
    return new DigestConflictError(err.message, { ...init, expectedDigest: err.expectedDigest, actualDigest: err.actualDigest });
  }
  if (err instanceof PveLockedError) return new LockedError(err.message, { ...init, lock: err.lock });
  if (err instanceof PveAlreadyExistsError) return new VmidTakenError(err.message, { ...init, vmid: err.vmid, node: err.node });
  if (err instanceof PvePowerStateError) {
    return new AlreadyInPowerStateError(err.message, { ...init, state: err.running ? 'running' : 'stopped' });
  }
  if (err instanceof PveAuthError || err instanceof PvePermissionError) return new PermissionDeniedError(err.message, init);
  if (err instanceof PveTransportError) {
    return new UnavailableError(err.message, { ...init, writeUncertain: err.method !== 'GET' && !err.retryable });
  }
  if (UNAVAILABLE_STATUSES.has(err.status)) return new UnavailableError(err.message, init);
  return new PortError(err.message, init);
}

/** Runs one request of an adapter, its error (if any) in the port's vocabulary. */
export async function portCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw toPortError(err);
  }
}
