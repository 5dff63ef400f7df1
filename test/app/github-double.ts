/**
 * GitHub's REST API, as a test double at the HTTP level (node:http), served under `/api/v3` as
 * GitHub Enterprise Server does — the App reaches it through GHE_HOST/GHE_PROTOCOL like any
 * GitHub-compatible API. Each test declares the requests it expects (method, path, optional body
 * matcher, response); any other request is answered 404 and FAILS the test at `verify()`, and so
 * does an expectation left unused. Like renovate's `test/http-mock.ts`, but over a real socket, so
 * Octokit, its plugins and Probot's auth run unchanged.
 *
 * The double is also the App's identity: it generates the App's RSA key pair and id, and serves
 * `POST /app/installations/{id}/access_tokens` itself — only for a JWT signed with that key and
 * naming that App id — handing out installation tokens it then requires on every other request.
 *
 * Like GitHub, it refuses what the App may not send: a request the installation's permissions do
 * not cover (by default those of app.yml) is answered 403, and text over GitHub's limits (a check
 * run summary over 65,535 UTF-8 bytes, a comment over 65,536 characters) 422. Both also fail the
 * test at `verify()` (docs/github-app.md has the limits and permissions and their sources).
 *
 * Like GitHub, its answer to a comment created or edited carries the comment's `created_at` and
 * `updated_at` (unless the test's reply names them): the double's clock, {@link GitHubDouble.commentsWrittenAt},
 * which a test sets — by default a time before every merge a test makes.
 */
