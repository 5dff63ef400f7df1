/**
 * The engine's apply on the in-memory cluster: lock waits, digest retries, migrations, partial
 * applies, vanished guests and concurrent runs, deterministic and in virtual time (minutes of
 * waiting take milliseconds). The same stories over HTTP against the simulator are in
 * apply.test.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { GuestApplyResult } from '../../src/core/apply-result.js';
import type { ClusterSpec, GuestSpec, Plan } from '../../src/core/model.js';
import { UnavailableError } from '../../src/core/port-errors.js';
import { applyGuest } from '../../src/engine/apply-guest.js';
import type { ApplyEvent } from '../../src/engine/apply-guest.js';
import { executePlan, type ExecuteOptions } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { makeGuestSpec } from '../helpers/factories.js';
import { MemoryCluster } from './memory-cluster.js';
import { VirtualClock } from './virtual-clock.js';

const LAB: ClusterSpec = {
  name: 'lab',
  vmids: { lower: 100, upper: 1000 },
  ownerTag: 'pve-gitops',
  nodes: ['pve-01', 'pve-02'],
  prune: false,
  source: { file: 'lab/cluster.yaml', line: 1, col: 1 },
};

let clock: VirtualClock;
let lab: MemoryCluster;

beforeEach(() => {
  clock = new VirtualClock();
  lab = new MemoryCluster({ clock, nodes: ['pve-01', 'pve-02'], taskMs: 200 });
});

/** A VM spec `guest-<vmid>` with 2 GiB of memory. */
function spec(vmid: number, overrides: Partial<GuestSpec> = {}): GuestSpec {
  return makeGuestSpec({ vmid, name: `guest-${vmid}`, node: 'pve-01', config: { memory: '2048' }, ...overrides });
}

/** An owned guest as a previous apply left it, with 1 GiB of memory. */
function existing(vmid: number, node = 'pve-01'): void {
  lab.add({ vmid, node, config: { name: `guest-${vmid}`, tags: 'pve-gitops', memory: '1024' } });
}

/** Plans the specs against the memory cluster, then forgets the planning's calls. */
async function plan(guests: GuestSpec[]): Promise<Plan> {
  const planned = await runPlan({ head: { clusters: [LAB], guests }, readers: { lab } });
  lab.calls.length = 0;
  return planned;
}

async function apply(planned: Plan, options: ExecuteOptions = {}): Promise<Record<number, GuestApplyResult>> {
  const result = await executePlan(planned, { lab }, { clock, ...options });
  return Object.fromEntries(result.guests.map((g) => [g.vmid, g]));
}

