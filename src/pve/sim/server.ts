/**
 * The HTTP(S) front of the simulator, on node:http / node:https: request plumbing as
 * pveproxy does it (docs/proxmox-api.md#envelopes-and-status-codes, #authentication) — body
 * parsing, auth, routing, permission, proxy-to-node, schema validation, envelopes, status lines
 * and headers — plus the `/_sim` control API.
 *
 * Control API (outside `/api2`, no authentication, JSON bodies, answers `{"ok":true}` or the
 * requested data; a bad request gets 400 `{"error":"…"}`):
 *
 *   GET  /_sim/stats                 request/write counters (see SimStats)
 *   GET  /_sim/requests              the last 1000 API requests: method, path, route, params, status
 *   POST /_sim/reset-stats           zero the counters and empty the request journal
 *   POST /_sim/latency               {"ms": 200}                       latency on every API request
 *   POST /_sim/rrd-lag               {"ms": 10000}                     listing name/status published per tick (0: live)
 *   POST /_sim/task-ms               {"ms": 500}                       duration of new tasks
 *   POST /_sim/failure-rate          {"rate": 0.2, "methods"?: ["PUT","POST"], "mode"?: "error"|"reset"|"mixed"}
 *   POST /_sim/lock                  {"vmid": 100, "lock": "backup", "ms": 5000}   held like a backup job
 *   POST /_sim/operator-edit         {"vmid": 100, "set"?: {"cores": 4}, "delete"?: ["tags"]}
 *   POST /_sim/edit-after-next-read  same body: lands right after the next config/pending read
 *   POST /_sim/running               {"vmid": 100, "running": true}   power state, no task
 *   POST /_sim/guests                {"vmid", "type", "node", "running"?, "config", "lock"?}  add a guest
 *   GET  /_sim/guests/<vmid>         {vmid, type, node, running, rawConfig, digest}
 *
 * 401 answers are delayed by `authFailureDelayMs` (Proxmox: 3 s; the library default is 0 so
 * tests stay fast, the CLI default is 3000).
 */
import { isGuestType } from '../../core/guest-flavours.js';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { gzip } from 'node:zlib';
import { validateParams, paramSchema } from '../../core/proxmox-params.js';
import type { Principal } from './auth.js';
import type { HandlerResult, RequestContext } from './context.js';
import { ApiError, DieError, NotImplementedError, ParamError, SimulatorError } from './errors.js';
import { matchRoute, type RouteMatch } from './routes.js';
import type { OperatorEdit, Simulator } from './simulator.js';

const API_PREFIX = '/api2/json';
const MAX_BODY = 1024 * 1024;

/** Creates the (not yet listening) server for a simulator. */
export function createSimServer(sim: Simulator, tls?: { cert: string; key: string }): Server {
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    void dispatch(sim, req, res).catch((err: unknown) => {
      process.stderr.write(`pve simulator: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`);
      if (!res.headersSent) sendError(req, res, new DieError(`internal simulator error: ${(err as Error)?.message}`));
      else res.destroy();
    });
  };
  const server = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }, handler) : createHttpServer(handler);
  server.keepAliveTimeout = 5000;
  return server;
}

