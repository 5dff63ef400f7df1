import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { makeGuestPlan, makePlan } from '../helpers/factories.js';
import { PLAN_JOB_OPTIONS, PlanQueueProducer } from '../../src/queue/enqueue.js';
import { NewestHeads } from '../../src/queue/newest-head.js';
import type { PlanJobData } from '../../src/queue/schema.js';
import { PlanStore } from '../../src/queue/plan/plan-store.js';
import { acquireLock, withLock } from '../../src/queue/redis-lock.js';

let redis: Redis;
let prefix: string;

beforeEach(() => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 3 });
  prefix = `t-${randomBytes(6).toString('hex')}:state`;
});

afterEach(() => {
  redis.disconnect();
});

const sha = (c: string): string => c.repeat(40);

describe('newest heads', () => {
  it('are decided by updated_at, not arrival: an older delivery arriving late changes nothing, a tie goes to the later arrival', async () => {
    const heads = new NewestHeads(redis, prefix);
    expect(await heads.isNewest(1, 2, sha('a'))).toBe(true);
    expect(await heads.record(1, 2, sha('b'), '2030-01-01T00:00:02Z')).toBe(true);
    expect(await heads.record(1, 2, sha('a'), '2030-01-01T00:00:01Z')).toBe(false);
    expect(await heads.get(1, 2)).toBe(sha('b'));
    expect(await heads.isNewest(1, 2, sha('a'))).toBe(false);
    expect(await heads.record(1, 2, sha('c'), '2030-01-01T00:00:02Z')).toBe(true);
    expect(await heads.get(1, 2)).toBe(sha('c'));
    // Another pull request, another repository: their own heads.
    expect(await heads.get(1, 3)).toBeUndefined();
    expect(await heads.get(9, 2)).toBeUndefined();
  });
});

const planJob = (deliveryId: string, head: string): PlanJobData => ({
  kind: 'plan',
  installationId: 1,
  repo: { id: 1, owner: 'acme', name: 'estate' },
  deliveryId,
  pr: 2,
  headSha: sha(head),
  baseSha: sha('f'),
  baseRef: 'main',
  draft: false,
  reason: 'synchronize',
});

describe('enqueueing a plan with its head', () => {
  it('records the head and adds the job in one pipeline; an older head delivered late leaves no job, a job there before stays', async () => {
    const queue = new Queue('plan', { connection: redis, prefix: `${prefix}:q` });
    try {
      const heads = new NewestHeads(redis, prefix);
      const producer = new PlanQueueProducer(queue, heads);
      let waiting = 0;
      queue.on('waiting', () => (waiting += 1));
      expect(await producer.enqueueIfNewest(planJob('d1', 'a'), '2030-01-01T00:00:01Z')).toBe('plan-d1');
      expect(await heads.get(1, 2)).toBe(sha('a'));
      expect(await producer.enqueueIfNewest(planJob('d2', 'b'), '2030-01-01T00:00:03Z')).toBe('plan-d2');
      // Delivered late: an older push, and d1 sent again after the newer head was recorded.
      expect(await producer.enqueueIfNewest(planJob('d3', 'c'), '2030-01-01T00:00:02Z')).toBeUndefined();
      expect(await producer.enqueueIfNewest(planJob('d1', 'a'), '2030-01-01T00:00:01Z')).toBeUndefined();
      expect(await heads.get(1, 2)).toBe(sha('b'));
      expect((await queue.getJobs(['waiting'])).map((job) => job.id).sort()).toEqual(['plan-d1', 'plan-d2']);
      expect((await queue.getJob('plan-d1'))?.data).toEqual(planJob('d1', 'a'));
      expect((await queue.getJob('plan-d2'))?.opts).toMatchObject({ attempts: 3 });
      expect(waiting).toBe(2);
      await expect(producer.enqueueIfNewest(planJob('d4', 'd'), 'yesterday')).rejects.toThrow(/is not a time/);
      expect(await queue.getJob('plan-d4')).toBeUndefined();
    } finally {
      await queue.close();
    }
  });
  it('stores the job as Queue.add stores it, but for the time it was added', async () => {
    const queue = new Queue('plan', { connection: redis, prefix: `${prefix}:q` });
    const other = new Queue('plan', { connection: redis, prefix: `${prefix}:added` });
    try {
      const job = planJob('d1', 'a');
      const producer = new PlanQueueProducer(queue, new NewestHeads(redis, prefix));
      expect(await producer.enqueueIfNewest(job, '2030-01-01T00:00:01Z')).toBe('plan-d1');
      await other.add('plan', job, { ...PLAN_JOB_OPTIONS, jobId: 'plan-d1' });
      const stored = async (q: Queue): Promise<Record<string, string>> => {
        const { timestamp, ...fields } = await redis.hgetall(q.toKey('plan-d1'));
        expect(Number(timestamp)).toBeGreaterThan(0);
        return fields;
      };
      expect(await stored(queue)).toEqual(await stored(other));
      const [mine, theirs] = await Promise.all([queue.getJob('plan-d1'), other.getJob('plan-d1')]);
      expect(mine?.opts).toEqual(theirs?.opts);
      expect(mine?.data).toEqual(job);
    } finally {
      await queue.close();
      await other.close();
    }
  });
});

