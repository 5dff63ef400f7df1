/**
 * What a route module is made of: one API method (its method and path template, equal to its
 * key in the extracted schema so validation and `/_sim/stats` use the same name), the permission
 * Proxmox checks before running the handler (`check_api2_permissions`), and whether it counts
 * as a write on a guest. Each kind under `kinds/` exports a `RouteModule`; `routes.ts` lists them.
 */
import type { Principal } from './auth.js';
import { canSeeGuest, canWriteGuest, hasAnyPrivilege, hasPrivilege } from './auth.js';
import type { Handler } from './context.js';
import { PermissionError } from './errors.js';

/** A permission check run before parameter validation (`check_api2_permissions`). */
export type PermissionCheck = (principal: Principal, params: Record<string, unknown>) => void;

/** One API method. */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Template like `/nodes/{node}/qemu/{vmid}/config`. */
  path: string;
  /** `METHOD /path` — the schema key and the stats name. */
  key: string;
  segments: string[];
  permission: PermissionCheck;
  /** Counts toward the guest's writes in flight. */
  write: boolean;
  handler: Handler;
}

/** The routes of one kind of object the simulator serves, named for messages and tests. */
export interface RouteModule {
  name: string;
  routes: readonly Route[];
}

/**
 * `['perm', …]` absent or `user => 'all'`: the method itself decides, or anyone may call it. A
 * named check rather than a default, so a module says so for every route it adds.
 */
export const anyone: PermissionCheck = () => undefined;

function vmidOf(params: Record<string, unknown>): number {
  return Number(params.vmid);
}

/** `['perm', '/vms/{vmid}', ['VM.Audit']]`. */
export const guestAudit: PermissionCheck = (principal, params) => {
  if (!canSeeGuest(principal, vmidOf(params))) throw new PermissionError(`/vms/${String(params.vmid)}, VM.Audit`);
};

/** `['perm', '/vms/{vmid}', [privilege…], any => 1]`: the message names what Proxmox names. */
export function guestModify(privilege: string): PermissionCheck {
  return (principal, params) => {
    if (!canWriteGuest(principal, vmidOf(params))) throw new PermissionError(`/vms/${String(params.vmid)}, ${privilege}`);
  };
}

/** `['perm', '/storage/{storage}', [Datastore.Audit, Datastore.AllocateSpace], any => 1]`. */
export const storageAudit: PermissionCheck = (principal, params) => {
  const path = `/storage/${String(params.storage)}`;
  const privileges = ['Datastore.Audit', 'Datastore.AllocateSpace'];
  if (!hasAnyPrivilege(principal, path, privileges)) throw new PermissionError(`${path}, ${privileges.join('|')}`);
};

/** `['perm', '/pool/{poolid}', ['Pool.Audit']]`. */
export const poolAudit: PermissionCheck = (principal, params) => {
  const path = `/pool/${String(params.poolid)}`;
  if (!hasPrivilege(principal, path, 'Pool.Audit')) throw new PermissionError(`${path}, Pool.Audit`);
};

/** `['perm', '/pool/{poolid}', ['Pool.Allocate']]`: the pool's writes. */
export const poolAllocate: PermissionCheck = (principal, params) => {
  const path = `/pool/${String(params.poolid)}`;
  if (!hasPrivilege(principal, path, 'Pool.Allocate')) throw new PermissionError(`${path}, Pool.Allocate`);
};

/** `['perm', '/nodes/{node}', ['Sys.Audit']]`. */
export const nodeAudit: PermissionCheck = (principal, params) => {
  const path = `/nodes/${String(params.node)}`;
  if (!hasPrivilege(principal, path, 'Sys.Audit')) throw new PermissionError(`${path}, Sys.Audit`);
};

/** `['perm', '/', ['Sys.Audit']]`. */
export const rootAudit: PermissionCheck = (principal) => {
  if (!hasPrivilege(principal, '/', 'Sys.Audit')) throw new PermissionError('/, Sys.Audit');
};

/** Builds a route; `write` marks a method that counts toward a guest's writes in flight. */
export function route(method: Route['method'], path: string, permission: PermissionCheck, handler: Handler, write = false): Route {
  return { method, path, key: `${method} ${path}`, segments: path.split('/').filter(Boolean), permission, write, handler };
}