async function dispatch(sim: Simulator, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const rawUrl = req.url ?? '/';
  const q = rawUrl.indexOf('?');
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const query = q < 0 ? '' : rawUrl.slice(q + 1);
  if (path.startsWith('/_sim/')) return control(sim, req, res, path);
  if (path === API_PREFIX || path.startsWith(`${API_PREFIX}/`)) return api(sim, req, res, path.slice(API_PREFIX.length) || '/', query);
  await drain(req);
  sendError(req, res, new NotImplementedError(req.method ?? 'GET', path));
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return 'too-large';
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function drain(req: IncomingMessage): Promise<void> {
  // Nothing to read without a body: an async iterator's listeners per GET cost more than the request.
  if (!hasBody(req)) {
    req.resume();
    return;
  }
  for await (const _ of req as AsyncIterable<Buffer>) {
    // discard
  }
}

/** Form/query parsing like `extract_params`: repeated keys are joined with NUL. */
function parseForm(text: string, into: Record<string, unknown>): void {
  if (!text) return;
  for (const [key, value] of new URLSearchParams(text)) {
    const previous = into[key];
    into[key] = typeof previous === 'string' ? `${previous}\0${value}` : value;
  }
}

/** Converts a validated value to the string Perl would hold. */
function toPerlString(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (Array.isArray(value)) return value.map(String).join(',');
  return String(value);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function api(sim: Simulator, req: IncomingMessage, res: ServerResponse, relPath: string, query: string): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  if ((method === 'GET' || method === 'HEAD' || method === 'DELETE') && hasBody(req)) {
    await drain(req);
    return sendEmpty(res, 501, `Unexpected content for method '${method}'`);
  }
  let segments: string[];
  try {
    segments = relPath
      .split('/')
      .filter(Boolean)
      .map((s) => decodeURIComponent(s));
  } catch {
    segments = relPath.split('/').filter(Boolean);
  }
  const match = matchRoute(method, segments);
  sim.statsCollector.request(method, match?.route.key ?? `${method} ${relPath}`);

  const bodyParams: Record<string, unknown> = {};
  let json = false;
  if (method === 'POST' || method === 'PUT') {
    const body = await readBody(req);
    if (body === 'too-large') return sendEmpty(res, 413, 'Request Entity Too Large');
    if (body.length > 0) {
      const contentType = (req.headers['content-type'] ?? 'application/x-www-form-urlencoded').split(';')[0]?.trim().toLowerCase();
      if (contentType === 'application/json') {
        json = true;
        let decoded: unknown;
        try {
          decoded = JSON.parse(body.toString('utf8'));
        } catch (err) {
          return sendError(req, res, new DieError(`malformed JSON string: ${(err as Error).message}\n`));
        }
        if (decoded === null || typeof decoded !== 'object' || Array.isArray(decoded)) {
          return sendError(req, res, new DieError('JSON body must be an object\n'));
        }
        Object.assign(bodyParams, decoded);
      } else if (contentType === 'application/x-www-form-urlencoded') {
        parseForm(body.toString('utf8'), bodyParams);
      } else {
        return sendEmpty(res, 506, `upload 'Content-Type '${contentType}' not implemented'`);
      }
    }
  } else {
    await drain(req);
  }
  const queryParams: Record<string, unknown> = {};
  parseForm(query, queryParams);
  const merged: Record<string, unknown> = { ...bodyParams, ...queryParams };

  const auth = sim.tokens.authenticate(req.headers.authorization, req.headers.cookie);
  let endWrite: (() => void) | undefined;
  let taskAttached = false;
  if (typeof auth !== 'string' && match?.route.write) {
    const vmid = Number(match.pathParams.vmid ?? merged.vmid);
    if (Number.isInteger(vmid) && vmid > 0) endWrite = sim.statsCollector.beginWrite(vmid);
  }
  const afterResponse: (() => void)[] = [];
  res.once('finish', () => {
    sim.statsCollector.record({
      method,
      path: relPath,
      route: match?.route.key ?? `${method} ${relPath}`,
      params: merged,
      status: res.statusCode,
    });
  });
  res.once('close', () => {
    if (endWrite && !taskAttached) endWrite();
    for (const fn of afterResponse) fn();
  });

  if (sim.latencyMs > 0) await sleep(sim.latencyMs);
  if (sim.failure.rate > 0 && (!sim.failure.methods || sim.failure.methods.has(method)) && Math.random() < sim.failure.rate) {
    const reset = sim.failure.mode === 'reset' || (sim.failure.mode === 'mixed' && Math.random() < 0.5);
    if (reset) {
      req.socket.destroy();
      return;
    }
    return sendError(req, res, new DieError('got timeout\n'));
  }
  if (typeof auth === 'string') {
    if (sim.authFailureDelayMs > 0) await sleep(sim.authFailureDelayMs);
    return sendEmpty(res, 401, auth);
  }
  if (!match) return sendError(req, res, new NotImplementedError(method, relPath));

  try {
    const result = await handle(sim, auth, match, merged, json, {
      onTask: () => (taskAttached = true),
      endWrite: () => endWrite?.(),
      afterResponse: (fn) => afterResponse.push(fn),
    });
    sendResult(req, res, result);
  } catch (err) {
    if (err instanceof ApiError) return sendError(req, res, err);
    throw err;
  }
}

interface RequestHooks {
  onTask(): void;
  endWrite(): void;
  afterResponse(fn: () => void): void;
}

/** Permission → proxy to node → parameter validation → handler, as `rest_handler` orders them. */
function handle(
  sim: Simulator,
  principal: Principal,
  match: RouteMatch,
  merged: Record<string, unknown>,
  json: boolean,
  hooks: RequestHooks,
): HandlerResult | Promise<HandlerResult> {
  const { route, pathParams } = match;
  for (const [key, value] of Object.entries(pathParams)) {
    const given = merged[key];
    if (given !== undefined && toPerlString(given) !== value) {
      throw new ParamError({ [key]: 'duplicate parameter (already defined in URI) with conflicting values!' });
    }
  }
  const params: Record<string, unknown> = { ...merged, ...pathParams };
  route.permission(principal, params);
  const node = pathParams.node;
  if (node !== undefined && !sim.nodes.includes(node)) {
    throw new DieError(`hostname lookup '${node}' failed - failed to get address info for: ${node}: Name or service not known\n`);
  }
  const errors = validateParams(route.key, params, { json });
  if (Object.keys(errors).length > 0) throw new ParamError(errors);
  const strings: Record<string, string> = {};
  for (const [key, value] of Object.entries(params)) {
    const text = toPerlString(value);
    if (text === undefined) continue;
    // `delete`/`revert` lists may arrive NUL-joined from repeated form keys.
    strings[key] = paramSchema(route.key, key)?.format === 'pve-configid-list' ? text.replace(/\0/g, ',') : text;
  }
  const ctx: RequestContext = {
    sim,
    principal,
    params: strings,
    startTask: (taskNode, type, id, body, options = {}) => {
      hooks.onTask();
      return sim.tasks.start(taskNode, type, id, principal.token.id, body, {
        ...(options.atStart ? { atStart: true } : {}),
        onEnd: () => {
          options.onEnd?.();
          hooks.endWrite();
        },
      });
    },
    afterResponse: hooks.afterResponse,
  };
  return route.handler(ctx);
}

const BASE_HEADERS = {
  Server: 'pve-api-daemon/3.0',
  'Cache-Control': 'max-age=0',
  Pragma: 'no-cache',
};
const JSON_TYPE = 'application/json;charset=UTF-8';

/** First line of a message, safe for a status line. */
function reasonPhrase(message: string): string {
  const first = message.split('\n')[0] ?? '';
  return first.replace(/[^\x20-\x7e]/g, '?') || 'Error';
}

/**
 * `Expires`, the time of the answer to the second (all an HTTP date holds): formatted once a
 * second rather than for every answer.
 */
let expiresSecond = Number.NaN;
let expiresText = '';
function expiresNow(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== expiresSecond) {
    expiresSecond = second;
    expiresText = new Date(now).toUTCString();
  }
  return expiresText;
}

