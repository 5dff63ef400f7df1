/**
 * The error classes a simulated handler throws; the server turns each into the HTTP response
 * pve-http-server would send (docs/proxmox-api.md#error-bodies). Messages keep Proxmox's trailing `\n`.
 */

/** Base: an HTTP status plus the message text that goes into `message` and the reason phrase. */
export class ApiError extends Error {
  override readonly name: string = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** `raise_param_exc`: 400 `Parameter verification failed.` with per-parameter `errors`. */
export class ParamError extends ApiError {
  override readonly name = 'ParamError';
  constructor(readonly errors: Record<string, string>) {
    super(400, 'Parameter verification failed.\n');
  }
}

/** `raise_perm_exc`: 403 `Permission check failed (<what>)`. */
export class PermissionError extends ApiError {
  override readonly name = 'PermissionError';
  constructor(what?: string) {
    super(403, what === undefined ? 'Permission check failed\n' : `Permission check failed (${what})\n`);
  }
}

/** A plain `die "text\n"` in a handler: 500 with the text as message. */
export class DieError extends ApiError {
  override readonly name = 'DieError';
  constructor(message: string) {
    super(500, message.endsWith('\n') ? message : `${message}\n`);
  }
}

/** 501 for a path or method the API does not have (no trailing newline, like Proxmox). */
export class NotImplementedError extends ApiError {
  override readonly name = 'NotImplementedError';
  constructor(method: string, path: string) {
    super(501, `Method '${method} ${path}' not implemented`);
  }
}

/** Thrown by the simulator's own injection API (unknown guest and the like), never over /api2. */
export class SimulatorError extends Error {
  override readonly name = 'SimulatorError';
}
