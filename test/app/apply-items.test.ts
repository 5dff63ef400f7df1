/**
 * The apply queue speaks of items, not guests: items of other kinds (registered here as small
 * probe kinds, whose port is in memory and looks into Redis and the simulator while it runs)
 * become jobs beside the guests', take a FIFO ticket, a lock and a slot under their opaque key,
 * and apply in the phases of their kinds — items guests refer to, then guests (written over HTTP
 * to the simulator), then guests' parts, held when the guest they follow did not apply. One item
 * never has two writers, whatever runs and job instances want it at once. And a run stored by the
 * version before items (members `cluster/vmid`, guest plans without the envelope) still finishes.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { KindFacts, ObjectApplyContext, ObjectApplyOutcome, ObjectKind } from '../../src/core/kinds/kind.js';
import { KINDS, OBJECT_KINDS } from '../../src/core/kinds/registry.js';
import type { ObjectPlan } from '../../src/core/model.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { itemJobId, mergeRunId } from '../../src/queue/apply/apply-jobs.js';
import { ApplyStore } from '../../src/queue/apply/apply-store.js';
import { PlanStore } from '../../src/queue/plan/plan-store.js';
import { QUEUE_NAMES } from '../../src/queue/schema.js';
import { expectApplyCheckRun, expectApplyComment, finishedComment } from './apply-flow.js';
import { type ApplyWorld, ownedGuest, planOpened, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { rawConfig } from './sim-writes.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';

/** What the probe port saw while one item ran. */
interface ProbeCall {
  key: string;
  pr: number;
  startedAt: number;
  endedAt?: number;
  /** Writes the simulator had taken when the item started. */
  simWrites: number;
  /** Whether the item's lock and its run's ticket were in Redis under the item's key. */
  locked: boolean;
  ticketed: boolean;
  /** Holders of the cluster's slots, and the node slot sets that existed. */
  clusterHolders: string[];
  nodeSets: string[];
  /** What the guest it follows looked like on the simulator (for items with `after`). */
  followed?: string;
}

/** The in-memory port of the probe kinds: it records every call and how many ran at once per key. */
class ProbePort {
  readonly calls: ProbeCall[] = [];
  readonly running = new Map<string, number>();
  maxAtOnce = 0;
  world: ApplyWorld | undefined;
  redis: Redis | undefined;
  /** How long an item's write takes. */
  ms = 40;

  async execute(item: ObjectPlan, _context: ObjectApplyContext): Promise<ObjectApplyOutcome> {
    const now = (this.running.get(item.key) ?? 0) + 1;
    this.running.set(item.key, now);
    this.maxAtOnce = Math.max(this.maxAtOnce, now);
    try {
      const w = this.world as ApplyWorld;
      const redis = this.redis as Redis;
      const state = `${w.app.prefix}:state`;
      const sim = w.clusters.sims.lab!;
      const runId = String(item.payload.runId ?? '');
      const call: ProbeCall = {
        key: item.key,
        pr: Number(item.payload.pr),
        startedAt: Date.now(),
        simWrites: sim.sim.stats().writes.total,
        locked: (await redis.exists(`${state}:apply:guest:${item.key}:lock`)) === 1,
        ticketed: runId === '' || (await redis.zscore(`${state}:apply:guest:${item.key}:tickets`, runId)) !== null,
        clusterHolders: await redis.zrange(`${state}:apply:slots:lab`, 0, -1),
        nodeSets: await redis.keys(`${state}:apply:slots:lab:node:*`),
      };
      const follows = typeof item.payload.vmid === 'number' ? item.payload.vmid : undefined;
      if (follows !== undefined) call.followed = rawConfig(sim, follows);
      this.calls.push(call);
      await new Promise((resolve) => setTimeout(resolve, this.ms));
      call.endedAt = Date.now();
      return { status: 'applied', steps: [{ op: 'probe', detail: item.key }] };
    } finally {
      this.running.set(item.key, (this.running.get(item.key) ?? 1) - 1);
    }
  }
}

const port = new ProbePort();

function probeKind(name: string, phase: ObjectKind['phase']): ObjectKind<ProbePort> {
  return {
    name,
    documents: [],
    phase,
    hasNode: false,
    operations: ['probe'],
    simRoutes: [],
    testFactory: () => ({ yaml: '' }),
    load: () => {
      throw new Error('probe kinds have no documents');
    },
    validate: () => [],
    observe: async () => undefined,
    plan: () => [],
    checkStored: () => {},
    label: (item) => `${name} ${item.name}`,
    describe: () => undefined,
    execute: (item, p, context) => p.execute(item, context),
  };
}