function sendJson(req: IncomingMessage, res: ServerResponse, status: number, reason: string, body: string): void {
  const expires = expiresNow();
  const length = Buffer.byteLength(body, 'utf8');
  const acceptEncoding = req.headers['accept-encoding'];
  // pve-http-server compresses only bodies over 1 KiB and only when the client asks for it.
  if (length > 1024 && acceptEncoding !== undefined && /\bgzip\b/.test(String(acceptEncoding))) {
    gzip(Buffer.from(body, 'utf8'), { level: 1 }, (err, compressed) => {
      if (err) {
        res.destroy(err);
        return;
      }
      res.writeHead(status, reason, {
        ...BASE_HEADERS,
        Expires: expires,
        'Content-Type': JSON_TYPE,
        'Content-Encoding': 'gzip',
        'Content-Length': compressed.length,
      });
      res.end(compressed);
    });
    return;
  }
  res.writeHead(status, reason, { ...BASE_HEADERS, Expires: expires, 'Content-Type': JSON_TYPE, 'Content-Length': length });
  // A string body goes out with the head as one chunk (node:http joins them), one write to the socket.
  res.end(body, 'utf8');
}

function sendResult(req: IncomingMessage, res: ServerResponse, result: HandlerResult): void {
  const data = 'json' in result ? result.json : JSON.stringify(result.data ?? null);
  const total = result.total ? `,"total":${result.total}` : '';
  sendJson(req, res, 200, 'OK', `{"data":${data}${total}}`);
}

function sendError(req: IncomingMessage, res: ServerResponse, err: ApiError): void {
  const errors = err instanceof ParamError ? `,"errors":${JSON.stringify(err.errors)}` : '';
  sendJson(req, res, err.status, reasonPhrase(err.message), `{"data":null${errors},"message":${JSON.stringify(err.message)}}`);
}

/** Errors raised outside the JSON formatter (auth, HTTP layer) carry no body at all. */
function sendEmpty(res: ServerResponse, status: number, reason: string): void {
  res.writeHead(status, reasonPhrase(reason), { ...BASE_HEADERS, Expires: expiresNow() });
  res.end();
}

