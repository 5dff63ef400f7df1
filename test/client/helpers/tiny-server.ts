/**
 * A tiny HTTP(S) server for transport-level client tests (retries, timeouts, TLS, concurrency):
 * it records every request and counts how many are in flight at once.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { EventEmitter } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** Handles the n-th request (0-based); the body is already read. */
export type TinyHandler = (req: IncomingMessage, res: ServerResponse, body: string, n: number) => void | Promise<void>;

export interface TinyServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Raw TCP connections accepted (TLS: including ones refused by the client after the handshake). */
  connections: number;
  inFlight: number;
  maxInFlight: number;
  /** Resolves once `n` connections have been accepted in all. */
  untilConnections(n: number): Promise<void>;
  /** Resolves once every accepted connection has closed. */
  untilNoSockets(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1; pass `tls` for HTTPS. */
export async function startTinyServer(handler: TinyHandler, tls?: { key: string; cert: string }): Promise<TinyServer> {
  const sockets = new Set<Socket>();
  const changed = new EventEmitter();
  const until = (done: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (!done()) return;
        changed.off('change', check);
        resolve();
      };
      changed.on('change', check);
      check();
    });
  const state: TinyServer = {
    url: '',
    port: 0,
    requests: [],
    connections: 0,
    inFlight: 0,
    maxInFlight: 0,
    untilConnections: (n) => until(() => state.connections >= n),
    untilNoSockets: () => until(() => sockets.size === 0),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const n = state.requests.length;
    const chunks: Buffer[] = [];
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    res.on('close', () => state.inFlight--);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      state.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      void Promise.resolve(handler(req, res, body, n)).catch((err: unknown) => {
        res.statusCode = 599;
        res.end(String(err));
      });
    });
  };
  const server: Server = tls ? createHttpsServer({ key: tls.key, cert: tls.cert }, onRequest) : createHttpServer(onRequest);
  server.on('connection', (socket: Socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      changed.emit('change');
    });
    changed.emit('change');
  });
  // TLS handshakes the client aborts surface here; they are expected in pinning tests.
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as AddressInfo).port;
  state.url = `${tls ? 'https' : 'http'}://127.0.0.1:${state.port}`;
  return state;
}

/** Sends a Proxmox-style JSON response. */
export function sendJson(res: ServerResponse, status: number, body: unknown, reason?: string): void {
  const text = JSON.stringify(body);
  res.writeHead(status, reason ?? '', { 'content-type': 'application/json;charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
