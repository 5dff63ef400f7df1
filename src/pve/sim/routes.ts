/**
 * The API surface: each route's method and path template (equal to its key in the extracted
 * schema, so validation and `/_sim/stats` use the same name), the permission Proxmox checks
 * before running the handler, and whether it counts as a write on a guest.
 */
import type { Principal } from './auth.js';
import { canSeeGuest, canWriteGuest, hasAnyPrivilege, hasPrivilege } from './auth.js';
import type { Handler } from './context.js';
import { getPermissions } from './handlers-access.js';
import { PermissionError } from './errors.js';
import {
  getClusterResources,
  getClusterStatus,
  getNextId,
  getNodeStatus,
  getNodes,
  getTaskLog,
  getTaskStatus,
  getVersion,
  listClusterTasks,
  listTasks,
} from './handlers-cluster.js';
import { listPools, listStorageContent, listStorages, readPool } from './handlers-storage.js';
import {
  getConfig,
  getPending,
  getStatusCurrent,
  guestIndex,
  listGuests,
  statusIndex,
  updateLxcConfig,
  updateQemuConfig,
} from './handlers-guest.js';
import {
  createLxc,
  createQemu,
  destroyLxc,
  destroyQemu,
  moveDisk,
  moveLxcVolume,
  power,
  reboot,
  resizeLxc,
  resizeQemu,
} from './handlers-lifecycle.js';

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

const QEMU_CONFIG_PRIVS =
  'VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|VM.Config.Cloudinit';
const LXC_CONFIG_PRIVS = 'VM.Config.Disk|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.Options';

const anyone: PermissionCheck = () => undefined;

function vmidOf(params: Record<string, unknown>): number {
  return Number(params.vmid);
}

function audit(): PermissionCheck {
  return (principal, params) => {
    if (!canSeeGuest(principal, vmidOf(params))) throw new PermissionError(`/vms/${String(params.vmid)}, VM.Audit`);
  };
}

function modify(privilege: string): PermissionCheck {
  return (principal, params) => {
    if (!canWriteGuest(principal, vmidOf(params))) throw new PermissionError(`/vms/${String(params.vmid)}, ${privilege}`);
  };
}

/** `['perm', '/storage/{storage}', [Datastore.Audit, Datastore.AllocateSpace], any => 1]`. */
const storageAudit: PermissionCheck = (principal, params) => {
  const path = `/storage/${String(params.storage)}`;
  const privileges = ['Datastore.Audit', 'Datastore.AllocateSpace'];
  if (!hasAnyPrivilege(principal, path, privileges)) throw new PermissionError(`${path}, ${privileges.join('|')}`);
};

/** `['perm', '/pool/{poolid}', ['Pool.Audit']]`. */
const poolAudit: PermissionCheck = (principal, params) => {
  const path = `/pool/${String(params.poolid)}`;
  if (!hasPrivilege(principal, path, 'Pool.Audit')) throw new PermissionError(`${path}, Pool.Audit`);
};

/** `['perm', '/nodes/{node}', ['Sys.Audit']]`. */
const nodeAudit: PermissionCheck = (principal, params) => {
  const path = `/nodes/${String(params.node)}`;
  if (!hasPrivilege(principal, path, 'Sys.Audit')) throw new PermissionError(`${path}, Sys.Audit`);
};

/** `['perm', '/', ['Sys.Audit']]`. */
const rootAudit: PermissionCheck = (principal) => {
  if (!hasPrivilege(principal, '/', 'Sys.Audit')) throw new PermissionError('/, Sys.Audit');
};

function route(method: Route['method'], path: string, permission: PermissionCheck, handler: Handler, write = false): Route {
  return { method, path, key: `${method} ${path}`, segments: path.split('/').filter(Boolean), permission, write, handler };
}

const Q = '/nodes/{node}/qemu';
const L = '/nodes/{node}/lxc';

