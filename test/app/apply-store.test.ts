/**
 * The Redis side of merge-to-apply on a real Redis: the FIFO of tickets per guest (merge order,
 * a started head never overtaken), results fenced by the guest lock, and the per-cluster and
 * per-node slots shared by several processes (each instance here has connections of its own, as
 * a worker process would).
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { type ApplyRun, ApplyStore, type GuestProgress } from '../../src/queue/apply/apply-store.js';
import { acquireLock } from '../../src/queue/redis-lock.js';
import { RedisSlots } from '../../src/queue/redis-slots.js';
import { makeGuestPlan } from '../helpers/factories.js';

const connections: Redis[] = [];
let prefix: string;

function connect(): Redis {
  const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 3 });
  connections.push(redis);
  return redis;
}

beforeEach(() => {
  prefix = `t-${randomBytes(6).toString('hex')}:state`;
});

afterEach(() => {
  for (const redis of connections.splice(0)) redis.disconnect();
});

const GUEST = 'lab/100101';

function run(id: string, order: number, guests = [GUEST]): ApplyRun {
  return {
    id,
    repo: { id: 7, owner: 'acme', name: 'estate' },
    pr: 1,
    installationId: 1,
    headSha: 'a'.repeat(40),
    mergeSha: 'b'.repeat(40),
    trigger: 'merge',
    createdAt: new Date().toISOString(),
    order,
    guests,
  };
}

const queued = (): GuestProgress => ({ cluster: 'lab', name: 'app-01', vmid: 100101, node: 'pve-01', status: 'queued', steps: [] });

async function started(store: ApplyStore, r: ApplyRun): Promise<void> {
  await store.createRun(r, []);
  await store.appendTickets(r, queued);
}

describe('the FIFO of a guest', () => {
  it('runs merges in merge order whatever order they arrive in, and never puts a late one before a head that started', async () => {
    const store = new ApplyStore(connect(), prefix);
    // The later merge (order 20) arrives first, the earlier (10) next: the earlier goes first.
    await started(store, run('later', 20));
    await started(store, run('earlier', 10));
    expect(await store.claim(GUEST, 'later')).toEqual({ state: 'behind', head: 'earlier' });
    expect(await store.claim(GUEST, 'earlier')).toEqual({ state: 'head', head: 'earlier' });
    // Once the head has started, a merge older still goes right behind it, not before.
    await started(store, run('oldest', 5));
    expect(await store.head(GUEST)).toBe('earlier');
    const done: GuestProgress = { ...queued(), status: 'applied' };
    expect(await store.finish('earlier', GUEST, done)).toEqual({ state: 'done', next: 'oldest' });
    expect(await store.claim(GUEST, 'oldest')).toEqual({ state: 'head', head: 'oldest' });
    expect(await store.finish('oldest', GUEST, done)).toEqual({ state: 'done', next: 'later' });
    expect(await store.finish('later', GUEST, done)).toEqual({ state: 'done' });
    expect(await store.claim(GUEST, 'later')).toEqual({ state: 'gone' });
  });

  it('records progress and results only while the guest lock is the writer’s, and keeps the first result', async () => {
    const redis = connect();
    const store = new ApplyStore(redis, prefix);
    const r = run('r1', 1);
    await started(store, r);
    const lock = await acquireLock(redis, store.guestLockKey(GUEST), { ttlMs: 5000 });
    if (!lock) throw new Error('lock not taken');
    const stale = { key: lock.key, token: lock.token - 1 };
    const fence = { key: lock.key, token: lock.token };
    const running: GuestProgress = { ...queued(), status: 'running' };
    expect(await store.setProgress('r1', GUEST, running, stale)).toBe('refused');
    expect(await store.setProgress('r1', GUEST, running, fence)).toBe('written');
    expect(await store.setProgress('r1', GUEST, running, fence)).toBe('unchanged');
    expect(await store.finish('r1', GUEST, { ...running, status: 'applied' }, { fence: stale })).toEqual({ state: 'lost' });
    expect(await store.head(GUEST)).toBe('r1');
    expect(await store.finish('r1', GUEST, { ...running, status: 'applied' }, { fence })).toEqual({ state: 'done' });
    // A second result (a duplicate run of the job) changes nothing.
    expect(await store.finish('r1', GUEST, { ...running, status: 'unchanged' }, { fence })).toEqual({ state: 'already' });
    expect(await store.setProgress('r1', GUEST, running, fence)).toBe('refused');
    expect((await store.result('r1', GUEST))?.status).toBe('applied');
    await lock.release();
  });

  it('tells which runs are queued or running for a guest, for plans of other pull requests', async () => {
    const store = new ApplyStore(connect(), prefix);
    await started(store, run('a', 1, [GUEST, 'lab/100102']));
    await started(store, run('b', 2));
    const found = await store.inProgress([GUEST, 'lab/100102', 'lab/100103']);
    expect([...found.keys()]).toEqual([GUEST, 'lab/100102']);
    expect(found.get(GUEST)?.map((a) => a.runId)).toEqual(['a', 'b']);
  });
});

describe('a run and what carried it out', () => {
  it('is stored once with its own plans: a retried start after a re-plan keeps the first guest list and its plans', async () => {
    const store = new ApplyStore(connect(), prefix);
    const plan = (vmid: number, memory: string) => makeGuestPlan({ cluster: 'lab', vmid, name: `app-${vmid}`, warnings: [memory] });
    const first = await store.createRun(run('r1', 10, ['lab/100101']), [plan(100101, '4096')]);
    // The job runs again after the merged head was planned anew: another guest list, other plans.
    const again = await store.createRun(run('r1', 10, ['lab/100101', 'lab/100102']), [plan(100101, '8192'), plan(100102, '1024')]);
    expect(again.guests).toEqual(first.guests);
    expect(await store.guestPlan('r1', 'lab/100101')).toMatchObject({ warnings: ['4096'] });
    await expect(store.guestPlan('r1', 'lab/100102')).rejects.toThrow();
  });

  it('keys a merge on its pull request too: one commit closing two pull requests is two merges', async () => {
    const store = new ApplyStore(connect(), prefix);
    const sha = 'c'.repeat(40);
    await store.markCarriedOut(7, { merge: sha, pr: 1 }, 'm-7-1');
    expect(await store.carriedOut(7, { merge: sha, pr: 1 })).toBe('m-7-1');
    expect(await store.carriedOut(7, { merge: sha, pr: 2 })).toBeUndefined();
  });
});

describe('slots shared by worker processes', () => {
  function slots(limits: { cluster: number; node: number }, options: { ttlMs?: number; pollMs?: number } = {}): RedisSlots {
    const subscriber = connect();
    // Without a release message no waiter would wake within the test: the poll is a minute.
    return new RedisSlots(connect(), subscriber, { prefix, limits, ttlMs: options.ttlMs ?? 10_000, pollMs: options.pollMs ?? 60_000 });
  }

  it('hold the per-node and per-cluster limits across processes, and a release in one wakes a waiter in another', async () => {
    const one = slots({ cluster: 2, node: 1 });
    const two = slots({ cluster: 2, node: 1 });
    const a = await one.acquire('lab', 'pve-01', 'a');
    let bHeld = false;
    const b = two.acquire('lab', 'pve-01', 'b').then((release) => {
      bHeld = true;
      return release;
    });
    const c = await two.acquire('lab', 'pve-02', 'c');
    // Node pve-01 is full (a), and so is the cluster (a, c): d waits for the cluster.
    let dHeld = false;
    const d = one.acquire('lab', 'pve-03', 'd').then((release) => {
      dHeld = true;
      return release;
    });
    expect(await one.holders('lab')).toEqual(['a', 'c']);
    expect([bHeld, dHeld]).toEqual([false, false]);
    // c leaves: the cluster has room, d (another process) goes; pve-01 is still a's.
    c();
    (await d)();
    expect(bHeld).toBe(false);
    a();
    (await b)();
    expect(await one.holders('lab')).toEqual([]);
  });

  it('give an item of a kind without a node the cluster slot alone: no node set is touched, and a node-less release wakes cluster waiters', async () => {
    const one = slots({ cluster: 2, node: 1 });
    const two = slots({ cluster: 2, node: 1 });
    const pool = await one.acquire('lab', undefined, 'lab/pool/web#1');
    const guest = await two.acquire('lab', 'pve-01', 'g');
    expect((await one.holders('lab')).sort()).toEqual(['g', 'lab/pool/web#1']);
    expect(await one.holders('lab', 'pve-01')).toEqual(['g']);
    const redis = connect();
    expect(await redis.keys(`${prefix}:apply:slots:lab:node:*`)).toEqual([`${prefix}:apply:slots:lab:node:pve-01`]);
    // The cluster is full: another node-less item waits for the cluster, and a node-less release wakes it.
    let waiting = true;
    const next = two.acquire('lab', undefined, 'lab/pool/db#1').then((release) => {
      waiting = false;
      return release;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(waiting).toBe(true);
    pool();
    (await next)();
    guest();
    expect(await one.holders('lab')).toEqual([]);
  });

  it('drop a holder that stopped renewing (a killed worker) once its expiry passes', async () => {
    const redis = connect();
    // A worker that died holding the only slot: its entry expires and is never renewed.
    const t = await redis.time();
    const now = Number(t[0]) * 1000 + Math.floor(Number(t[1]) / 1000);
    await redis.zadd(`${prefix}:apply:slots:lab`, now + 300, 'dead');
    await redis.zadd(`${prefix}:apply:slots:lab:node:pve-01`, now + 300, 'dead');
    const live = slots({ cluster: 1, node: 1 }, { pollMs: 50 });
    const release = await live.acquire('lab', 'pve-01', 'alive');
    expect(await live.holders('lab')).toEqual(['alive']);
    release();
  });
});
