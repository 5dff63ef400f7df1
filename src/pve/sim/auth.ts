/**
 * API-token authentication and the two roles the simulator knows (docs/proxmox-behaviour.md,
 * "Tokens and privileges"): `admin` (everything a root token without privilege separation may
 * do) and `audit` (PVEAuditor: reads only). Either may be limited to a set of VMIDs; guests
 * outside it are invisible.
 */

/** A configured API token. */
export interface SimToken {
  /** `USER@REALM!TOKENID`. */
  id: string;
  secret: string;
  role: 'admin' | 'audit';
  /** When set, the token has VM privileges on these guests only. */
  vmids?: ReadonlySet<number>;
  /** With `vmids`: no privileges outside those guests at all (no `/`, `/storage`, `/pool`, `/nodes`). */
  guestsOnly?: boolean;
}

/** Who a request runs as. */
export interface Principal {
  token: SimToken;
  /** `user@realm` part of the token id. */
  userid: string;
  /** `tokenid` part after `!`. */
  tokenName: string;
}

/** Why authentication failed: the 401 reason phrase Proxmox sends. */
type AuthFailure = 'No ticket' | 'Authentication failed!';

const TOKEN_ID_RE = /^(([^\s:/]+)@([A-Za-z][A-Za-z0-9.\-_]+))!([A-Za-z][A-Za-z0-9.\-_]+)$/;

/** Splits `user@realm!name` like `split_tokenid`; undefined when malformed. */
export function splitTokenId(id: string): { userid: string; tokenName: string } | undefined {
  const m = TOKEN_ID_RE.exec(id);
  return m ? { userid: m[1] as string, tokenName: m[4] as string } : undefined;
}

/** The keys a request authenticates by, each with its `extract_auth_value` pattern, compiled once. */
const AUTH_VALUE_RE = {
  PVEAuthCookie: /(?:^|\s)PVEAuthCookie(?:=| )([^;]*)/,
  PVEAPIToken: /(?:^|\s)PVEAPIToken(?:=| )([^;]*)/,
} as const;
type AuthKey = keyof typeof AUTH_VALUE_RE;

/**
 * `extract_auth_value`: `(?:^|\s)KEY(?:=| )([^;]*)`, URI-unescaped. Returns undefined when the
 * header does not carry that key.
 */
function extractAuthValue(header: string | undefined, key: AuthKey): string | undefined {
  if (!header) return undefined;
  const m = AUTH_VALUE_RE[key].exec(header);
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[1] as string);
  } catch {
    return m[1] as string;
  }
}

/** How many distinct `Authorization` headers {@link TokenRegistry} remembers. */
const HEADER_CACHE_SIZE = 64;

/** The tokens of one simulator, looked up per request. */
export class TokenRegistry {
  /** Each token with its principal, split once when it is added rather than per request. */
  private readonly tokens = new Map<string, Principal>();
  /**
   * What each `Authorization` header (sent without a cookie) authenticated as: a client sends the
   * same header on every request. Emptied when a token is added or replaced, and when it is full.
   */
  private readonly byHeader = new Map<string, Principal | AuthFailure>();

  /** The token with this id (`USER@REALM!TOKENID`), if configured. */
  get(id: string): SimToken | undefined {
    return this.tokens.get(id)?.token;
  }

  /** Adds or replaces a token. */
  add(token: SimToken): void {
    const parts = splitTokenId(token.id);
    if (!parts) throw new Error(`invalid token id '${token.id}' (expected USER@REALM!TOKENID)`);
    this.tokens.set(token.id, { token, ...parts });
    this.byHeader.clear();
  }

  /**
   * Authenticates a request from its `Authorization` and `Cookie` headers. A ticket is never
   * valid here (the simulator issues none), so cookie users get `Authentication failed!`.
   */
  authenticate(authorization: string | undefined, cookie: string | undefined): Principal | AuthFailure {
    if (cookie !== undefined || authorization === undefined) return this.check(authorization, cookie);
    let result = this.byHeader.get(authorization);
    if (result === undefined) {
      result = this.check(authorization, undefined);
      if (this.byHeader.size >= HEADER_CACHE_SIZE) this.byHeader.clear();
      this.byHeader.set(authorization, result);
    }
    return result;
  }

  private check(authorization: string | undefined, cookie: string | undefined): Principal | AuthFailure {
    const ticket = extractAuthValue(cookie, 'PVEAuthCookie') ?? extractAuthValue(authorization, 'PVEAuthCookie');
    if (ticket) return 'Authentication failed!';
    const apiToken = extractAuthValue(authorization, 'PVEAPIToken');
    if (apiToken === undefined) return 'No ticket';
    // Split on the last `=` (Perl's greedy `^(.*)=(.*)$`).
    const eq = apiToken.lastIndexOf('=');
    if (eq < 0) return 'Authentication failed!';
    const principal = this.tokens.get(apiToken.slice(0, eq));
    if (!principal || principal.token.secret !== apiToken.slice(eq + 1)) return 'Authentication failed!';
    return principal;
  }
}

/** Privileges of the Administrator role that matter to guests and storages (`$privgroups`). */
const ADMIN_PRIVILEGES: readonly string[] = [
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

/** PVEAuditor: every `audit` privilege of `$privgroups` (pve-access-control `AccessControl.pm`, `create_roles`). */
const AUDIT_PRIVILEGES: readonly string[] = [
  'Datastore.Audit',
  'Mapping.Audit',
  'Pool.Audit',
  'SDN.Audit',
  'Sys.Audit',
  'VM.Audit',
  'VM.GuestAgent.Audit',
];

/**
 * `permissions($user, $path)`: the privileges a token holds on an ACL path, in the simulator's
 * model (docs/proxmox-behaviour.md, "Tokens and privileges"). `admin` is Administrator (every
 * privilege, like a root token without privilege separation), `audit` is PVEAuditor. A token with
 * `vmids` holds its role's VM privileges on `/vms/<vmid>` of those guests only and the rest of its
 * role on every other path; with `guestsOnly` it holds nothing outside those guests (an ACL on
 * the guests alone). No token is ever `root@pam`: checks comparing the user with `root@pam` fail.
 */
export function privilegesOn(token: SimToken, path: string): readonly string[] {
  const role = token.role === 'admin' ? ADMIN_PRIVILEGES : AUDIT_PRIVILEGES;
  if (token.vmids === undefined) return role;
  const vm = /^\/vms\/(\d+)$/.exec(path);
  if (vm) return token.vmids.has(Number(vm[1])) ? role : [];
  if (token.guestsOnly || path === '/vms' || path.startsWith('/vms/')) return [];
  return role.filter((p) => !p.startsWith('VM.'));
}

/** `check` for one privilege: whether the principal holds it on the path. */
export function hasPrivilege(principal: Principal, path: string, privilege: string): boolean {
  return privilegesOn(principal.token, path).includes(privilege);
}

/** `check_any`: at least one of the privileges on the path. */
export function hasAnyPrivilege(principal: Principal, path: string, privileges: readonly string[]): boolean {
  return privileges.some((p) => hasPrivilege(principal, path, p));
}

/** Whether the principal holds any privilege on `/vms/<vmid>` (what `VM.Audit` filtering needs). */
export function canSeeGuest(principal: Principal, vmid: number): boolean {
  return hasPrivilege(principal, `/vms/${vmid}`, 'VM.Audit');
}

/** Whether the principal may change `/vms/<vmid>` (admin role and in scope). */
export function canWriteGuest(principal: Principal, vmid: number): boolean {
  return hasPrivilege(principal, `/vms/${vmid}`, 'VM.Allocate');
}
