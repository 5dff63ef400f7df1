/**
 * Loads spec files on a worker thread, within a time budget. Loading a repository is CPU work that
 * its author controls: done on the App's main thread, twelve files of unknown keys blocked the
 * event loop for about 75 s — other webhooks went unanswered, `/healthz` timed out, the job's lock
 * expired and a second worker planned it too. On a thread of its own the main thread keeps
 * answering and renewing locks, and a load that outlasts its budget is stopped (the thread is
 * terminated) and fails with {@link SpecLoadTimeout}, which the plan reports.
 *
 * One load runs at a time, in the order asked; the thread is started on the first load and kept
 * (with its parse cache) until {@link SpecLoadThread.close}, or replaced after a timeout.
 */
import { Worker } from 'node:worker_threads';
import type { LoadedSpecs, SpecFile } from '../core/spec/load-specs.js';
import { SpecError } from '../core/spec/errors.js';
import { loadSpecFiles, workerFor } from './load-spec-files.js';
import type { LoadReply, LoadRequest } from './load-worker.js';

/** Default time one load may take: far beyond a 10,000-guest repository (about 1 s), well short of a stuck job. */
const DEFAULT_SPEC_BUDGET_MS = 60_000;

/** A load took longer than its budget and was stopped. */
export class SpecLoadTimeout extends Error {
  override readonly name = 'SpecLoadTimeout';
  constructor(readonly budgetMs: number) {
    super(
      `loading and validating the specs took longer than the ${formatBudget(budgetMs)} budget of a plan and was stopped; a repository this costly to check is refused`,
    );
  }
}

function formatBudget(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** Starts a budget: calls `expired` once `ms` have passed, unless the returned function cancels it first. */
export type StartBudget = (ms: number, expired: () => void) => () => void;

const clockBudget: StartBudget = (ms, expired) => {
  const timer = setTimeout(expired, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

/** Options of {@link SpecLoadThread}. */
export interface SpecLoadThreadOptions {
  /** Default {@link DEFAULT_SPEC_BUDGET_MS}. */
  budgetMs?: number;
  /** The clock of the budget (tests pass their own); default a timer. */
  startBudget?: StartBudget;
  /** The worker script (default: `load-worker` next to this module). */
  workerUrl?: URL;
  /** Told when the thread fails (not a timeout) and a load runs in this thread instead. */
  onWorkerFailure?: (error: Error) => void;
  /** Told of each thread started. */
  onWorkerStart?: (worker: Worker) => void;
}

/** A worker thread that loads spec files, one load at a time. */
export class SpecLoadThread {
  private worker: Worker | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private requests = 0;
  private closed = false;
  private readonly budgetMs: number;
  private readonly startBudget: StartBudget;

  constructor(private readonly options: SpecLoadThreadOptions = {}) {
    this.budgetMs = options.budgetMs ?? DEFAULT_SPEC_BUDGET_MS;
    this.startBudget = options.startBudget ?? clockBudget;
  }

  /**
   * Loads and validates `files` on the thread. Rejects with {@link SpecLoadTimeout} past the budget.
   * The result's `positions` are empty: the App reports errors by file, line and column, which the
   * errors carry.
   */
  load(files: readonly SpecFile[]): Promise<LoadedSpecs> {
    const run = this.tail.then(() => this.run(files));
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Stops the thread. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private run(files: readonly SpecFile[]): Promise<LoadedSpecs> {
    if (this.closed) return Promise.reject(new Error('the spec load thread is closed'));
    let worker: Worker;
    try {
      worker = this.thread();
    } catch (error) {
      return this.inThisThread(files, error);
    }
    const id = ++this.requests;
    return new Promise<LoadedSpecs>((resolve, reject) => {
      const done = (): void => {
        cancel();
        worker.unref();
        worker.off('message', onMessage);
        worker.off('error', onFailure);
        worker.off('exit', onExit);
      };
      const onMessage = (reply: LoadReply): void => {
        if (reply.id !== id) return;
        done();
        if ('failed' in reply) return void this.inThisThread(files, new Error(reply.failed)).then(resolve, reject);
        const errors = reply.errors.map((e) => new SpecError({ file: e.file, line: e.line, col: e.col }, e.message));
        resolve({ specs: reply.specs, errors, positions: new Map() });
      };
      const onFailure = (error: Error): void => {
        done();
        this.drop(worker);
        this.inThisThread(files, error).then(resolve, reject);
      };
      const onExit = (code: number): void => onFailure(new Error(`the spec load thread exited with code ${code}`));
      const cancel = this.startBudget(this.budgetMs, () => {
        done();
        // Terminating is what stops a load stuck in CPU work; the next load starts a new thread.
        this.drop(worker);
        reject(new SpecLoadTimeout(this.budgetMs));
      });
      worker.on('message', onMessage);
      worker.on('error', onFailure);
      worker.on('exit', onExit);
      // Held while it works: a load in flight keeps the process up as its own work would.
      worker.ref();
      worker.postMessage({ id, files: [...files] } satisfies LoadRequest);
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const script =
      this.options.workerUrl ?? new URL(import.meta.url.endsWith('.ts') ? './load-worker.ts' : './load-worker.js', import.meta.url);
    const { entry, workerOptions } = workerFor(script);
    const worker = new Worker(entry, workerOptions);
    // Idle, the thread must not keep the process alive.
    worker.unref();
    this.options.onWorkerStart?.(worker);
    this.worker = worker;
    return worker;
  }

  private drop(worker: Worker): void {
    if (this.worker === worker) this.worker = undefined;
    void worker.terminate();
  }

  /** A load the thread could not do: done here, as before threads (slower, but the plan still runs). */
  private inThisThread(files: readonly SpecFile[], error: unknown): Promise<LoadedSpecs> {
    this.options.onWorkerFailure?.(error instanceof Error ? error : new Error(String(error)));
    return loadSpecFiles(files);
  }
}