describe('applyGuest on the in-memory cluster', () => {
  it('waits out a lock in virtual time, then writes, without clearing the lock', async () => {
    existing(101);
    const planned = await plan([spec(101)]);
    void lab.holdLock(101, 'backup', 90_000);
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('applied');
    expect(result.steps.map((s) => s.op)).toEqual(['wait-lock', 'config']);
    expect(result.steps[0]?.detail).toMatch(/locked \(backup\); waiting up to 600 s/);
    // Not one write while the lock was there: the config write came after it cleared itself.
    const write = lab.calls.find((c) => c.op === 'updateConfig');
    expect(write?.at).toBeGreaterThanOrEqual(90_000);
    expect(lab.guests.get(101)?.config.memory).toBe('2048');
  });

  it('a guest waiting out a lock holds no slot: two locked guests on one node do not stall the others', async () => {
    for (const vmid of [101, 102]) existing(vmid, 'pve-01');
    for (const vmid of [201, 202, 203, 204]) existing(vmid, 'pve-02');
    const planned = await plan([101, 102, 201, 202, 203, 204].map((vmid) => spec(vmid, { node: vmid < 200 ? 'pve-01' : 'pve-02' })));
    void lab.holdLock(101, 'backup', 60_000);
    void lab.holdLock(102, 'backup', 60_000);
    const doneAt: Record<number, number> = {};
    const onEvent = (event: ApplyEvent): void => {
      if (event.type === 'guest-done') doneAt[event.guest.vmid] = clock.now();
    };
    const results = await apply(planned, { clusterConcurrency: 2, nodeConcurrency: 2, onEvent });
    expect(Object.values(results).map((r) => r.status)).toEqual(Array(6).fill('applied'));
    // Four guests of pve-02, two at a time, 200 ms each: done long before the locks clear.
    for (const vmid of [201, 202, 203, 204]) expect(doneAt[vmid]).toBeLessThan(2_000);
    for (const vmid of [101, 102]) expect(doneAt[vmid]).toBeGreaterThanOrEqual(60_000);
    expect(lab.maxClusterWrites).toBe(2);
  });

  it('a guest queued behind a busy node holds no cluster slot that guests of other nodes could use', async () => {
    for (const vmid of [101, 102, 103, 104]) existing(vmid, 'pve-01');
    existing(201, 'pve-02');
    const planned = await plan([101, 102, 103, 104, 201].map((vmid) => spec(vmid, { node: vmid < 200 ? 'pve-01' : 'pve-02' })));
    const doneAt: Record<number, number> = {};
    const onEvent = (event: ApplyEvent): void => {
      if (event.type === 'guest-done') doneAt[event.guest.vmid] = clock.now();
    };
    await apply(planned, { clusterConcurrency: 3, nodeConcurrency: 2, onEvent });
    // pve-01 takes two of the three cluster slots; the third goes to pve-02 at once.
    expect(doneAt[201]).toBeLessThanOrEqual(200);
  });

  it('re-reads after a digest conflict and goes through when no owned value moved', async () => {
    existing(101);
    const planned = await plan([spec(101, { ignore: ['description'] })]);
    let edits = 1;
    lab.afterRead = (vmid) => {
      if (edits-- > 0) lab.guests.get(vmid)!.config.description = 'edited by hand';
    };
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('applied');
    expect(result.steps.map((s) => s.op)).toEqual(['digest-conflict', 'config']);
    expect(lab.guests.get(101)?.config).toMatchObject({ memory: '2048', description: 'edited by hand' });
  });

  it('reports a digest conflict that recurs as a conflict, and writes nothing', async () => {
    existing(101);
    const planned = await plan([spec(101, { ignore: ['description'] })]);
    let n = 0;
    lab.afterRead = (vmid) => {
      lab.guests.get(vmid)!.config.description = `edit ${n++}`;
    };
    const result = (await apply(planned, { maxDigestConflicts: 3 }))[101]!;
    expect(result.status).toBe('conflict');
    expect(result.error).toMatch(/digest moved 3 times in a row/);
    expect(lab.guests.get(101)?.config.memory).toBe('1024');
  });

  it('reports an owned value moved after review as a conflict, with both changes', async () => {
    existing(101);
    const planned = await plan([spec(101)]);
    lab.guests.get(101)!.config.memory = '4096';
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('conflict');
    expect(result.conflict).toEqual([{ key: 'memory', reviewed: { from: '1024', to: '2048' }, now: { from: '4096', to: '2048' } }]);
    expect(lab.count('updateConfig')).toBe(0);
  });

  it('follows a guest that migrates between its read and its write', async () => {
    existing(101, 'pve-01');
    const planned = await plan([spec(101)]);
    let migrated = false;
    lab.beforeWrite = (op, ref) => {
      if (op === 'updateConfig' && !migrated) {
        migrated = true;
        lab.guests.get(ref.vmid)!.node = 'pve-02';
      }
    };
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('applied');
    expect(result.node).toBe('pve-02');
    expect(result.steps.map((s) => s.op)).toEqual(['relocated', 'relocated', 'config']);
    expect(lab.guests.get(101)?.config.memory).toBe('2048');
  });

  it('resumes a partial apply: only the steps not yet done are carried out', async () => {
    const planned = await plan([spec(101, { power: 'running' })]);
    expect(planned.guests[0]?.operations.map((o) => o.op)).toEqual(['create', 'start']);
    // A first run created the guest and was killed before starting it.
    lab.add({ vmid: 101, config: { name: 'guest-101', tags: 'pve-gitops', memory: '2048' } });
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('applied');
    expect(result.steps.map((s) => s.op)).toEqual(['start']);
    expect(lab.count('create')).toBe(0);
    expect(lab.guests.get(101)?.running).toBe(true);
  });

  it('a guest that disappears during the apply is a conflict and is never created', async () => {
    existing(101);
    const planned = await plan([spec(101, { power: 'running', config: { memory: '2048' } })]);
    expect(planned.guests[0]?.operations.map((o) => o.op)).toEqual(['config', 'start']);
    lab.beforeWrite = (op, ref) => {
      // Someone deletes the guest right after its config was written.
      if (op === 'start') lab.guests.delete(ref.vmid);
    };
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('conflict');
    expect(result.error).toMatch(/^guest 101 disappeared during apply/);
    expect(lab.count('create')).toBe(0);
    expect(lab.guests.has(101)).toBe(false);
  });

  it('a guest this run created and someone then deleted is not created a second time', async () => {
    const planned = await plan([spec(101, { power: 'running' })]);
    lab.beforeWrite = (op, ref) => {
      if (op === 'start') lab.guests.delete(ref.vmid);
    };
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('conflict');
    expect(result.error).toMatch(/^guest 101 disappeared during apply/);
    expect(lab.count('create')).toBe(1);
  });

  it("one guest's failed read fails only that guest, marked retryable", async () => {
    existing(101);
    existing(102);
    const planned = await plan([spec(101), spec(102)]);
    lab.fail('readGuest', 102, new UnavailableError('GET /nodes/pve-01/qemu/102/pending timed out after 30000 ms'));
    const results = await apply(planned);
    expect(results[101]?.status).toBe('applied');
    expect(results[102]).toMatchObject({ status: 'failed', retryable: true, error: expect.stringMatching(/timed out/) });
  });

  it('a cluster listing that fails does not stop the apply: guests are read where the plan saw them', async () => {
    existing(101);
    const planned = await plan([spec(101), spec(102)]);
    lab.fail('listGuests', undefined, new UnavailableError('connection reset'));
    const notices: string[] = [];
    const results = await apply(planned, { onEvent: (e) => e.type === 'notice' && notices.push(e.message) });
    expect(notices).toEqual([
      expect.stringMatching(/cannot list cluster 'lab' \(connection reset\); reading each guest where the plan saw it/),
    ]);
    expect(results[101]?.status).toBe('applied');
    // The create needs to know the VMID is free cluster-wide: it asks for a fresh listing.
    expect(results[102]?.status).toBe('applied');
    expect(lab.count('create')).toBe(1);
  });

  it('two concurrent applies of one plan: the later one reports the guest applied by another run', async () => {
    const planned = await plan([spec(101, { power: 'running' })]);
    const [first, second] = await Promise.all([apply(planned), apply(planned)]);
    const results = [first![101]!, second![101]!];
    expect(results.map((r) => r.status).sort()).toEqual(['applied', 'unchanged']);
    const other = results.find((r) => r.status === 'unchanged')!;
    expect(other.steps.map((s) => s.op)).toEqual(['vmid-taken', 'wait-lock', 'vmid-taken']);
    expect(other.steps.at(-1)?.detail).toBe('applied by another run: the guest is exactly what the reviewed plan creates');
    expect(lab.count('create')).toBe(2);
    expect(lab.count('start')).toBe(1);
    expect(lab.guests.get(101)?.running).toBe(true);
  });

  it('a VMID taken by a stranger after review is a conflict that says so, and nothing is changed', async () => {
    const planned = await plan([spec(101)]);
    lab.beforeWrite = (op, ref) => {
      if (op === 'create') lab.add({ vmid: ref.vmid, node: 'pve-02', config: { name: 'intruder', tags: '', memory: '512' } });
    };
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('conflict');
    expect(result.error).toMatch(/VM 101 already exists on node 'pve-02'.*taken by someone else after review; nothing was changed/);
    expect(lab.guests.get(101)?.config).toMatchObject({ name: 'intruder', memory: '512' });
  });

  it('a start that finds the guest already running counts as done', async () => {
    lab.add({ vmid: 101, running: false, config: { name: 'guest-101', tags: 'pve-gitops', memory: '2048' } });
    const planned = await plan([spec(101, { power: 'running' })]);
    lab.afterRead = (vmid) => {
      lab.guests.get(vmid)!.running = true;
    };
    const result = (await apply(planned))[101]!;
    expect(result.status).toBe('applied');
    expect(result.steps.map((s) => s.detail)).toEqual(['start: VM 101 already running, nothing to do']);
  });

  it('an abort ends the guest while it waits, with a retryable result and nothing written', async () => {
    existing(101);
    const planned = await plan([spec(101)]);
    void lab.holdLock(101, 'backup', 60_000);
    const controller = new AbortController();
    void clock.sleep(5_000).then(() => controller.abort(new Error('worker shutting down')));
    const result = (await apply(planned, { signal: controller.signal }))[101]!;
    expect(result).toMatchObject({ status: 'failed', retryable: true });
    expect(result.error).toMatch(/^interrupted \(worker shutting down\) after 1 step\(s\)/);
    expect(lab.count('updateConfig')).toBe(0);
  });

  it('applies one guest of a stored plan on its own, as a queue job does, without a cluster listing', async () => {
    existing(101, 'pve-02');
    const planned = await plan([spec(101)]);
    const events: string[] = [];
    const result = await applyGuest(planned.guests[0]!, lab, { clock, onEvent: (e) => events.push(e.type) });
    expect(result).toMatchObject({ status: 'applied', node: 'pve-02', steps: [{ op: 'config', detail: 'set memory' }] });
    expect(result.steps[0]?.upid).toMatch(/^UPID:pve-02:/);
    expect(events).toEqual(['guest-start', 'step', 'guest-done']);
    expect(lab.count('listGuests')).toBe(0);
  });
});