import { createVerify, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { parse as parseYaml } from 'yaml';

/** A request the double received. */
export interface RecordedRequest {
  method: string;
  /** Path below `/api/v3`, without the query. */
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body, or the raw text when it is not JSON; undefined without a body. */
  body: unknown;
}

/** What the double answers. */
export interface Reply {
  status?: number;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is (with `contentType`). */
  raw?: Buffer | string;
  contentType?: string;
  headers?: Record<string, string>;
}

/** One expected request. */
export interface Expectation {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Path below `/api/v3` (no query): exact, or a pattern. */
  path: string | RegExp;
  /** Query parameters that must be present with these values. */
  query?: Record<string, string>;
  /**
   * Body check: a function (return false or throw to refuse the match), or an object every
   * listed field of which must deep-equal the body's.
   */
  // biome-ignore lint/suspicious/noExplicitAny: bodies are JSON the matcher reaches into
  body?: ((body: any) => boolean | undefined) | Record<string, unknown>;
  /** The answer; a function may return a promise to hold the answer back (a test's gate). */
  reply: Reply | ((request: RecordedRequest) => Reply | Promise<Reply>);
  /**
   * How many requests this expectation takes (default 1); `'any'`: as many as come, none
   * included (updates whose number depends on timing, like a debounced comment's edits).
   */
  times?: number | 'any';
}

/**
 * A declared expectation: `requested` resolves when its first request arrives (before it is
 * answered), `done` once it was used `times` times and answered.
 */
export interface ExpectationHandle {
  requested: Promise<RecordedRequest>;
  done: Promise<RecordedRequest[]>;
  readonly requests: RecordedRequest[];
}

interface Pending extends Expectation {
  used: RecordedRequest[];
  answered: number;
  resolve: (requests: RecordedRequest[]) => void;
  arrived: (request: RecordedRequest) => void;
}

/** The App as the double knows it: its id and the key GitHub would have generated for it. */
export interface AppIdentity {
  id: number;
  privateKeyPem: string;
  publicKey: KeyObject;
}

/** An installation's permissions, as GitHub grants them: permission name → `read` or `write`. */
export type InstallationPermissions = Record<string, 'read' | 'write'>;

/** The permissions app.yml asks for: what an installation of the App is granted. */
export function manifestPermissions(): InstallationPermissions {
  const manifest = parseYaml(readFileSync(new URL('../../app.yml', import.meta.url), 'utf8')) as {
    default_permissions: InstallationPermissions;
  };
  return { ...manifest.default_permissions };
}

/** One way to be allowed a request: a permission at a level (write includes read). */
export interface Grant {
  permission: string;
  level: 'read' | 'write';
}

const REPO = '/repos/[^/]+/[^/]+';

/**
 * The permission each REST call the App makes needs, from GitHub's "Permissions required for
 * GitHub Apps": any one of the listed grants suffices (a pull request's comments and reactions go
 * through the Issues API and take either the Issues or the Pull requests permission).
 */
const REQUIRED: readonly { method: string; path: RegExp; anyOf: readonly Grant[] }[] = [
  { method: 'GET', path: new RegExp(`^${REPO}/tarball/`), anyOf: [{ permission: 'contents', level: 'read' }] },
  { method: 'GET', path: new RegExp(`^${REPO}/commits$`), anyOf: [{ permission: 'contents', level: 'read' }] },
  { method: 'POST', path: new RegExp(`^${REPO}/check-runs$`), anyOf: [{ permission: 'checks', level: 'write' }] },
  { method: 'PATCH', path: new RegExp(`^${REPO}/check-runs/\\d+$`), anyOf: [{ permission: 'checks', level: 'write' }] },
  { method: 'GET', path: new RegExp(`^${REPO}/pulls/\\d+$`), anyOf: [{ permission: 'pull_requests', level: 'read' }] },
  { method: 'GET', path: new RegExp(`^${REPO}/collaborators/[^/]+/permission$`), anyOf: [{ permission: 'metadata', level: 'read' }] },
  {
    method: 'GET',
    path: new RegExp(`^${REPO}/issues/\\d+/comments$`),
    anyOf: [
      { permission: 'issues', level: 'read' },
      { permission: 'pull_requests', level: 'read' },
    ],
  },
  {
    method: 'POST',
    path: new RegExp(`^${REPO}/issues/(\\d+/comments|comments/\\d+/reactions)$`),
    anyOf: [
      { permission: 'issues', level: 'write' },
      { permission: 'pull_requests', level: 'write' },
    ],
  },
  {
    method: 'PATCH',
    path: new RegExp(`^${REPO}/issues/comments/\\d+$`),
    anyOf: [
      { permission: 'issues', level: 'write' },
      { permission: 'pull_requests', level: 'write' },
    ],
  },
  { method: 'GET', path: new RegExp(`^${REPO}/(issues|labels/[^/]+)$`), anyOf: [{ permission: 'issues', level: 'read' }] },
  { method: 'POST', path: new RegExp(`^${REPO}/(issues|labels)$`), anyOf: [{ permission: 'issues', level: 'write' }] },
  { method: 'PATCH', path: new RegExp(`^${REPO}/issues/\\d+$`), anyOf: [{ permission: 'issues', level: 'write' }] },
  // `/pve adopt`: the repository, the default branch's commit, and the Git Data API's writes; the pull request.
  { method: 'GET', path: new RegExp(`^${REPO}$`), anyOf: [{ permission: 'metadata', level: 'read' }] },
  { method: 'GET', path: new RegExp(`^${REPO}/issues/\\d+$`), anyOf: [{ permission: 'issues', level: 'read' }] },
  { method: 'GET', path: new RegExp(`^${REPO}/git/commits/[0-9a-f]+$`), anyOf: [{ permission: 'contents', level: 'read' }] },
  { method: 'POST', path: new RegExp(`^${REPO}/git/(blobs|trees|commits|refs)$`), anyOf: [{ permission: 'contents', level: 'write' }] },
  { method: 'PATCH', path: new RegExp(`^${REPO}/git/refs/.+$`), anyOf: [{ permission: 'contents', level: 'write' }] },
  { method: 'POST', path: new RegExp(`^${REPO}/pulls$`), anyOf: [{ permission: 'pull_requests', level: 'write' }] },
  { method: 'GET', path: new RegExp(`^${REPO}/pulls$`), anyOf: [{ permission: 'pull_requests', level: 'read' }] },
  // Deployments of an apply (on unless APPLY_DEPLOYMENTS=0): the deployment and its statuses, and a
  // lost run's deployments looked up on its merge commit.
  { method: 'GET', path: new RegExp(`^${REPO}/deployments$`), anyOf: [{ permission: 'deployments', level: 'read' }] },
  { method: 'POST', path: new RegExp(`^${REPO}/deployments$`), anyOf: [{ permission: 'deployments', level: 'write' }] },
  { method: 'POST', path: new RegExp(`^${REPO}/deployments/\\d+/statuses$`), anyOf: [{ permission: 'deployments', level: 'write' }] },
];

/** The grants that allow a request; undefined for a call the table does not list (the installation's repositories). */
export function requiredGrants(method: string, path: string): readonly Grant[] | undefined {
  return REQUIRED.find((r) => r.method === method && r.path.test(path))?.anyOf;
}

/** Whether `permissions` include `grant`. */
export function grants(permissions: InstallationPermissions, grant: Grant): boolean {
  const level = permissions[grant.permission];
  return level === 'write' || (level === 'read' && grant.level === 'read');
}

/** GitHub's 422 for a text over its limit, or undefined when the request's text is within them. */
function textLimitRefusal(request: RecordedRequest): { status: number; message: string; json: unknown } | undefined {
  const body = request.body as Record<string, unknown> | undefined;
  if (typeof body !== 'object' || body === null) return undefined;
  const refuse = (resource: string, field: string, message: string) => ({
    status: 422,
    message,
    json: { message: 'Validation Failed', errors: [{ resource, code: 'custom', field, message }], status: '422' },
  });
  if (new RegExp(`^${REPO}/check-runs(/\\d+)?$`).test(request.path)) {
    const output = (body.output ?? {}) as Record<string, unknown>;
    for (const field of ['summary', 'text']) {
      const text = output[field];
      if (typeof text === 'string' && Buffer.byteLength(text, 'utf8') > 65_535)
        return refuse('CheckRun', field, `${field} exceeds a maximum bytesize of 65535`);
    }
    const annotations = Array.isArray(output.annotations) ? (output.annotations as Record<string, unknown>[]) : [];
    if (annotations.length > 50) return refuse('CheckRun', 'annotations', 'at most 50 annotations per request');
    for (const a of annotations) {
      if (typeof a.message === 'string' && Buffer.byteLength(a.message, 'utf8') > 64 * 1024 - 1)
        return refuse('CheckRun', 'annotations', 'annotation message exceeds 64 KB');
      if (typeof a.title === 'string' && [...a.title].length > 255)
        return refuse('CheckRun', 'annotations', 'annotation title exceeds 255 characters');
    }
    return undefined;
  }
  // Issue and comment bodies are counted in characters (code points), not bytes.
  if (new RegExp(`^${REPO}/issues(/\\d+|/\\d+/comments|/comments/\\d+)?$`).test(request.path) && typeof body.body === 'string') {
    if ([...body.body].length > 65_536) {
      const resource = request.path.includes('comments') ? 'IssueComment' : 'Issue';
      return refuse(resource, 'body', 'body is too long (maximum is 65536 characters)');
    }
  }
  return undefined;
}

function decodeJwtPart(part: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

/** The GitHub API test double. */
export class GitHubDouble {
  readonly requests: RecordedRequest[] = [];
  readonly unexpected: RecordedRequest[] = [];
  /** Problems with authentication (a bad JWT, a request without a valid installation token). */
  readonly authProblems: string[] = [];
  /** Installation tokens handed out, by token → installation id. */
  readonly tokens = new Map<string, number>();
  /** Requests GitHub would refuse: over a text limit (422) or beyond the installation's permissions (403). */
  readonly refusals: string[] = [];
  /** The grants that allowed each permission-checked request, in order (see {@link requiredGrants}). */
  readonly checked: { method: string; path: string; anyOf: readonly Grant[] }[] = [];
  private readonly expectations: Pending[] = [];
  /**
   * GitHub's clock for comment writes: the `created_at`/`updated_at` of every comment the double
   * answers a create or an edit of. A test sets it to place a comment after a merge.
   */
  commentsWrittenAt = '2020-01-01T00:00:00Z';

  private constructor(
    private readonly server: Server,
    readonly app: AppIdentity,
    readonly url: string,
    /** What every installation of the App is granted. */
    readonly permissions: InstallationPermissions,
  ) {}

  /** Starts the double on a free loopback port, with a fresh App identity granted `permissions` (default: app.yml's). */
  static async start(options: { appId?: number; permissions?: InstallationPermissions } = {}): Promise<GitHubDouble> {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const app: AppIdentity = {
      id: options.appId ?? 100000 + randomBytes(2).readUInt16BE(0),
      privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
      publicKey,
    };
    let double: GitHubDouble | undefined;
    const server = createServer((req, res) => {
      void double?.handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    double = new GitHubDouble(server, app, `http://127.0.0.1:${port}`, options.permissions ?? manifestPermissions());
    return double;
  }

  /** `host:port`, for GHE_HOST. */
  get host(): string {
    return new URL(this.url).host;
  }

  /** Declares an expected request. */
  expect(expectation: Expectation): ExpectationHandle {
    let resolve: (requests: RecordedRequest[]) => void = () => {};
    let arrived: (request: RecordedRequest) => void = () => {};
    const done = new Promise<RecordedRequest[]>((r) => (resolve = r));
    const requested = new Promise<RecordedRequest>((r) => (arrived = r));
    const pending: Pending = { ...expectation, used: [], answered: 0, resolve, arrived };
    this.expectations.push(pending);
    return { requested, done, requests: pending.used };
  }

  /** Requests other than the installation token exchange, in order, as `METHOD path`. */
  calls(): string[] {
    return this.requests.filter((r) => !r.path.startsWith('/app/installations/')).map((r) => `${r.method} ${r.path}`);
  }

  /** Throws when a request was not expected, an expectation is unused, or authentication was wrong. */
  verify(): void {
    const problems: string[] = [];
    for (const r of this.unexpected)
      problems.push(`unexpected request ${r.method} ${r.path} ${JSON.stringify(r.body ?? '').slice(0, 300)}`);
    for (const e of this.expectations) {
      const times = e.times ?? 1;
      if (times !== 'any' && e.used.length < times)
        problems.push(`expected ${e.method} ${String(e.path)} ${times} time(s), got ${e.used.length}`);
    }
    problems.push(...this.authProblems, ...this.refusals);
    if (problems.length > 0) throw new Error(`GitHub test double:\n  ${problems.join('\n  ')}`);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    if (text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const url = new URL(req.url ?? '/', this.url);
    const path = url.pathname.startsWith('/api/v3') ? url.pathname.slice('/api/v3'.length) : url.pathname;
    const request: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
    };
    this.requests.push(request);

    const tokenMatch = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
    if (request.method === 'POST' && tokenMatch) return this.issueToken(req, res, Number(tokenMatch[1]));
    if (request.path.startsWith('/app/') || request.path === '/app') this.checkAppJwt(request);
    else this.checkInstallationToken(request);
    const refusal = this.permissionRefusal(request) ?? textLimitRefusal(request);
    if (refusal) this.refusals.push(`${request.method} ${request.path} refused: ${refusal.message}`);

    const expectation = this.expectations.find((e) => (e.times === 'any' || e.used.length < (e.times ?? 1)) && this.matches(e, request));
    if (!expectation) {
      this.unexpected.push(request);
      return this.send(res, { status: 404, json: { message: `unexpected request to the GitHub test double: ${request.method} ${path}` } });
    }
    expectation.used.push(request);
    if (expectation.used.length === 1) expectation.arrived(request);
    // A refused request still takes its expectation, so a test waiting for it fails at verify() rather than by a timeout.
    const reply = refusal
      ? { status: refusal.status, json: refusal.json }
      : typeof expectation.reply === 'function'
        ? await expectation.reply(request)
        : expectation.reply;
    this.send(res, this.withCommentTime(request, reply));
    expectation.answered += 1;
    if (expectation.answered === (expectation.times ?? 1)) expectation.resolve([...expectation.used]);
  }

  private matches(e: Expectation, r: RecordedRequest): boolean {
    if (e.method !== r.method) return false;
    if (typeof e.path === 'string' ? e.path !== r.path : !e.path.test(r.path)) return false;
    for (const [key, value] of Object.entries(e.query ?? {})) if (r.query[key] !== value) return false;
    if (e.body === undefined) return true;
    if (typeof e.body === 'function') {
      try {
        return e.body(r.body) !== false;
      } catch {
        return false;
      }
    }
    if (typeof r.body !== 'object' || r.body === null) return false;
    const actual = r.body as Record<string, unknown>;
    return Object.entries(e.body).every(([key, value]) => isDeepStrictEqual(actual[key], value));
  }

  /** Why the request's `Authorization: Bearer` JWT is not the App's (RS256, signed by its key, `iss` = App id); undefined when it is. */
  private jwtProblem(authorization: string | undefined): string | undefined {
    const jwt = /^bearer (.+)$/i.exec(authorization ?? '')?.[1] ?? '';
    const [header, payload, signature] = jwt.split('.');
    try {
      if (!header || !payload || !signature) throw new Error('not a JWT');
      const verifier = createVerify('RSA-SHA256');
      verifier.update(`${header}.${payload}`);
      if (!verifier.verify(this.app.publicKey, Buffer.from(signature, 'base64url'))) throw new Error('signature does not verify');
      if (decodeJwtPart(header).alg !== 'RS256') throw new Error('not RS256');
      if (String(decodeJwtPart(payload).iss) !== String(this.app.id)) throw new Error('iss is not the App id');
    } catch (error) {
      return (error as Error).message;
    }
    return undefined;
  }

  /** GitHub's 403 for a call the installation's permissions do not allow; records which grants allowed it otherwise. */
  private permissionRefusal(request: RecordedRequest): { status: number; message: string; json: unknown } | undefined {
    if (request.path.startsWith('/app')) return undefined;
    const anyOf = requiredGrants(request.method, request.path);
    if (anyOf === undefined) return undefined;
    this.checked.push({ method: request.method, path: request.path, anyOf });
    if (anyOf.some((grant) => grants(this.permissions, grant))) return undefined;
    const message = `Resource not accessible by integration (needs ${anyOf.map((g) => `${g.permission}: ${g.level}`).join(' or ')})`;
    return { status: 403, message, json: { message: 'Resource not accessible by integration', status: '403' } };
  }

  /** App endpoints (`/app/…`: the App's installations) take the App's JWT, not an installation token. */
  private checkAppJwt(request: RecordedRequest): void {
    const problem = this.jwtProblem(request.headers.authorization);
    if (problem) this.authProblems.push(`${request.method} ${request.path} without the App's JWT: ${problem}`);
  }

  /** Probot asks for an installation token with a JWT signed by the App's key (RS256, `iss` = App id). */
  private issueToken(req: IncomingMessage, res: ServerResponse, installationId: number): void {
    const jwtProblem = this.jwtProblem(req.headers.authorization);
    const problem = jwtProblem ? `installation token requested with a bad JWT: ${jwtProblem}` : undefined;
    if (problem) {
      this.authProblems.push(problem);
      this.send(res, { status: 401, json: { message: 'A JSON web token could not be decoded' } });
      return;
    }
    const token = `ghs_${randomBytes(18).toString('hex')}`;
    this.tokens.set(token, installationId);
    this.send(res, {
      status: 201,
      json: {
        token,
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
        permissions: this.permissions,
        repository_selection: 'all',
      },
    });
  }

  /** Every API request must carry an installation token the double handed out. */
  private checkInstallationToken(request: RecordedRequest): void {
    const auth = String(request.headers.authorization ?? '');
    const token = /^token (.+)$/i.exec(auth)?.[1];
    if (token === undefined || !this.tokens.has(token)) {
      this.authProblems.push(`${request.method} ${request.path} without an installation token the double issued`);
    }
  }

  /** A successful comment create or edit answered as GitHub does: with the comment's times. */
  private withCommentTime(request: RecordedRequest, reply: Reply): Reply {
    const write =
      (request.method === 'POST' && /\/issues\/\d+\/comments$/.test(request.path)) ||
      (request.method === 'PATCH' && /\/issues\/comments\/\d+$/.test(request.path));
    const status = reply.status ?? 200;
    if (!write || status >= 300 || typeof reply.json !== 'object' || reply.json === null || Array.isArray(reply.json)) return reply;
    const at = this.commentsWrittenAt;
    const json = reply.json as Record<string, unknown>;
    return { ...reply, json: { created_at: at, ...json, updated_at: json.updated_at ?? at } };
  }

  private send(res: ServerResponse, reply: Reply): void {
    const status = reply.status ?? 200;
    const headers: Record<string, string> = { ...reply.headers };
    let payload: Buffer | string = '';
    if (reply.json !== undefined) {
      payload = JSON.stringify(reply.json);
      headers['content-type'] = 'application/json; charset=utf-8';
    } else if (reply.raw !== undefined) {
      payload = reply.raw;
      headers['content-type'] = reply.contentType ?? 'application/octet-stream';
    }
    headers['content-length'] = String(Buffer.byteLength(payload));
    res.writeHead(status, headers);
    res.end(payload);
  }
}
