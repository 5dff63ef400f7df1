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
  /** When set, the token only has privileges on these guests. */
  vmids?: ReadonlySet<number>;
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
export type AuthFailure = 'No ticket' | 'Authentication failed!';

const TOKEN_ID_RE = /^(([^\s:/]+)@([A-Za-z][A-Za-z0-9.\-_]+))!([A-Za-z][A-Za-z0-9.\-_]+)$/;

/** Splits `user@realm!name` like `split_tokenid`; undefined when malformed. */
export function splitTokenId(id: string): { userid: string; tokenName: string } | undefined {
  const m = TOKEN_ID_RE.exec(id);
  return m ? { userid: m[1] as string, tokenName: m[4] as string } : undefined;
}

/**
 * `extract_auth_value`: `(?:^|\s)KEY(?:=| )([^;]*)`, URI-unescaped. Returns undefined when the
 * header does not carry that key.
 */
export function extractAuthValue(header: string | undefined, key: string): string | undefined {
  if (!header) return undefined;
  const m = new RegExp(`(?:^|\\s)${key}(?:=| )([^;]*)`).exec(header);
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[1] as string);
  } catch {
    return m[1] as string;
  }
}

/** The tokens of one simulator, looked up per request. */
export class TokenRegistry {
  private readonly tokens = new Map<string, SimToken>();

  /** The token with this id (`USER@REALM!TOKENID`), if configured. */
  get(id: string): SimToken | undefined {
    return this.tokens.get(id);
  }

  /** Adds or replaces a token. */
  add(token: SimToken): void {
    if (!splitTokenId(token.id)) throw new Error(`invalid token id '${token.id}' (expected USER@REALM!TOKENID)`);
    this.tokens.set(token.id, token);
  }

  /**
   * Authenticates a request from its `Authorization` and `Cookie` headers. A ticket is never
   * valid here (the simulator issues none), so cookie users get `Authentication failed!`.
   */
  authenticate(authorization: string | undefined, cookie: string | undefined): Principal | AuthFailure {
    const ticket = extractAuthValue(cookie, 'PVEAuthCookie') ?? extractAuthValue(authorization, 'PVEAuthCookie');
    if (ticket) return 'Authentication failed!';
    const apiToken = extractAuthValue(authorization, 'PVEAPIToken');
    if (apiToken === undefined) return 'No ticket';
    // Split on the last `=` (Perl's greedy `^(.*)=(.*)$`).
    const eq = apiToken.lastIndexOf('=');
    if (eq < 0) return 'Authentication failed!';
    const token = this.tokens.get(apiToken.slice(0, eq));
    if (!token || token.secret !== apiToken.slice(eq + 1)) return 'Authentication failed!';
    const parts = splitTokenId(token.id);
    if (!parts) return 'Authentication failed!';
    return { token, ...parts };
  }
}

/** Privileges of the PVEAuditor role (pve-access-control `AccessControl.pm`, `create_roles`: every `audit` privilege). */
const AUDIT_PRIVILEGES: ReadonlySet<string> = new Set([
  'Datastore.Audit',
  'Mapping.Audit',
  'Pool.Audit',
  'SDN.Audit',
  'Sys.Audit',
  'VM.Audit',
  'VM.GuestAgent.Audit',
]);

/**
 * Whether the principal holds `privilege` on an ACL path, in the simulator's model of roles:
 * `admin` holds every privilege (a root token without privilege separation), `audit` those of
 * PVEAuditor. A token with `vmids` holds its role's privileges on `/vms/<vmid>` of those guests
 * only, and nothing on any other path (no `/storage`, `/pool`, `/nodes` or `/`). Neither is ever
 * `root@pam`: checks that compare the user name with `root@pam` fail for every token.
 */
export function hasPrivilege(principal: Principal, path: string, privilege: string): boolean {
  const { role, vmids } = principal.token;
  if (vmids !== undefined) {
    const m = /^\/vms\/(\d+)$/.exec(path);
    if (!m || !vmids.has(Number(m[1]))) return false;
  }
  return role === 'admin' || AUDIT_PRIVILEGES.has(privilege);
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