/** Every implemented method. */
export const ROUTES: Route[] = [
  route('GET', '/version', anyone, getVersion),
  route('GET', '/nodes', anyone, getNodes),
  route('GET', '/cluster/resources', anyone, getClusterResources),
  route('GET', '/cluster/nextid', anyone, getNextId),
  route('GET', '/cluster/status', rootAudit, getClusterStatus),
  route('GET', '/cluster/tasks', anyone, listClusterTasks),
  route('GET', '/nodes/{node}/status', nodeAudit, getNodeStatus),
  route('GET', '/access/permissions', anyone, getPermissions),
  route('GET', '/nodes/{node}/tasks', anyone, listTasks),
  route('GET', '/nodes/{node}/tasks/{upid}/status', anyone, getTaskStatus),
  route('GET', '/nodes/{node}/tasks/{upid}/log', anyone, getTaskLog),
  route('GET', '/nodes/{node}/storage', anyone, listStorages),
  route('GET', '/nodes/{node}/storage/{storage}/content', storageAudit, listStorageContent),
  route('GET', '/pools', anyone, listPools),
  route('GET', '/pools/{poolid}', poolAudit, readPool),

  route('GET', Q, anyone, listGuests('qemu')),
  route('POST', Q, anyone, createQemu, true),
  route('GET', `${Q}/{vmid}`, anyone, guestIndex('qemu')),
  route('GET', `${Q}/{vmid}/status`, anyone, statusIndex('qemu')),
  route('GET', `${Q}/{vmid}/config`, audit(), getConfig('qemu')),
  route('PUT', `${Q}/{vmid}/config`, modify(QEMU_CONFIG_PRIVS), updateQemuConfig(false), true),
  route('POST', `${Q}/{vmid}/config`, modify(QEMU_CONFIG_PRIVS), updateQemuConfig(true), true),
  route('GET', `${Q}/{vmid}/pending`, audit(), getPending('qemu')),
  route('GET', `${Q}/{vmid}/status/current`, audit(), getStatusCurrent('qemu')),
  route('POST', `${Q}/{vmid}/status/start`, modify('VM.PowerMgmt'), power('qemu', 'start'), true),
  route('POST', `${Q}/{vmid}/status/stop`, modify('VM.PowerMgmt'), power('qemu', 'stop'), true),
  route('POST', `${Q}/{vmid}/status/shutdown`, modify('VM.PowerMgmt'), power('qemu', 'shutdown'), true),
  route('POST', `${Q}/{vmid}/status/reboot`, modify('VM.PowerMgmt'), reboot('qemu'), true),
  route('PUT', `${Q}/{vmid}/resize`, modify('VM.Config.Disk'), resizeQemu, true),
  route('POST', `${Q}/{vmid}/move_disk`, modify('VM.Config.Disk'), moveDisk, true),
  route('DELETE', `${Q}/{vmid}`, modify('VM.Allocate'), destroyQemu, true),

  route('GET', L, anyone, listGuests('lxc')),
  route('POST', L, anyone, createLxc, true),
  route('GET', `${L}/{vmid}`, anyone, guestIndex('lxc')),
  route('GET', `${L}/{vmid}/status`, anyone, statusIndex('lxc')),
  route('GET', `${L}/{vmid}/config`, audit(), getConfig('lxc')),
  route('PUT', `${L}/{vmid}/config`, modify(LXC_CONFIG_PRIVS), updateLxcConfig, true),
  route('GET', `${L}/{vmid}/pending`, audit(), getPending('lxc')),
  route('GET', `${L}/{vmid}/status/current`, audit(), getStatusCurrent('lxc')),
  route('POST', `${L}/{vmid}/status/start`, modify('VM.PowerMgmt'), power('lxc', 'start'), true),
  route('POST', `${L}/{vmid}/status/stop`, modify('VM.PowerMgmt'), power('lxc', 'stop'), true),
  route('POST', `${L}/{vmid}/status/shutdown`, modify('VM.PowerMgmt'), power('lxc', 'shutdown'), true),
  route('POST', `${L}/{vmid}/status/reboot`, modify('VM.PowerMgmt'), reboot('lxc'), true),
  route('PUT', `${L}/{vmid}/resize`, modify('VM.Config.Disk'), resizeLxc, true),
  route('POST', `${L}/{vmid}/move_volume`, modify('VM.Config.Disk'), moveLxcVolume, true),
  route('DELETE', `${L}/{vmid}`, modify('VM.Allocate'), destroyLxc, true),
];

/** A matched route with its decoded path parameters. */
export interface RouteMatch {
  route: Route;
  pathParams: Record<string, string>;
}

/** Finds the route for a method and path (relative to `/api2/json`). */
export function matchRoute(method: string, segments: string[]): RouteMatch | undefined {
  for (const candidate of ROUTES) {
    if (candidate.method !== method || candidate.segments.length !== segments.length) continue;
    const pathParams: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < segments.length; i++) {
      const pattern = candidate.segments[i] as string;
      const actual = segments[i] as string;
      if (pattern.startsWith('{')) pathParams[pattern.slice(1, -1)] = actual;
      else if (pattern !== actual) {
        ok = false;
        break;
      }
    }
    if (ok) return { route: candidate, pathParams };
  }
  return undefined;
}
