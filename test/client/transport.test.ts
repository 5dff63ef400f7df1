/**
 * Transport behaviour against a tiny local HTTP server: retries (reads only), timeouts, bounded
 * concurrency, request encoding, reason-phrase fallback and token redaction. Proxmox semantics
 * (error texts, tasks) are covered against the simulator in sim.test.ts.
 */
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PveClient, type PveClientOptions } from '../../src/pve/client.js';
import type { SlowRequest } from '../../src/pve/transport.js';
import {
  PveAlreadyExistsError,
  PveError,
  PveLockedError,
  PveReadOnlyError,
  PveTaskFailedError,
  PveTransportError,
} from '../../src/pve/errors.js';
import { sendJson, startTinyServer, type TinyHandler, type TinyServer } from './helpers/tiny-server.js';

const TOKEN = 'gitops@pve!ci=7d0a3c3e-1f9b-4e3b-9d7c-5a1c2b3d4e5f';
const SECRET = '7d0a3c3e-1f9b-4e3b-9d7c-5a1c2b3d4e5f';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(handler: TinyHandler, options: Partial<PveClientOptions> = {}): Promise<{ server: TinyServer; client: PveClient }> {
  const server = await startTinyServer(handler);
  const client = new PveClient({ cluster: 'lab', url: server.url, token: TOKEN, retryDelayMs: 1, ...options });
  cleanups.push(
    () => server.close(),
    () => client.close(),
  );
  return { server, client };
}

const ok =
  (data: unknown): TinyHandler =>
  (_req, res) =>
    sendJson(res, 200, { data });

describe('reads are retried on transient failures', () => {
  it('retries a GET after 503 and connection resets, then succeeds', async () => {
    const { server, client } = await setup((req, res, _body, n) => {
      if (n === 0) return sendJson(res, 503, { data: null }, 'Service Unavailable');
      if (n === 1) return void req.socket.destroy();
      sendJson(res, 200, { data: { version: '9.1.1', release: '9.1', repoid: 'abc' } });
    });
    await expect(client.version()).resolves.toMatchObject({ version: '9.1.1' });
    expect(server.requests).toHaveLength(3);
  });

  it('gives up after `retries` extra attempts with the last status', async () => {
    const { server, client } = await setup((_req, res) => sendJson(res, 502, { data: null }, 'Bad Gateway'), { retries: 2 });
    const err = await client.version().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveError);
    expect((err as PveError).status).toBe(502);
    expect((err as PveError).cluster).toBe('lab');
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 500 that carries a Proxmox answer', async () => {
    const { server, client } = await setup((_req, res) =>
      sendJson(res, 500, { data: null, message: 'VM is locked (backup)\n' }, 'VM is locked (backup)'),
    );
    await expect(client.getConfig('pve', 'qemu', 100)).rejects.toBeInstanceOf(PveLockedError);
    expect(server.requests).toHaveLength(1);
  });

  it('does not repeat a read that timed out: one timeout is the longest wait', async () => {
    const { server, client } = await setup(
      (_req, res, _body, n) => {
        if (n === 0) return; // never answers
        sendJson(res, 200, { data: [] });
      },
      { timeoutMs: 300, retries: 3 },
    );
    const err = await client.nodes().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveTransportError);
    expect(err).toMatchObject({ code: 'TIMEOUT', retryable: true, message: 'GET /nodes timed out after 300 ms' });
    expect(server.requests).toHaveLength(1);
  });

  it('reports a refused connection as retryable and not sent', async () => {
    const server = await startTinyServer(ok(null));
    const url = server.url;
    await server.close();
    const client = new PveClient({ cluster: 'lab', url, token: TOKEN, retries: 1, retryDelayMs: 1 });
    cleanups.push(() => client.close());
    const err = await client.start('pve', 'qemu', 100).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveTransportError);
    expect((err as PveTransportError).retryable).toBe(true);
    expect((err as PveTransportError).code).toBe('ECONNREFUSED');
    expect((err as Error).message).toMatch(/not sent/);
  });
});

