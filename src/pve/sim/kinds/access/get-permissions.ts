/**
 * `GET /access/permissions` (pve-access-control `src/PVE/API2/AccessControl.pm`, `permissions`;
 * `src/PVE/RPCEnvironment.pm`, `get_effective_permissions`): the effective privileges of the
 * calling token (or one it may audit) as path → privilege → propagate flag.
 *
 * The simulator's two roles map onto Proxmox's built-in roles: `admin` is Administrator (every
 * privilege, like a root token without privilege separation) and `audit` is PVEAuditor. A token
 * limited to `vmids` holds its role's VM privileges on each `/vms/N` of the list only, and the
 * rest of its role on `/` — the ACLs an operator would write for such a token — unless it is
 * `guestsOnly` (src/pve/sim/auth.ts, `privilegesOn`).
 */
import { privilegesOn, type SimToken } from '../../auth.js';
import type { HandlerResult, RequestContext } from '../../context.js';
import { PermissionError } from '../../errors.js';

/** The top-level paths `get_effective_permissions` always considers. */
const DEFAULT_PATHS = ['/', '/access', '/access/groups', '/nodes', '/pool', '/sdn', '/storage', '/vms'];

/** `permissions($user, $path)` for a simulated token, as path → privilege → propagate flag. */
function permissionsOn(token: SimToken, path: string): Record<string, number> {
  return Object.fromEntries(privilegesOn(token, path).map((p) => [p, 1]));
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