/** An item of a probe kind, as a kind's plan would make it. */
function probeItem(kind: 'probe-ref' | 'probe-part', id: string, extra: { pr: number; after?: string; vmid?: number }): ObjectPlan {
  return {
    kind,
    key: `lab/${kind}/${id}`,
    cluster: 'lab',
    name: id,
    action: 'update',
    changes: [],
    operations: [{ op: 'probe' }],
    drift: [],
    errors: [],
    warnings: [],
    severity: 'configuration',
    ...(extra.after !== undefined ? { after: [extra.after] } : {}),
    payload: { pr: extra.pr, ...(extra.vmid !== undefined ? { vmid: extra.vmid } : {}) },
  };
}

let world: ApplyWorld | undefined;
const connections: Redis[] = [];

beforeAll(() => {
  // Registered as a kind's line in `registry.ts` would register it: in both lists the registry reads.
  const kinds: ObjectKind[] = [probeKind('probe-ref', 'referenced'), probeKind('probe-part', 'guest-parts')];
  (OBJECT_KINDS as ObjectKind[]).push(...kinds);
  (KINDS as KindFacts[]).push(...kinds);
  const original = PveClusterAdapter.prototype.kindPort;
  vi.spyOn(PveClusterAdapter.prototype, 'kindPort').mockImplementation(function (this: PveClusterAdapter, kind: string) {
    return kind.startsWith('probe-') ? port : original.call(this, kind);
  });
});

afterAll(() => {
  for (const list of [OBJECT_KINDS as ObjectKind[], KINDS as KindFacts[]]) {
    for (const probe of list.filter((kind) => kind.name.startsWith('probe-'))) list.splice(list.indexOf(probe), 1);
  }
  vi.restoreAllMocks();
});

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
  for (const redis of connections.splice(0)) redis.disconnect();
  port.calls.splice(0);
  port.maxAtOnce = 0;
});

function connect(w: ApplyWorld): Redis {
  const redis = new Redis(w.redisUrl, { maxRetriesPerRequest: 3 });
  connections.push(redis);
  return redis;
}

/** Adds items of other kinds to the plan stored for a pull request head, as a plan with those kinds would hold them. */
async function addObjects(w: ApplyWorld, pr: number, headSha: string, objects: ObjectPlan[]): Promise<void> {
  const redis = connect(w);
  const key = `${w.app.prefix}:state:plan:${w.repo.id}:${pr}:${headSha}`;
  const envelope = JSON.parse((await redis.get(key)) ?? 'null');
  const plan = JSON.parse(envelope.plan);
  plan.objects = [...plan.objects, ...objects];
  envelope.plan = JSON.stringify(plan);
  await redis.set(key, JSON.stringify(envelope), 'KEEPTTL');
}

