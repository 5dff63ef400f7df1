import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { StatsCollector } from '../../src/pve/sim/stats.js';
import { api, waitTask, WEB_CONFIG, startGuestSimulator, WEB_GUEST } from './helpers.js';

let sim: RunningSimulator;

beforeEach(async () => {
  sim = await startGuestSimulator([WEB_GUEST, { vmid: 101, type: 'qemu', node: 'pve-01', config: WEB_CONFIG }], 200);
});
afterEach(() => sim.close());

async function control(path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await request(`${sim.url}/_sim/${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.statusCode, json: await res.body.json() };
}

describe('/_sim/stats', () => {
  it('counts requests by route template and method, and writes per guest', async () => {
    await api(sim, 'GET', '/nodes/pve-01/qemu/100/pending');
    await api(sim, 'GET', '/nodes/pve-01/qemu/101/pending');
    await api(sim, 'GET', '/cluster/resources?type=vm');
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '3' } });
    const { json } = await control('stats');
    expect(json).toEqual({
      requests: {
        total: 4,
        byRoute: {
          'GET /nodes/{node}/qemu/{vmid}/pending': 2,
          'GET /cluster/resources': 1,
          'PUT /nodes/{node}/qemu/{vmid}/config': 1,
        },
        byMethod: { GET: 3, PUT: 1 },
      },
      writes: { total: 1 },
      guests: { '101': { writes: 1, maxConcurrentWrites: 1 } },
    });
    expect(sim.sim.stats()).toEqual(json);
    expect((await control('reset-stats', {})).json).toEqual({ ok: true });
    expect(sim.sim.stats()).toEqual({ requests: { total: 0, byRoute: {}, byMethod: {} }, writes: { total: 0 }, guests: {} });
  });

  it('maxConcurrentWrites counts a write until its task ends', async () => {
    const first = await api(sim, 'POST', '/nodes/pve-01/qemu/100/config', { form: { cores: '4' } });
    // The first task is still running (taskMs 200): a second writer overlaps it.
    const second = await api(sim, 'POST', '/nodes/pve-01/qemu/100/config', { form: { cores: '5' } });
    await waitTask(sim, 'pve-01', first.body!.data as string);
    await waitTask(sim, 'pve-01', second.body!.data as string);
    const third = await api(sim, 'POST', '/nodes/pve-01/qemu/101/config', { form: { cores: '4' } });
    await waitTask(sim, 'pve-01', third.body!.data as string);
    const fourth = await api(sim, 'POST', '/nodes/pve-01/qemu/101/config', { form: { cores: '5' } });
    await waitTask(sim, 'pve-01', fourth.body!.data as string);
    expect(sim.sim.stats().guests).toEqual({
      '100': { writes: 2, maxConcurrentWrites: 2 },
      '101': { writes: 2, maxConcurrentWrites: 1 },
    });
  });
});

describe('/_sim control endpoints', () => {
  it('lock, operator-edit and edit-after-next-read act like the library calls', async () => {
    expect((await control('lock', { vmid: 101, lock: 'backup', ms: 60_000 })).json).toEqual({ ok: true });
    const locked = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '3' } });
    expect(locked.body?.message).toBe('VM is locked (backup)\n');

    expect((await control('operator-edit', { vmid: 100, set: { cores: 8 } })).json).toEqual({ ok: true });
    const pending = (await api(sim, 'GET', '/nodes/pve-01/qemu/100/pending')).body!.data as unknown[];
    expect(pending).toContainEqual({ key: 'cores', value: 2, pending: 8 });

    await control('edit-after-next-read', { vmid: 100, delete: ['onboot'] });
    const read = (await api(sim, 'GET', '/nodes/pve-01/qemu/100/config')).body!.data as Record<string, unknown>;
    expect(read.onboot).toBe(1);
    expect(sim.sim.getGuest(100)!.digest).not.toBe(read.digest);

    const guest = await control('guests/100');
    expect(guest.json).toMatchObject({ vmid: 100, type: 'qemu', node: 'pve-01', running: true });
    expect((await control('operator-edit', { vmid: 'x' })).status).toBe(400);
  });

  it('latency and failure injection', async () => {
    await control('failure-rate', { rate: 1, methods: ['PUT'], mode: 'error' });
    const failed = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '3' } });
    expect(failed.status).toBe(500);
    expect(failed.body).toEqual({ data: null, message: 'got timeout\n' });
    expect((await api(sim, 'GET', '/version')).status).toBe(200);
    await control('failure-rate', { rate: 1, methods: ['GET'], mode: 'reset' });
    await expect(api(sim, 'GET', '/version')).rejects.toThrow();
    await control('failure-rate', { rate: 0 });
    expect((await api(sim, 'GET', '/version')).status).toBe(200);
    expect((await control('latency', { ms: 1 })).json).toEqual({ ok: true });
    expect(sim.sim.latencyMs).toBe(1);
  });
});

describe('/_sim/requests', () => {
  it('journals every API request with its route, parameters (passwords hidden) and status, until reset', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '4', cipassword: 'secret-pw' } });
    await api(sim, 'GET', '/nodes/pve-01/qemu/999/config?current=1');
    const { json } = await control('requests');
    expect(json).toEqual([
      {
        method: 'PUT',
        path: '/nodes/pve-01/qemu/101/config',
        route: 'PUT /nodes/{node}/qemu/{vmid}/config',
        params: { cores: '4', cipassword: '<hidden>' },
        status: 200,
      },
      {
        method: 'GET',
        path: '/nodes/pve-01/qemu/999/config',
        route: 'GET /nodes/{node}/qemu/{vmid}/config',
        params: { current: '1' },
        status: 500,
      },
    ]);
    await control('reset-stats', {});
    expect((await control('requests')).json).toEqual([]);
  });
});

describe('the request journal', () => {
  it('keeps the last 1000 requests, oldest first, however many came before', () => {
    const stats = new StatsCollector();
    const entry = (n: number) => ({ method: 'GET', path: `/p/${n}`, route: 'GET /p', params: { n: String(n) }, status: 200 });
    for (let n = 0; n < 2500; n++) {
      stats.record(entry(n));
      if (n === 999 || n === 1000 || n === 1998 || n === 1999 || n === 2499) {
        const journal = stats.requests();
        expect(journal).toHaveLength(1000);
        expect(journal[0]).toEqual(entry(n - 999));
        expect(journal[999]).toEqual(entry(n));
      }
    }
  });
});
