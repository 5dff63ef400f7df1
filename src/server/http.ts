/**
 * The App's HTTP side on node:http: the webhook handler at the webhook path, and the
 * health endpoints. `GET /healthz` answers 200 while the process serves (liveness); `GET /readyz`
 * answers 200 only while the process can do its work — Redis reachable and, for workers, the
 * workers running — and 503 with the reasons otherwise (readiness: a load balancer stops sending
 * webhooks to a process that could not enqueue them).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** What a readiness check found. */
export interface Readiness {
  ready: boolean;
  /** Why not, one short line each. */
  problems: string[];
}

/** A route outside the webhook middleware (`/metrics`, say); answers the request itself. */
export type HttpRoute = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** Options of {@link createHttpServer}. */
interface HttpServerOptions {
  /**
   * The webhook gate, then Probot's handlers (`web-role.ts`); absent in a worker-only process.
   * Resolves true when it answered.
   */
  webhooks?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
  webhookPath: string;
  readiness: () => Promise<Readiness>;
  /** More `GET` routes by path. */
  routes?: Readonly<Record<string, HttpRoute>>;
  onError?: (error: unknown) => void;
}

function send(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}

/** The App's HTTP server, not yet listening. */
export function createHttpServer(options: HttpServerOptions): Server {
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && path === '/healthz') return send(res, 200, 'ok\n');
    if (req.method === 'GET' && path === '/readyz') {
      const readiness = await options.readiness();
      return readiness.ready ? send(res, 200, 'ready\n') : send(res, 503, `not ready: ${readiness.problems.join('; ')}\n`);
    }
    const route = req.method === 'GET' ? options.routes?.[path] : undefined;
    if (route) return route(req, res);
    // The webhooks handler bounds the body and checks its signature before reading it whole (`webhook-gate.ts`).
    if (options.webhooks && path === options.webhookPath && (await options.webhooks(req, res))) return;
    send(res, 404, 'not found\n');
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      options.onError?.(error);
      if (!res.headersSent) send(res, 500, 'internal error\n');
      else res.destroy();
    });
  });
  // Webhook bodies are small and answered at once: a slow client must not hold a socket forever.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  return server;
}