/** Resolves with `read()` once it is defined (the test's look at state a worker writes). */
async function eventually<T>(read: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('not there in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('items of other kinds in an apply run', () => {
  it('apply in phases — referenced items, then guests, then guest parts — each under its own key, a held part when its guest did not apply', async () => {
    const X = 100701;
    const Y = 100702;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01'), ownedGuest(Y, 'db-01', 'pve-02')] });
    const w = world;
    port.world = w;
    port.redis = connect(w);
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X), 'vms/db.yaml': vmDoc('db-01', Y) };
    const head: RepoFiles = {
      ...base,
      'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }),
      'vms/db.yaml': vmDoc('db-01', Y, { memory: 4096 }),
    };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 71;
    await w.storePlan({ baseSha, base, pr, headSha, head });
    const runId = mergeRunId(w.repo.id, pr, mergeSha);
    const shared = probeItem('probe-ref', 'shared', { pr });
    const partX = probeItem('probe-part', 'x', { pr, after: `lab/${X}`, vmid: X });
    const partY = probeItem('probe-part', 'y', { pr, after: `lab/${Y}`, vmid: Y });
    for (const item of [shared, partX, partY]) item.payload.runId = runId;
    // Plan order is phase order; the run keeps its own (`byPhase`), whatever the stored order.
    await addObjects(w, pr, headSha, [partX, shared, partY]);
    // Reviewed 2048 → 4096 on db-01; then someone edits it: its apply is a conflict, its part is held.
    sim.sim.operatorEdit(Y, { set: { memory: 3000 } });

    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 871 });
    const comment = expectApplyComment(w.github, w.repo, { pr, id: 971 });
    await w.merge({ number: pr, headSha, baseSha, mergeSha });
    const completed = await check.completed;
    await comment.until(finishedComment);

    // The referenced item ran first, before any guest was written, alone under its opaque key:
    // its lock and its run's ticket in Redis, the cluster's slot held, no node's slot touched.
    const first = port.calls.find((c) => c.key === shared.key);
    expect(first).toMatchObject({ simWrites: 0, locked: true, ticketed: true, nodeSets: [] });
    expect(first?.clusterHolders).toHaveLength(1);
    // The part of app-01 ran after app-01 was written; db-01's part never ran.
    const ranX = port.calls.find((c) => c.key === partX.key);
    expect(ranX?.followed).toContain('memory: 4096');
    expect(ranX).toMatchObject({ locked: true, ticketed: true, nodeSets: [] });
    expect(port.calls.map((c) => c.key).sort()).toEqual([partX.key, shared.key].sort());
    expect(rawConfig(sim, Y)).toContain('memory: 3000');
    // Each phase was woken by the end of the one before, not found by the fallback delay (JOB_LOCK_MS, 2 s).
    expect(ranX!.startedAt - first!.endedAt!).toBeLessThan(1500);

    const store = new ApplyStore(connect(w), `${w.app.prefix}:state`);
    const record = await store.getRun(runId);
    expect(record?.run.objects).toEqual([shared.key, partX.key, partY.key]);
    const results = await store.results(runId);
    expect(results.get(shared.key)).toMatchObject({ status: 'applied', kind: 'probe-ref', key: shared.key });
    expect(results.get(partX.key)).toMatchObject({ status: 'applied' });
    expect(results.get(partY.key)).toMatchObject({ status: 'skipped', retryable: true, error: `held: lab/${Y} it follows ended conflict` });
    expect(results.get(`lab/${X}`)).toMatchObject({ status: 'applied' });
    expect(results.get(`lab/${Y}`)).toMatchObject({ status: 'conflict' });
    // The check run counts items, not guests: 5 of them, the conflict is what failed it.
    expect(completed).toMatchObject({ conclusion: 'failure' });
    expect(completed.output?.summary).toContain('Items');
    expect(completed.output?.summary).toContain('5');
    w.github.verify();
  });

  it('never have two writers: runs of three merges and a duplicate job all wanting one item take it one at a time, in merge order', async () => {
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(100711, 'app-01')] });
    const w = world;
    port.world = w;
    port.redis = connect(w);
    port.ms = 150;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', 100711) };
    const head: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', 100711, { memory: 4096 }) };
    const merges = [81, 82, 83].map((pr, i) => ({
      pr,
      headSha: newSha(),
      baseSha: newSha(),
      mergeSha: newSha(),
      mergedAt: new Date(Date.UTC(2030, 0, 1, 0, 0, i)).toISOString().replace('.000Z', 'Z'),
    }));
    const store = new ApplyStore(connect(w), `${w.app.prefix}:state`);
    const checks = merges.map((m, i) => expectApplyCheckRun(w.github, w.repo, { mergeSha: m.mergeSha, id: 881 + i }));
    for (const [i, m] of merges.entries()) {
      expectApplyComment(w.github, w.repo, { pr: m.pr, id: 981 + i });
      await w.storePlan({ baseSha: m.baseSha, base, pr: m.pr, headSha: m.headSha, head: i === 0 ? head : base });
      const runId = mergeRunId(w.repo.id, m.pr, m.mergeSha);
      const shared = probeItem('probe-ref', 'shared', { pr: m.pr });
      const own = probeItem('probe-ref', `own-${m.pr}`, { pr: m.pr });
      shared.payload.runId = runId;
      own.payload.runId = runId;
      await addObjects(w, m.pr, m.headSha, [shared, own]);
    }
    // Delivered at once, in merge order (a head that started is never overtaken by a late one: apply-store.ts).
    for (const m of merges) {
      await w.merge({ number: m.pr, headSha: m.headSha, baseSha: m.baseSha, mergeSha: m.mergeSha, mergedAt: m.mergedAt });
    }
    // A second instance of the first run's job for the shared item (what BullMQ does for a worker it thinks dead).
    const firstRun = mergeRunId(w.repo.id, merges[0]!.pr, merges[0]!.mergeSha);
    await eventually(async () => (await store.getRun(firstRun))?.run);
    const queue = new Queue(QUEUE_NAMES.applyGuest, { connection: connect(w), prefix: w.app.prefix });
    try {
      await queue.add(
        'object',
        { kind: 'object', runId: firstRun, item: 'lab/probe-ref/shared' },
        { jobId: `${itemJobId(firstRun, 'lab/probe-ref/shared')}-again` },
      );
      for (const check of checks) expect(await check.completed).toMatchObject({ conclusion: 'success' });
      // The second instance found the item done (by the first, or first itself): it ended without a failure.
      const again = await queue.getJob(`${itemJobId(firstRun, 'lab/probe-ref/shared')}-again`);
      const ended = await eventually(async () => ((await again?.getState()) === 'active' ? undefined : again?.getState()));
      expect({ ended, why: (await queue.getJob(again?.id ?? ''))?.failedReason }).toEqual({ ended: 'completed', why: undefined });
    } finally {
      await queue.close();
    }
    const calls = port.calls.filter((c) => c.key === 'lab/probe-ref/shared');
    expect(calls.map((c) => c.pr)).toEqual([81, 82, 83]);
    for (let i = 1; i < calls.length; i++) expect(calls[i]!.startedAt).toBeGreaterThanOrEqual(calls[i - 1]!.endedAt!);
    expect(port.maxAtOnce).toBe(1);
    expect(port.calls.filter((c) => c.key.startsWith('lab/probe-ref/own-'))).toHaveLength(3);
    port.ms = 40;
  });
});