describe('enqueueing under a burst', () => {
  it('sends the commands of the deliveries answered in one turn to Redis in one write, in order', async () => {
    const connection = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 3 });
    const queue = new Queue('plan', { connection, prefix: `${prefix}:q` });
    try {
      const heads = new NewestHeads(connection, prefix);
      const producer = new PlanQueueProducer(queue, heads);
      // Connected and its scripts loaded: what is counted is the burst's own writes.
      await producer.enqueueIfNewest(planJob('warm', 'a'), '2030-01-01T00:00:00Z');
      const socket = connection.stream as unknown as { _write: (...args: unknown[]) => void; _writev?: (...args: unknown[]) => void };
      let writes = 0;
      const write = socket._write.bind(socket);
      const writev = socket._writev?.bind(socket);
      socket._write = (...args) => {
        writes += 1;
        write(...args);
      };
      if (writev) {
        socket._writev = (...args) => {
          writes += 1;
          writev(...args);
        };
      }
      // 20 deliveries of 20 pull requests at once: two commands each, one write for them all.
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) => producer.enqueueIfNewest({ ...planJob(`b${i}`, 'b'), pr: 100 + i }, '2030-01-01T00:00:01Z')),
      );
      expect(writes).toBe(1);
      expect(ids).toEqual(Array.from({ length: 20 }, (_, i) => `plan-b${i}`));
      for (let i = 0; i < 20; i++) expect(await heads.get(1, 100 + i)).toBe(sha('b'));
      expect((await queue.getJobs(['waiting'])).length).toBe(21);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });
});