describe('writes are never retried', () => {
  it('a connection lost during a write surfaces once, as possibly applied', async () => {
    const { server, client } = await setup((req) => void req.socket.destroy(), { retries: 5 });
    const err = await client.updateConfig('pve', 'lxc', 101, { set: { memory: 1024 }, digest: 'd'.repeat(40) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveTransportError);
    expect((err as PveTransportError).retryable).toBe(false);
    expect((err as Error).message).toMatch(/may or may not have happened/);
    expect(server.requests).toHaveLength(1);
  });

  it('a 503 on a write is not retried', async () => {
    const { server, client } = await setup((_req, res) => sendJson(res, 503, { data: null }, 'Service Unavailable'), { retries: 5 });
    const err = await client.destroyGuest('pve', 'qemu', 100).catch((e: unknown) => e);
    expect((err as PveError).status).toBe(503);
    expect(server.requests).toHaveLength(1);
  });

  it('a write that times out is not retried and is not called safe', async () => {
    const { server, client } = await setup(() => undefined, { timeoutMs: 200, retries: 5 });
    const err = await client.stop('pve', 'qemu', 100).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveTransportError);
    expect((err as PveTransportError).code).toBe('TIMEOUT');
    expect((err as PveTransportError).retryable).toBe(false);
    expect((err as Error).message).toMatch(/timed out after 200 ms; the write may or may not have happened/);
    expect(server.requests).toHaveLength(1);
  });
});

describe('timeouts', () => {
  it('a connection that never completes its TLS handshake fails after the connect timeout, once', async () => {
    // A TCP server that accepts and never speaks: the TLS handshake hangs.
    const sockets = new Set<Socket>();
    const server = createNetServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const { port } = server.address() as AddressInfo;
    const client = new PveClient({ cluster: 'lab', url: `https://127.0.0.1:${port}`, token: TOKEN, connectTimeoutMs: 200, retries: 3 });
    cleanups.push(() => client.close());
    const err = await client.version().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveTransportError);
    expect(err).toMatchObject({ code: 'UND_ERR_CONNECT_TIMEOUT', retryable: true });
    expect((err as Error).message).toMatch(/the request was not sent/);
    expect(sockets.size).toBe(1);
  });

  it('reports a request that waits for its answer longer than slowRequestMs, then completes it', async () => {
    const slow: SlowRequest[] = [];
    let answer: (() => void) | undefined;
    const reported = new Promise<void>((resolve) => (answer = resolve));
    const { client } = await setup(
      async (_req, res) => {
        await reported;
        sendJson(res, 200, { data: [] });
      },
      {
        slowRequestMs: 20,
        onSlowRequest: (event) => {
          slow.push(event);
          answer?.();
        },
      },
    );
    await expect(client.nodes()).resolves.toEqual([]);
    expect(slow[0]).toMatchObject({ cluster: 'lab', method: 'GET', path: '/nodes', timeoutMs: 30_000 });
  });
});

describe('concurrency', () => {
  it('keeps at most `concurrency` requests in flight', async () => {
    const held: (() => void)[] = [];
    let releaseAll = false;
    const { server, client } = await setup(
      (_req, res) => {
        const answer = (): void => sendJson(res, 200, { data: [] });
        if (releaseAll) answer();
        else held.push(answer);
      },
      { concurrency: 3 },
    );
    const all = Promise.all(Array.from({ length: 10 }, () => client.nodes()));
    await vi.waitFor(() => expect(server.requests).toHaveLength(3));
    expect(client.inFlight).toBe(3);
    releaseAll = true;
    for (const answer of held.splice(0)) answer();
    await all;
    expect(server.requests).toHaveLength(10);
    expect(server.maxInFlight).toBe(3);
    expect(client.inFlight).toBe(0);
  });
});

