/**
 * `GET /access/permissions` (pve-access-control `src/PVE/API2/AccessControl.pm`, `permissions`;
 * `src/PVE/RPCEnvironment.pm`, `get_effective_permissions`): the effective privileges of the
 * calling token (or one it may audit) as path → privilege → propagate flag.
 *
 * The simulator's two roles map onto Proxmox's built-in roles: `admin` is Administrator (every
 * privilege, like a root token without privilege separation) and `audit` is PVEAuditor. A token
 * limited to `vmids` holds its role's VM privileges on each `/vms/N` of the list only, and the
 * rest of its role on `/` — the ACLs an operator would write for such a token.
 */
import type { SimToken } from './auth.js';
import type { HandlerResult, RequestContext } from './context.js';
import { PermissionError } from './errors.js';

/** Privileges of the Administrator role that matter to guests and storages (`$privgroups`). */
const ADMIN = [
  'Datastore.Allocate',
  'Datastore.AllocateSpace',
  'Datastore.AllocateTemplate',
  'Datastore.Audit',
  'Mapping.Audit',
  'Mapping.Modify',
  'Mapping.Use',
  'Permissions.Modify',
  'Pool.Allocate',
  'Pool.Audit',
  'SDN.Allocate',
  'SDN.Audit',
  'SDN.Use',
  'Sys.Audit',
  'Sys.Console',
  'Sys.Modify',
  'Sys.PowerMgmt',
  'Sys.Syslog',
  'VM.Allocate',
  'VM.Audit',
  'VM.Backup',
  'VM.Clone',
  'VM.Config.CDROM',
  'VM.Config.CPU',
  'VM.Config.Cloudinit',
  'VM.Config.Disk',
  'VM.Config.HWType',
  'VM.Config.Memory',
  'VM.Config.Network',
  'VM.Config.Options',
  'VM.Console',
  'VM.Migrate',
  'VM.PowerMgmt',
  'VM.Snapshot',
  'VM.Snapshot.Rollback',
];

/** PVEAuditor: every `audit` privilege of `$privgroups`. */
const AUDITOR = ['Datastore.Audit', 'Mapping.Audit', 'Pool.Audit', 'SDN.Audit', 'Sys.Audit', 'VM.Audit', 'VM.GuestAgent.Audit'];

/** The top-level paths `get_effective_permissions` always considers. */
const DEFAULT_PATHS = ['/', '/access', '/access/groups', '/nodes', '/pool', '/sdn', '/storage', '/vms'];

function grant(privileges: readonly string[]): Record<string, number> {
  return Object.fromEntries(privileges.map((p) => [p, 1]));
}

/** `permissions($user, $path)` for a simulated token. */
function permissionsOn(token: SimToken, path: string): Record<string, number> {
  const role = token.role === 'admin' ? ADMIN : AUDITOR;
  if (token.vmids === undefined) return grant(role);
  const vm = /^\/vms\/(\d+)$/.exec(path);
  if (vm) return token.vmids.has(Number(vm[1])) ? grant(role) : {};
  if (path === '/vms' || path.startsWith('/vms/')) return {};
  return grant(role.filter((p) => !p.startsWith('VM.')));
}

/** `GET /access/permissions[?path=…][&userid=…]`. */
export function getPermissions(ctx: RequestContext): HandlerResult {
  const self = ctx.principal.token;
  const asked = ctx.params.userid;
  let token = self;
  if (asked !== undefined && asked !== self.id) {
    // Anyone else's permissions need Sys.Audit on /access, which both simulated roles hold.
    if (!('Sys.Audit' in permissionsOn(self, '/access'))) throw new PermissionError('/access, Sys.Audit');
    const other = ctx.sim.tokens.get(asked);
    if (!other) return { data: {} };
    token = other;
  }
  const path = ctx.params.path;
  if (path !== undefined && path !== '') {
    const perms = permissionsOn(token, path);
    return { data: Object.keys(perms).length > 0 ? { [path]: perms } : {} };
  }
  const paths = new Set(DEFAULT_PATHS);
  for (const vmid of token.vmids ?? []) paths.add(`/vms/${vmid}`);
  const data: Record<string, Record<string, number>> = {};
  for (const p of [...paths].sort()) {
    const perms = permissionsOn(token, p);
    if (Object.keys(perms).length > 0) data[p] = perms;
  }
  return { data };
}