function controlReply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function numberField(body: Record<string, unknown>, key: string): number {
  const value = body[key];
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new SimulatorError(`'${key}' must be a number`);
  return value;
}

function editField(body: Record<string, unknown>): OperatorEdit {
  const set = body.set;
  const del = body.delete;
  if (set !== undefined && (typeof set !== 'object' || set === null || Array.isArray(set)))
    throw new SimulatorError("'set' must be an object");
  if (del !== undefined && (!Array.isArray(del) || !del.every((d) => typeof d === 'string')))
    throw new SimulatorError("'delete' must be an array of strings");
  return { ...(set ? { set: set as Record<string, string | number> } : {}), ...(del ? { delete: del as string[] } : {}) };
}

async function control(sim: Simulator, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const method = req.method ?? 'GET';
  const raw = await readBody(req);
  let body: Record<string, unknown> = {};
  try {
    if (raw !== 'too-large' && raw.length > 0) body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new SimulatorError('body must be a JSON object');
    const guestMatch = /^\/_sim\/guests\/(\d+)$/.exec(path);
    if (method === 'GET' && path === '/_sim/stats') return controlReply(res, 200, sim.stats());
    if (method === 'GET' && path === '/_sim/requests') return controlReply(res, 200, sim.statsCollector.requests());
    if (method === 'GET' && guestMatch) {
      const guest = sim.getGuest(Number(guestMatch[1]));
      return guest ? controlReply(res, 200, guest) : controlReply(res, 404, { error: `no guest ${guestMatch[1]}` });
    }
    if (method !== 'POST') return controlReply(res, 404, { error: `unknown control endpoint ${method} ${path}` });
    switch (path) {
      case '/_sim/reset-stats':
        sim.resetStats();
        break;
      case '/_sim/latency':
        sim.setLatency(numberField(body, 'ms'));
        break;
      case '/_sim/rrd-lag':
        sim.setRrdLag(numberField(body, 'ms'));
        break;
      case '/_sim/task-ms':
        sim.setTaskMs(numberField(body, 'ms'));
        break;
      case '/_sim/failure-rate': {
        const methods = body.methods;
        if (methods !== undefined && (!Array.isArray(methods) || !methods.every((m) => typeof m === 'string'))) {
          throw new SimulatorError("'methods' must be an array of strings");
        }
        const mode = body.mode;
        if (mode !== undefined && mode !== 'error' && mode !== 'reset' && mode !== 'mixed')
          throw new SimulatorError("'mode' must be error, reset or mixed");
        sim.setFailureRate(numberField(body, 'rate'), {
          ...(methods ? { methods: methods as string[] } : {}),
          ...(mode ? { mode } : {}),
        });
        break;
      }
      case '/_sim/lock':
        if (typeof body.lock !== 'string') throw new SimulatorError("'lock' must be a string");
        void sim.holdLock(numberField(body, 'vmid'), body.lock, numberField(body, 'ms'));
        break;
      case '/_sim/operator-edit':
        sim.operatorEdit(numberField(body, 'vmid'), editField(body));
        break;
      case '/_sim/edit-after-next-read':
        sim.editAfterNextRead(numberField(body, 'vmid'), editField(body));
        break;
      case '/_sim/running':
        if (typeof body.running !== 'boolean') throw new SimulatorError("'running' must be a boolean");
        sim.setRunning(numberField(body, 'vmid'), body.running);
        break;
      case '/_sim/guests': {
        const type = body.type;
        if (!isGuestType(type)) throw new SimulatorError("'type' must be qemu or lxc");
        if (typeof body.node !== 'string') throw new SimulatorError("'node' must be a string");
        const config = body.config;
        if (typeof config !== 'string' && (typeof config !== 'object' || config === null))
          throw new SimulatorError("'config' must be a string or an object");
        return controlReply(
          res,
          200,
          sim.addGuest({
            vmid: numberField(body, 'vmid'),
            type,
            node: body.node,
            running: body.running === true,
            config: config as string | Record<string, string | number | boolean | undefined>,
            ...(typeof body.lock === 'string' ? { lock: body.lock } : {}),
          }),
        );
      }
      default:
        return controlReply(res, 404, { error: `unknown control endpoint ${method} ${path}` });
    }
    return controlReply(res, 200, { ok: true });
  } catch (err) {
    if (err instanceof SimulatorError || err instanceof SyntaxError) return controlReply(res, 400, { error: err.message });
    if (err instanceof ApiError) return controlReply(res, 409, { error: err.message, status: err.status });
    throw err;
  }
}