describe('a run stored by the version before items', () => {
  it('resumes after an upgrade: members cluster/vmid, guest plans without the envelope, a guest job of the old form', async () => {
    const X = 100721;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const w = world;
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const head: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 91;
    await w.storePlan({ baseSha, base, pr, headSha, head });
    const redis = connect(w);
    const state = `${w.app.prefix}:state`;
    const stored = await new PlanStore(redis, state).getPostedPlan(w.repo.id, pr, headSha);
    const { kind: _kind, key: _key, ...v1Guest } = stored!.plan.guests[0]!;

    // Written as the previous version wrote a run: its record, its guests' plans, their progress, the ticket and the job.
    const runId = mergeRunId(w.repo.id, pr, mergeSha);
    const guest = `lab/${X}`;
    const run = {
      id: runId,
      repo: w.repo,
      pr,
      installationId: w.installationId,
      headSha,
      mergeSha,
      trigger: 'merge',
      createdAt: new Date().toISOString(),
      order: Date.now() / 1000,
      guests: [guest],
    };
    await redis.hset(`${state}:apply:run:${runId}`, 'run', JSON.stringify(run), 'queued', '1');
    await redis.hset(`${state}:apply:run:${runId}:plans`, guest, JSON.stringify(v1Guest));
    await redis.hset(
      `${state}:apply:run:${runId}:results`,
      guest,
      JSON.stringify({ cluster: 'lab', name: 'app-01', vmid: X, node: 'pve-01', status: 'queued', steps: [] }),
    );
    await redis.zadd(`${state}:apply:guest:${guest}:tickets`, run.order, runId);
    await redis.hset(`${state}:apply:pr:${w.repo.id}:${pr}`, 'run', runId);

    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 891 });
    const comment = expectApplyComment(w.github, w.repo, { pr, id: 991 });
    const queue = new Queue(QUEUE_NAMES.applyGuest, { connection: connect(w), prefix: w.app.prefix });
    try {
      await queue.add('guest', { kind: 'guest', runId, guest }, { jobId: itemJobId(runId, guest), attempts: 3 });
      expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    } finally {
      await queue.close();
    }
    expect(await comment.until(finishedComment)).toContain('**applied** · **lab/app-01**');
    expect(rawConfig(sim, X)).toContain('memory: 4096');
    const results = await new ApplyStore(redis, state).results(runId);
    expect(results.get(guest)).toMatchObject({ status: 'applied', vmid: X });
    expect(await redis.zcard(`${state}:apply:guest:${guest}:tickets`)).toBe(0);
    w.github.verify();
  });
});

describe('a pull request that moves a guest to another pool', () => {
  it('shows the move in its plan comment; merged, the guest is in the other pool on the cluster and the apply comment says so', async () => {
    const X = 100731;
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(X, 'web-01')],
      pools: [{ poolid: 'web', comment: 'Web servers', vmids: [X] }, { poolid: 'db' }],
    });
    const w = world;
    const { github, repo } = w;
    const sim = w.clusters.sims.lab!;
    const pools = 'kind: Pool\nname: web\ncluster: lab\ncomment: Web servers\n---\nkind: Pool\nname: db\ncluster: lab\n';
    const vm = (pool: string): string => `${vmDoc('web-01', X)}pool: ${pool}\n`;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'pools.yaml': pools, 'vms/web.yaml': vm('web') };
    const head: RepoFiles = { ...base, 'vms/web.yaml': vm('db') };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 101;

    const { comment: planned } = await planOpened(w, { pr, baseSha, base, headSha, head, checkId: 1801, commentId: 1901 });
    expect(planned).toContain('**lab: pool membership of web-01 (100731)**');
    expect(planned).toContain('| `pool` | `web` | `db` | live |');
    github.verify();

    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 1802 });
    const comment = expectApplyComment(github, repo, { pr, id: 1902 });
    await w.merge({ number: pr, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'success' });
    const applied = await comment.until(finishedComment);
    expect(sim.sim.pools.get('db')?.vmids.has(X)).toBe(true);
    expect(sim.sim.pools.get('web')?.vmids.has(X)).toBe(false);
    expect(applied).toContain('✅ **applied** · **lab: pool-member web-01**');
    expect(applied).toContain("guest 100731 'web' → 'db'");
    github.verify();
  });
});