describe('reading ahead of the slot', () => {
  /** Virtual times of `op` calls for `vmid`. */
  const at = (op: 'readGuest' | 'updateConfig' | 'start', vmid: number): number[] =>
    lab.calls.filter((c) => c.op === op && c.vmid === vmid).map((c) => c.at);

  beforeEach(() => {
    lab = new MemoryCluster({ clock, nodes: ['pve-01', 'pve-02'], taskMs: 200, readMs: 20 });
  });

  it('a guest waiting for its slot reads while the task before it runs, and writes from that read as the slot frees', async () => {
    existing(101);
    existing(102);
    const planned = await plan([spec(101), spec(102)]);
    const results = await apply(planned, { clusterConcurrency: 1 });
    expect([results[101]?.status, results[102]?.status]).toEqual(['applied', 'applied']);
    const [write101] = at('updateConfig', 101);
    const [write102] = at('updateConfig', 102);
    // 102 was read once before its write, while 101's task ran; its slot held the write and task only.
    const readsBefore = at('readGuest', 102).filter((t) => t < write102!);
    expect(readsBefore).toHaveLength(1);
    expect(readsBefore[0]).toBeLessThan(write101! + lab.taskMs);
    expect(write102! - write101!).toBe(lab.taskMs);
    expect(lab.maxClusterWrites).toBe(1);
    expect(lab.guests.get(102)?.config.memory).toBe('2048');
  });

  it('a read made ahead that has grown old by the time the slot frees is made again in the slot', async () => {
    existing(101);
    existing(102);
    const planned = await plan([spec(101), spec(102)]);
    await apply(planned, { clusterConcurrency: 1, readAheadMaxAgeMs: 100 });
    const [write101] = at('updateConfig', 101);
    const [write102] = at('updateConfig', 102);
    const readsBefore = at('readGuest', 102).filter((t) => t < write102!);
    expect(readsBefore).toHaveLength(2);
    expect(readsBefore[1]).toBeGreaterThanOrEqual(write101! + lab.taskMs);
  });

  it('an owned value edited after the read made ahead is caught by the digest: nothing is written', async () => {
    existing(101);
    existing(102);
    const planned = await plan([spec(101), spec(102)]);
    let edited = false;
    lab.afterRead = (vmid) => {
      // The operator's edit lands while 102 waits for its slot with its read made.
      if (vmid === 102 && !edited) {
        edited = true;
        lab.guests.get(102)!.config.memory = '4096';
      }
    };
    const results = await apply(planned, { clusterConcurrency: 1 });
    expect(results[102]?.status).toBe('conflict');
    expect(results[102]?.steps.map((s) => s.op)).toEqual(['digest-conflict']);
    expect(lab.guests.get(102)?.config.memory).toBe('4096');
  });

  it('a step that carries no digest (a start) is read in its slot, not ahead', async () => {
    existing(101);
    existing(102);
    const planned = await plan([
      spec(101, { power: 'running', config: { memory: '1024' } }),
      spec(102, { power: 'running', config: { memory: '1024' } }),
    ]);
    expect(planned.guests.map((g) => g.operations.map((o) => o.op))).toEqual([['start'], ['start']]);
    await apply(planned, { clusterConcurrency: 1 });
    const [start101] = at('start', 101);
    const [start102] = at('start', 102);
    expect(at('readGuest', 102).filter((t) => t < start102!)).toEqual([start101! + lab.taskMs]);
  });
});

describe('the host-access policy at apply time', () => {
  it('refuses a host-reaching change the server no longer allows, whatever the stored plan says, and writes nothing', async () => {
    existing(101);
    const planned = await runPlan({
      head: { clusters: [LAB], guests: [spec(101, { config: { memory: '1024', args: '-no-hpet' } })] },
      readers: { lab },
      access: { lab: { allowHostAccess: ['args'] } },
    });
    lab.calls.length = 0;
    expect(planned.guests[0]?.action).toBe('update');

    const refused = await apply(planned);
    expect(refused[101]?.status).toBe('failed');
    expect(refused[101]?.error).toMatch(/args reaches the host.*ALLOW_HOST_ACCESS=args/);
    expect(lab.count('updateConfig')).toBe(0);

    const allowed = await apply(planned, { allowHostAccess: { lab: ['args'] } });
    expect(allowed[101]?.status).toBe('applied');
    expect(lab.count('updateConfig', 101)).toBe(1);
  });
});
