/**
 * A client that opens its connections ahead (`preconnect`, for a command reading every guest)
 * against a tiny HTTPS server: the others open once the first is made, the requests that follow
 * use them instead of connecting, and closing the client drops those never used.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PveClient } from '../../src/pve/client.js';
import { PveTlsError } from '../../src/pve/errors.js';
import { makeTestCerts, type TestCerts } from './helpers/certs.js';
import { sendJson, startTinyServer, type TinyServer } from './helpers/tiny-server.js';

const TOKEN = 'gitops@pve!ci=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
const VERSION = { version: '9.1.1', release: '9.1', repoid: 'abc' };

let certs: TestCerts;
beforeAll(() => {
  certs = makeTestCerts();
});

const servers: TinyServer[] = [];
afterAll(async () => {
  for (const server of servers) await server.close();
});

/** A server answering the first request at once and the next `held` together, once all have arrived. */
async function serverHolding(held: number, cert = certs.leaf): Promise<TinyServer> {
  const waiting: ServerResponse[] = [];
  const server = await startTinyServer((_req, res, _body, n) => {
    if (n === 0) return sendJson(res, 200, { data: VERSION });
    waiting.push(res);
    if (waiting.length === held) for (const r of waiting.splice(0)) sendJson(r, 200, { data: VERSION });
  }, cert);
  servers.push(server);
  return server;
}

function client(server: TinyServer, concurrency: number): PveClient {
  return new PveClient({ cluster: 'lab', url: server.url, token: TOKEN, ca: certs.caPem, concurrency, retries: 0, preconnect: true });
}

describe('connections opened ahead', () => {
  it('opens the others once the first is made, and the requests that follow use them', async () => {
    const server = await serverHolding(3);
    const c = client(server, 4);
    try {
      await c.version();
      // Before any other request: the three connections the reads will use are open.
      await server.untilConnections(4);
      expect(server.requests).toHaveLength(1);
      // Three requests in flight at once (the server holds them until all arrived) connect no more.
      await Promise.all([c.version(), c.version(), c.version()]);
      expect(server.requests).toHaveLength(4);
      expect(server.connections).toBe(4);
    } finally {
      await c.close();
    }
  });

  it('closes the connections never used when the client closes', async () => {
    const server = await serverHolding(3);
    const c = client(server, 4);
    await c.version();
    await server.untilConnections(4);
    await c.close();
    // Left open, they would keep a finished command's process alive until the server drops them.
    await server.untilNoSockets();
    expect(server.requests).toHaveLength(1);
  });

  it('opens none ahead when the first connection fails verification, and sends nothing', async () => {
    const server = await serverHolding(1, certs.misnamed);
    const c = client(server, 4);
    try {
      await expect(c.version()).rejects.toBeInstanceOf(PveTlsError);
      await expect(c.version()).rejects.toBeInstanceOf(PveTlsError);
      // One connection per attempt, none opened ahead of a server that failed verification.
      expect(server.connections).toBe(2);
      expect(server.requests).toHaveLength(0);
    } finally {
      await c.close();
    }
  });
});