describe('read-only clients', () => {
  it.each([
    ['updateConfig', (c: PveClient) => c.updateConfig('pve', 'qemu', 100, { set: { memory: 1 }, digest: 'x' })],
    ['createGuest', (c: PveClient) => c.createGuest('pve', 'qemu', 100, {})],
    ['start', (c: PveClient) => c.start('pve', 'qemu', 100)],
    ['destroyGuest', (c: PveClient) => c.destroyGuest('pve', 'lxc', 100)],
    ['request PUT', (c: PveClient) => c.request('PUT', '/nodes/pve/qemu/100/resize', { disk: 'scsi0', size: '+1G' })],
  ])('%s is refused before any request', async (_name, call) => {
    const { server, client } = await setup(ok('UPID:pve:00000001:00000001:00000001:qmstart:100:x@pve!y:'), { readOnly: true });
    const err = await call(client).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveReadOnlyError);
    expect(server.requests).toHaveLength(0);
    expect(server.connections).toBe(0);
  });

  it('still reads', async () => {
    const { server, client } = await setup(ok([{ node: 'pve', status: 'online' }]), { readOnly: true });
    await expect(client.nodes()).resolves.toEqual([{ node: 'pve', status: 'online' }]);
    expect(server.requests).toHaveLength(1);
  });
});

