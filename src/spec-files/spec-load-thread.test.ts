import { threadId } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { formatSpecError, SpecError } from '../core/spec/errors.js';
import { loadSpecs, type SpecFile } from '../core/spec/load-specs.js';
import { suggestionWork } from '../core/spec/nearest-name.js';
import { SpecLoadThread, SpecLoadTimeout, type StartBudget } from './spec-load-thread.js';

const CLUSTER: SpecFile = {
  path: 'cluster.yaml',
  text: 'kind: Cluster\nname: lab\nvmids: { lower: 100000, upper: 199999 }\nnodes: [pve-01]\n',
};
const vm = (name: string, config: string): SpecFile => ({
  path: `${name}.yaml`,
  text: `kind: VM\nname: ${name}\ncluster: lab\nnode: pve-01\nconfig:\n${config}`,
});
/** Twelve files of unknown keys, as a fork's pull request sent them. */
const hostile: SpecFile[] = [
  CLUSTER,
  ...Array.from({ length: 12 }, (_, f) =>
    vm(`g${f}`, `  memroy: 1\n${Array.from({ length: 2000 }, (_, k) => `  memroy${f}x${k}: 1\n`).join('')}`),
  ),
];

const threads: SpecLoadThread[] = [];
const started = (thread: SpecLoadThread): SpecLoadThread => {
  threads.push(thread);
  return thread;
};
afterEach(async () => {
  for (const thread of threads.splice(0)) await thread.close();
});

describe('loading specs on a worker thread', () => {
  it('loads and validates off the calling thread, with the same result as loading here', async () => {
    const workers: number[] = [];
    const thread = started(new SpecLoadThread({ onWorkerStart: (worker) => workers.push(worker.threadId) }));
    const before = suggestionWork();
    const loaded = await thread.load(hostile);
    // Every "did you mean" search was done in the other thread: none here.
    expect(suggestionWork()).toBe(before);
    expect(workers).toHaveLength(1);
    expect(workers[0]).not.toBe(threadId);
    const here = loadSpecs(hostile);
    expect(loaded.specs).toEqual(here.specs);
    expect(loaded.errors.map(formatSpecError)).toEqual(here.errors.map(formatSpecError));
    expect(loaded.errors[0]).toBeInstanceOf(SpecError);
    expect(loaded.errors.map(formatSpecError)).toContain('g0.yaml:6:3: unknown config key "memroy" for a VM (did you mean "memory"?)');
    // The thread is kept for the next load.
    await thread.load([CLUSTER]);
    expect(workers).toHaveLength(1);
  });

  it('stops a load that outlasts its budget with an error naming the budget, and loads the next on a new thread', async () => {
    const workers: number[] = [];
    // A budget the test runs out by hand, once the load is sent: the thread is busy with it then.
    const budgets: (() => void)[] = [];
    let budgetStarted: () => void = () => {};
    const nextBudget = (): Promise<void> => new Promise((resolve) => (budgetStarted = resolve));
    const startBudget: StartBudget = (_ms, expired) => {
      budgets.push(expired);
      budgetStarted();
      return () => {};
    };
    const thread = started(new SpecLoadThread({ budgetMs: 30_000, startBudget, onWorkerStart: (worker) => workers.push(worker.threadId) }));
    let sent = nextBudget();
    const stuck = thread.load(hostile);
    await sent;
    budgets[0]?.();
    const error = await stuck.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpecLoadTimeout);
    expect((error as Error).message).toMatch(/took longer than the 30 s budget of a plan and was stopped/);
    sent = nextBudget();
    const next = thread.load([CLUSTER, vm('web', '  memory: 1024\n')]);
    await sent;
    const loaded = await next;
    expect(loaded.errors).toEqual([]);
    expect(loaded.specs.guests.map((g) => g.name)).toEqual(['web']);
    expect(workers).toHaveLength(2);
  });
});
