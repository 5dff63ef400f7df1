/** The small pieces under the client: semaphore, redaction, UPIDs and task exit statuses. */
import { describe, expect, it, vi } from 'vitest';
import { Semaphore } from '../../src/util/semaphore.js';
import { createRedactor } from '../../src/pve/redact.js';
import { isTaskSuccess, parseUpid, pollTask } from '../../src/pve/task.js';
import type { TaskStatus } from '../../src/pve/schema.js';
import { sleep } from '../../src/util/sleep.js';

describe('Semaphore', () => {
  it('serves waiters in arrival order and never exceeds the limit', async () => {
    const limit = new Semaphore(2);
    const order: number[] = [];
    let active = 0;
    let max = 0;
    const gates: (() => void)[] = [];
    const jobs = Array.from({ length: 6 }, (_, i) =>
      limit.run(async () => {
        active++;
        max = Math.max(max, active);
        order.push(i);
        await new Promise<void>((resolve) => gates.push(resolve));
        active--;
      }),
    );
    while (order.length < 6) {
      await new Promise((resolve) => setImmediate(resolve));
      expect(limit.active).toBeLessThanOrEqual(2);
      gates.shift()?.();
    }
    for (const gate of gates) gate();
    await Promise.all(jobs);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(max).toBe(2);
    expect(limit.active).toBe(0);
    expect(limit.waiting).toBe(0);
  });

  it('a double release frees only one slot', async () => {
    const limit = new Semaphore(1);
    const release = await limit.acquire();
    release();
    release();
    expect(limit.active).toBe(0);
    await limit.acquire();
    expect(limit.active).toBe(1);
    let second = false;
    void limit.acquire().then(() => (second = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(second).toBe(false);
  });

  it('rejects a non-positive limit', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});

describe('createRedactor', () => {
  const token = 'gitops@pve!ci=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
  const redact = createRedactor(token);
  it.each([
    [`Authorization: PVEAPIToken=${token}`, 'Authorization: PVEAPIToken=[REDACTED]'],
    [`PVEAPIToken gitops@pve!ci=abc`, 'PVEAPIToken=[REDACTED]'],
    [`token ${token} end`, 'token [REDACTED] end'],
    [`secret 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 end`, 'secret [REDACTED] end'],
    [`url ${encodeURIComponent(token)}`, 'url [REDACTED]'],
    ['nothing here', 'nothing here'],
  ])('%s', (input, expected) => {
    expect(redact(input)).toBe(expected);
  });
});

describe('parseUpid', () => {
  it('decodes the fields', () => {
    expect(parseUpid('UPID:pve:000FF1FD:10F9374C:630D702C:vzdump:110:root@pam:')).toEqual({
      node: 'pve',
      pid: 0xff1fd,
      pstart: 0x10f9374c,
      starttime: 0x630d702c,
      type: 'vzdump',
      id: '110',
      user: 'root@pam',
    });
  });

  it('accepts an empty id and a 9-digit pstart', () => {
    expect(parseUpid('UPID:pve-01:0000AB12:123456789:630D702C:imgcopy::root@pam!tok:')).toMatchObject({ id: '', pstart: 0x123456789 });
  });

  it.each([
    'UPID:pve:1:2:3:x:y:z:',
    'pve:000FF1FD:10F9374C:630D702C:vzdump:110:root@pam:',
    'UPID:pve:000FF1FD:10F9374C:630D702C:vzdump:110:root@pam',
  ])('rejects %s', (upid) => {
    expect(parseUpid(upid)).toBeUndefined();
  });
});

describe('isTaskSuccess', () => {
  it.each([
    ['OK', true],
    ['WARNINGS: 3', true],
    ['VM is locked (backup)', false],
    ['unexpected status', false],
    ['WARNINGS: x', false],
    [undefined, false],
  ])('%s → %s', (exitstatus, ok) => {
    expect(isTaskSuccess(exitstatus)).toBe(ok);
  });
});

describe('sleep', () => {
  it('rejects with the abort reason', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    const pending = sleep(60_000, controller.signal);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });
});

describe('pollTask', () => {
  const upid = 'UPID:pve:0000AB12:0011FF00:6700AA00:qmconfig:100:root@pam:';
  const init = { status: 0, method: 'GET', path: '/nodes/pve/tasks/x/status', cluster: 'lab' };
  const running = { upid, status: 'running' } as TaskStatus;
  const stopped = { upid, status: 'stopped', exitstatus: 'OK' } as TaskStatus;

  interface PendingRead {
    answer(status: TaskStatus): void;
    fail(error: Error): void;
  }

  /** A task status source the test answers, read by read, in any order; `arrived(n)` resolves once read n was made. */
  function controlledReads(): { read: () => Promise<TaskStatus>; reads: PendingRead[]; arrived(n: number): Promise<void> } {
    const reads: PendingRead[] = [];
    const waiters = new Map<number, () => void>();
    return {
      reads,
      arrived: (n) => (reads.length > n ? Promise.resolve() : new Promise((resolve) => waiters.set(n, resolve))),
      read: () =>
        new Promise<TaskStatus>((resolve, reject) => {
          reads.push({ answer: resolve, fail: reject });
          waiters.get(reads.length - 1)?.();
        }),
    };
  }

  it('polls on while answers are slow, at most three unanswered, and the next as soon as one is answered', async () => {
    vi.useFakeTimers();
    try {
      const source = controlledReads();
      const seen: string[] = [];
      const waiting = pollTask(
        source.read,
        upid,
        { fastIntervalMs: 10, maxPollsInFlight: 3, onProgress: (s) => seen.push(s.status) },
        init,
      );
      // A poll every 10 ms although none is answered: a slow round trip does not stretch the interval.
      await vi.advanceTimersByTimeAsync(30);
      expect(source.reads).toHaveLength(3);
      // Three unanswered: no more, however long the answers take.
      await vi.advanceTimersByTimeAsync(1_000);
      expect(source.reads).toHaveLength(3);
      // An answer lets the next poll out at once.
      source.reads[0]?.answer(running);
      await vi.advanceTimersByTimeAsync(0);
      expect(source.reads).toHaveLength(4);
      source.reads[2]?.answer(stopped);
      await expect(waiting).resolves.toEqual(stopped);
      // Answers that come after the end are not reported.
      source.reads[1]?.answer(running);
      source.reads[3]?.answer(running);
      await vi.advanceTimersByTimeAsync(100);
      expect(seen).toEqual(['running', 'stopped']);
      expect(source.reads).toHaveLength(4);
    } finally {
      vi.useRealTimers();
    }
  });

  it('asks one status at a time by default, so a slow cluster is not asked more', async () => {
    vi.useFakeTimers();
    try {
      const source = controlledReads();
      const waiting = pollTask(source.read, upid, {}, init);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(source.reads).toHaveLength(1);
      source.reads[0]?.answer(running);
      await vi.advanceTimersByTimeAsync(25);
      expect(source.reads).toHaveLength(2);
      source.reads[1]?.answer(stopped);
      await expect(waiting).resolves.toEqual(stopped);
    } finally {
      vi.useRealTimers();
    }
  });

  it('rejects with the error of a failed read, whatever else is in flight', async () => {
    const source = controlledReads();
    const waiting = pollTask(source.read, upid, { fastIntervalMs: 1, maxPollsInFlight: 3 }, init);
    await source.arrived(1);
    const failure = new Error('connection reset');
    source.reads[1]?.fail(failure);
    await expect(waiting).rejects.toBe(failure);
    source.reads[0]?.answer(stopped);
  });
});