describe('request encoding', () => {
  it('form-encodes write bodies, joins deletes with commas, sends booleans as 1/0', async () => {
    const { server, client } = await setup((req, res) =>
      sendJson(res, 200, { data: req.method === 'PUT' ? null : 'UPID:pve:0000AB12:0011FF00:6700AA00:qmconfig:100:gitops@pve!ci:' }),
    );
    await client.updateConfig('pve', 'lxc', 101, {
      set: { memory: 2048, tags: 'a;b c+d', onboot: true },
      delete: ['mp0', 'description'],
      digest: 'f'.repeat(40),
    });
    const put = server.requests[0]!;
    expect(put.method).toBe('PUT');
    expect(put.url).toBe('/api2/json/nodes/pve/lxc/101/config');
    expect(put.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(put.headers.authorization).toBe(`PVEAPIToken=${TOKEN}`);
    expect(Object.fromEntries(new URLSearchParams(put.body))).toEqual({
      memory: '2048',
      tags: 'a;b c+d',
      onboot: '1',
      delete: 'mp0,description',
      digest: 'f'.repeat(40),
    });
  });

  it('puts GET and DELETE parameters in the query and sends no body', async () => {
    const { server, client } = await setup((req, res) =>
      sendJson(res, 200, {
        data:
          req.method === 'GET'
            ? { digest: 'x', memory: '512', lxc: [['a', 'b']] }
            : 'UPID:pve:0000AB12:0011FF00:6700AA00:qmdestroy:100:gitops@pve!ci:',
      }),
    );
    await expect(client.getConfig('pve', 'qemu', 100, { current: true })).resolves.toEqual({ digest: 'x', memory: '512' });
    await client.destroyGuest('pve', 'qemu', 100, { purge: true, destroyUnreferencedDisks: false });
    expect(server.requests.map((r) => [r.method, r.url, r.body])).toEqual([
      ['GET', '/api2/json/nodes/pve/qemu/100/config?current=1', ''],
      ['DELETE', '/api2/json/nodes/pve/qemu/100?purge=1&destroy-unreferenced-disks=0', ''],
    ]);
  });

  it('sends nothing for an empty config change', async () => {
    const { server, client } = await setup(ok(null));
    await client.updateConfig('pve', 'qemu', 100, { set: {}, delete: [], digest: 'a' });
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a config change without a digest', async () => {
    const { server, client } = await setup(ok(null));
    await expect(client.updateConfig('pve', 'qemu', 100, { set: { memory: 1 }, digest: '' })).rejects.toThrow(/digest/);
    expect(server.requests).toHaveLength(0);
  });

  it('accepts nextid as a string or a number', async () => {
    const { client } = await setup((_req, res, _b, n) => sendJson(res, 200, { data: n === 0 ? '105' : 106 }));
    await expect(client.nextId()).resolves.toBe(105);
    await expect(client.nextId()).resolves.toBe(106);
  });

  it('rejects a response of the wrong shape with a PveError', async () => {
    const { client } = await setup(ok({ release: 9 }));
    const err = await client.version().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveError);
    expect((err as Error).message).toMatch(/unexpected response shape at version/);
  });

  it('reads the cluster listing: guests only, with the fields the engine uses', async () => {
    const { client } = await setup(
      ok([
        { id: 'qemu/100', type: 'qemu', vmid: 100, node: 'pve', name: 'web', status: 'running', tags: 'a;b', template: 0, cpu: 0.1 },
        { id: 'lxc/101', type: 'lxc', vmid: 101, node: 'pve', status: 'stopped', lock: 'backup', template: '1' },
        { id: 'storage/pve/local', type: 'storage', node: 'pve', storage: 'local' },
        { id: 'qemu/102', type: 'qemu', vmid: 102 },
      ]),
    );
    await expect(client.clusterResources()).resolves.toEqual([
      { vmid: 100, type: 'qemu', node: 'pve', name: 'web', status: 'running', tags: 'a;b', template: false },
      { vmid: 101, type: 'lxc', node: 'pve', status: 'stopped', lock: 'backup', template: true },
    ]);
  });

  it.each([
    ['a vmid as text', { type: 'qemu', vmid: '100', node: 'pve' }, /unexpected response shape at 0\.vmid/],
    ['a name that is not text', { type: 'qemu', vmid: 100, node: 'pve', name: 7 }, /unexpected response shape at 0\.name/],
    ['no type', { vmid: 100, node: 'pve' }, /unexpected response shape at 0\.type/],
  ])('rejects a cluster listing with %s as the schema says', async (_name, entry, message) => {
    const { client } = await setup(ok([entry]));
    const err = await client.clusterResources().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveError);
    expect((err as Error).message).toMatch(message);
  });

  it('reads a pending list as Proxmox sends it, and rejects one of another shape as the schema says', async () => {
    const entries = [
      { key: 'digest', value: 'abc' },
      { key: 'memory', value: 2048, pending: 4096 },
      { key: 'net1', value: 'virtio,bridge=vmbr1', delete: 1 },
    ];
    const { client } = await setup((_req, res, _b, n) => sendJson(res, 200, { data: n === 0 ? entries : [{ key: 'memory', value: [1] }] }));
    await expect(client.getPending('pve', 'qemu', 100)).resolves.toEqual(entries);
    const err = await client.getPending('pve', 'qemu', 100).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveError);
    expect((err as Error).message).toMatch(/unexpected response shape at 0\.value/);
  });

  it('pages through a long task log using total', async () => {
    const lines = Array.from({ length: 1203 }, (_, i) => ({ n: i + 1, t: `line ${i + 1}` }));
    const { server, client } = await setup((req, res) => {
      const q = new URL(req.url ?? '', 'http://x').searchParams;
      const start = Number(q.get('start'));
      const limit = Number(q.get('limit'));
      sendJson(res, 200, { data: lines.slice(start, start + limit), total: lines.length });
    });
    const log = await client.taskLog('pve', 'UPID:pve:0000AB12:0011FF00:6700AA00:qmconfig:100:gitops@pve!ci:');
    expect(log).toEqual(lines);
    expect(server.requests).toHaveLength(3);
    expect(server.requests[0]!.url).toBe(
      '/api2/json/nodes/pve/tasks/UPID%3Apve%3A0000AB12%3A0011FF00%3A6700AA00%3Aqmconfig%3A100%3Agitops%40pve!ci%3A/log?start=0&limit=500',
    );
  });
});