describe('the plan store', () => {
  it('keeps the posted plan of a pull request with its specs, and gives it only for its own head', async () => {
    const store = new PlanStore(redis, prefix);
    const plan = makePlan([makeGuestPlan({ action: 'update', changes: [{ key: 'cores', from: '1', to: '2', impact: 'live' }] })]);
    const repo = { id: 5, owner: 'acme', name: 'estate' };
    const cluster = {
      name: 'lab',
      vmids: { lower: 1, upper: 9 },
      ownerTag: 'pve-gitops',
      nodes: ['pve-01'],
      prune: false,
      source: { file: 'c.yaml', line: 1, col: 1 },
    };
    await store.savePostedPlan(
      {
        repo,
        pr: 2,
        headSha: sha('a'),
        baseSha: sha('b'),
        baseRef: 'main',
        specRoot: 'lab',
        draft: true,
        plan,
        specs: { clusters: [cluster], guests: [] },
      },
      'f'.repeat(64),
    );
    const stored = await store.getPostedPlan(5, 2, sha('a'));
    expect(stored?.plan).toEqual(plan);
    expect(stored).toMatchObject({
      repo,
      pr: 2,
      headSha: sha('a'),
      baseSha: sha('b'),
      baseRef: 'main',
      specRoot: 'lab',
      draft: true,
      specs: { clusters: [cluster] },
    });
    expect((await store.getPostedPlan(5, 2))?.headSha).toBe(sha('a'));
    expect(await store.getPostedPlan(5, 2, sha('c'))).toBeUndefined();
    // While its comment is being written again, no plan is posted; a refused write gives it back.
    expect(await store.unmarkPosted(5, 2)).toBe(sha('a'));
    expect(await store.getPostedPlan(5, 2)).toBeUndefined();
    await store.restorePosted(5, 2, sha('a'));
    expect((await store.getPostedPlan(5, 2, sha('a')))?.plan).toEqual(plan);
  });

  it('names for each guest the other pull requests whose latest plan touches it', async () => {
    const store = new PlanStore(redis, prefix);
    await store.setTouched(5, 1, sha('a'), [
      { key: 'lab/100', name: 'lab/web' },
      { key: 'lab/101', name: 'lab/db' },
    ]);
    await store.setTouched(5, 2, sha('b'), [{ key: 'lab/100', name: 'lab/web' }]);
    await store.setTouched(6, 3, sha('c'), [{ key: 'lab/100', name: 'lab/web' }]);
    const mine = [
      { key: 'lab/100', name: 'lab/web' },
      { key: 'lab/102', name: 'lab/new' },
    ];
    expect(await store.overlaps(5, 4, mine)).toEqual(new Map([['lab/100', [1, 2]]]));
    // A newer plan of #1 replaces what its older one touched; a closed one is forgotten.
    await store.setTouched(5, 1, sha('d'), [{ key: 'lab/101', name: 'lab/db' }]);
    await store.removeTouched(5, 2);
    expect(await store.overlaps(5, 4, mine)).toEqual(new Map());
  });
});

describe('the Redis lock', () => {
  it('is held by one at a time, with fencing tokens that only grow, and released only by its holder', async () => {
    const key = `${prefix}:lock:x`;
    const first = await acquireLock(redis, key, { ttlMs: 10_000 });
    expect(first).toBeDefined();
    expect(await acquireLock(redis, key, { waitMs: 0 })).toBeUndefined();
    await first!.release();
    const second = await acquireLock(redis, key, { waitMs: 0 });
    expect(second!.token).toBeGreaterThan(first!.token);
    // A stale holder releasing again does not free the new holder's lock.
    await first!.release();
    expect(await acquireLock(redis, key, { waitMs: 0 })).toBeUndefined();
    await second!.release();
  });

  it('waits for a held lock and takes it when released', async () => {
    const key = `${prefix}:lock:y`;
    const holder = await acquireLock(redis, key);
    let released = false;
    const ranAfterRelease = withLock(redis, key, { waitMs: 30_000, retryMs: 5 }, async () => released);
    // Let the waiter try (and fail) at least once while the lock is held.
    await new Promise<void>((resolve) => {
      const check = (): void =>
        void redis.get(`${key}:fence`).then((fence) => (Number(fence) > holder!.token ? resolve() : setImmediate(check)));
      check();
    });
    released = true;
    await holder!.release();
    expect(await ranAfterRelease).toBe(true);
  });

  it('tells its holder when the lock was lost', async () => {
    const key = `${prefix}:lock:z`;
    const lock = await acquireLock(redis, key, { ttlMs: 60 });
    await redis.del(key);
    await new Promise<void>((resolve) => lock!.lost.addEventListener('abort', () => resolve()));
    expect(lock!.lost.aborted).toBe(true);
    await lock!.release();
  });
});