describe('old servers: the reason phrase carries the text', () => {
  it('classifies a 500 whose body is only {"data":null}', async () => {
    const { client } = await setup((_req, res) =>
      sendJson(res, 500, { data: null }, "unable to create VM 100 - VM 100 already exists on node 'pve'"),
    );
    const err = await client.createGuest('pve', 'qemu', 100, { memory: 512 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveAlreadyExistsError);
    expect(err).toMatchObject({ vmid: 100, node: 'pve', status: 500, method: 'POST', path: '/nodes/pve/qemu', cluster: 'lab' });
  });
});

describe('waitForTask', () => {
  const upid = 'UPID:pve:0000AB12:0011FF00:6700AA00:qmstart:100:gitops@pve!ci:';
  const taskServer =
    (exitstatus: string, runningPolls: number): TinyHandler =>
    (_req, res, _b, n) =>
      sendJson(res, 200, {
        data: n < runningPolls ? { upid, status: 'running' } : { upid, status: 'stopped', exitstatus },
      });

  it('resolves on WARNINGS: N and reports progress', async () => {
    const { client } = await setup(taskServer('WARNINGS: 2', 2));
    const seen: string[] = [];
    const status = await client.waitForTask('pve', upid, { intervalMs: 5, onProgress: (s) => seen.push(s.status) });
    expect(status.exitstatus).toBe('WARNINGS: 2');
    expect(seen).toEqual(['running', 'running', 'stopped']);
  });

  it('rejects with the exit status and a typed cause', async () => {
    const { client } = await setup(taskServer("can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout", 1));
    const err = await client.waitForTask('pve', upid, { intervalMs: 5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveTaskFailedError);
    expect((err as PveTaskFailedError).upid).toBe(upid);
    expect((err as PveTaskFailedError).cause).toBeInstanceOf(PveLockedError);
  });
});

describe('the token never leaks', () => {
  it('is redacted from server texts that echo it, and absent from the client inspection', async () => {
    const { client } = await setup((req, res) => {
      const auth = String(req.headers.authorization);
      sendJson(res, 500, { data: null, message: `bad header ${auth} secret ${SECRET}\n` }, `bad ${auth}`);
    });
    const err = await client.getConfig('pve', 'qemu', 100).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PveError);
    for (const text of [
      String(err),
      (err as Error).stack ?? '',
      JSON.stringify(err),
      inspect(err, { depth: 5 }),
      inspect(client),
      JSON.stringify(client),
      String(client),
    ]) {
      expect(text).not.toContain(SECRET);
    }
    expect((err as Error).message).toContain('[REDACTED]');
    expect(inspect(client)).toContain("cluster: 'lab'");
  });
});

describe('logging', () => {
  it('logs retries and requests without the token', async () => {
    const lines: unknown[] = [];
    const logger = {
      debug: (obj: object, msg?: string) => lines.push([obj, msg]),
      warn: (obj: object, msg?: string) => lines.push([obj, msg]),
    };
    const { client } = await setup(
      (req, res, _body, n) => {
        if (n === 0)
          return sendJson(res, 503, { data: null, message: `echo ${String(req.headers.authorization)}\n` }, 'Service Unavailable');
        sendJson(res, 200, { data: [] });
      },
      { logger },
    );
    await client.nodes();
    const text = JSON.stringify(lines);
    expect(text).toContain('proxmox read failed, retrying');
    expect(text).toContain('[REDACTED]');
    expect(text).not.toContain(SECRET);
  });
});

describe('close', () => {
  it('is idempotent and later requests are refused without I/O', async () => {
    const { server, client } = await setup(ok([]));
    await client.nodes();
    await client.close();
    await client.close();
    await expect(client.nodes()).rejects.toThrow(/closed/);
    expect(server.requests).toHaveLength(1);
  });
});

describe('the answer envelope', () => {
  it('takes `data` (and a numeric `total`) as answered, and refuses an answer without the envelope', async () => {
    const answers: unknown[] = [
      { data: [1, 2], total: 2, extra: 'kept' },
      { data: null },
      { total: 2 },
      { data: 1, total: 'two' },
      [1],
      'text',
    ];
    const { client } = await setup((_req, res, _body, n) => sendJson(res, 200, answers[n]));
    await expect(client.request('GET', '/a')).resolves.toEqual([1, 2]);
    await expect(client.request('GET', '/a')).resolves.toBeNull();
    for (let n = 2; n < answers.length; n++) {
      const err = await client.request('GET', '/a').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PveError);
      expect((err as PveError).message).toBe('response has no data envelope');
    }
  });
});
