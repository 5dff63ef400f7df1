/**
 * Loads spec files as `loadSpecs` does, parsing large repositories on several threads: YAML
 * parsing is most of the time of loading (about three quarters for 10,000 guests), and each file
 * parses on its own. Worker threads parse batches of files (`parseSpecFile`, plain-data results);
 * the main thread puts the results back in file order and does the cross-file work
 * (`assembleSpecs`), so the result is the same as `loadSpecs(files)`.
 *
 * A worker that cannot start, crashes or cannot send its result costs only speed: its batches are
 * parsed in the main thread. Workers are terminated before this returns, also on error.
 */
import { availableParallelism } from 'node:os';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { assembleSpecs, loadSpecs, type LoadedSpecs, type SpecFile } from '../core/spec/load-specs.js';
import { parseSpecFiles, type ParsedSpecFile } from '../core/spec/parse-spec-file.js';
import type { ParseReply, ParseRequest } from './parse-worker.js';

/** Below this much YAML (in characters) starting threads costs more than it saves. */
export const PARALLEL_THRESHOLD = 512 * 1024;

/** Most threads worth starting: beyond this the main thread's share of the work dominates. */
const MAX_PARSERS = 4;

/** Batches each worker holds at once, so it never waits for the main thread to hand out the next one. */
const IN_FLIGHT = 2;

/** Options of {@link loadSpecFiles}. */
export interface LoadSpecFilesOptions {
  /** Worker threads to start. Default: one per core, up to 4, minus one for the main thread. 0 parses in-thread. */
  workers?: number;
  /** Total characters of YAML below which everything is parsed in-thread. Default {@link PARALLEL_THRESHOLD}. */
  threshold?: number;
  /** The worker script (default: `parse-worker` next to this module); a `.ts` script is run with tsx's loader. */
  workerUrl?: URL;
  /** Whether the main thread parses too while workers run. Default true. */
  mainThreadParses?: boolean;
  /** Told when a worker fails and its files are parsed in the main thread instead; loading goes on. */
  onWorkerFailure?: (error: Error) => void;
}

/**
 * Loads and validates spec files: `loadSpecs(files)`, with the parsing spread over worker threads
 * when there is enough YAML to be worth it.
 */
export async function loadSpecFiles(files: readonly SpecFile[], options: LoadSpecFilesOptions = {}): Promise<LoadedSpecs> {
  const workers = Math.max(0, Math.floor(options.workers ?? Math.min(availableParallelism(), MAX_PARSERS) - 1));
  const size = files.reduce((sum, file) => sum + file.text.length, 0);
  if (workers === 0 || files.length === 0 || size < (options.threshold ?? PARALLEL_THRESHOLD)) return loadSpecs(files);
  const parsed = await parseOnThreads(files, workers, size, options);
  return assembleSpecs(parsed);
}

/** A run of consecutive files, parsed as one message. */
interface Batch {
  from: number;
  to: number;
  size: number;
}

/** Cuts `files` into runs of about `target` characters (a larger file is a batch of its own). */
function batchesOf(files: readonly SpecFile[], target: number): Batch[] {
  const batches: Batch[] = [];
  let current: Batch = { from: 0, to: 0, size: 0 };
  files.forEach((file, index) => {
    if (current.size > 0 && current.size + file.text.length > target) {
      batches.push(current);
      current = { from: index, to: index, size: 0 };
    }
    current.to = index + 1;
    current.size += file.text.length;
  });
  if (current.to > current.from) batches.push(current);
  return batches;
}

interface ParserThread {
  worker: Worker;
  inFlight: Set<number>;
  alive: boolean;
}

async function parseOnThreads(
  files: readonly SpecFile[],
  workerCount: number,
  size: number,
  options: LoadSpecFilesOptions,
): Promise<ParsedSpecFile[]> {
  const mainThreadParses = options.mainThreadParses ?? true;
  const parsers = workerCount + (mainThreadParses ? 1 : 0);
  // Several batches per parser, so the last ones finish close together.
  const batches = batchesOf(files, Math.max(16 * 1024, Math.ceil(size / (parsers * 8))));
  const results: (ParsedSpecFile[] | undefined)[] = new Array(batches.length);
  // Largest first: what is left at the end is small.
  const queue = batches.map((_, index) => index).sort((a, b) => (batches[b]?.size ?? 0) - (batches[a]?.size ?? 0));
  /** Batches a worker could not send back; only the main thread may parse them. */
  const mainOnly: number[] = [];
  const threads: ParserThread[] = [];
  let closing = false;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  const filesOf = (index: number): SpecFile[] => {
    const batch = batches[index];
    return batch ? files.slice(batch.from, batch.to) : [];
  };
  const dispatch = (thread: ParserThread): void => {
    while (thread.alive && thread.inFlight.size < IN_FLIGHT) {
      const index = queue.shift();
      if (index === undefined) return;
      thread.inFlight.add(index);
      thread.worker.postMessage({ batch: index, files: filesOf(index) } satisfies ParseRequest);
    }
  };
  const fail = (thread: ParserThread, error: Error): void => {
    if (!thread.alive || closing) return;
    thread.alive = false;
    queue.unshift(...thread.inFlight);
    thread.inFlight.clear();
    options.onWorkerFailure?.(error);
    void thread.worker.terminate();
    for (const other of threads) dispatch(other);
    notify();
  };

  try {
    const script = options.workerUrl ?? new URL(import.meta.url.endsWith('.ts') ? './parse-worker.ts' : './parse-worker.js', import.meta.url);
    for (let n = 0; n < workerCount; n++) {
      let worker: Worker;
      try {
        const { entry, workerOptions } = workerFor(script);
        worker = new Worker(entry, workerOptions);
      } catch (error) {
        options.onWorkerFailure?.(error instanceof Error ? error : new Error(String(error)));
        break;
      }
      const thread: ParserThread = { worker, inFlight: new Set(), alive: true };
      threads.push(thread);
      worker.on('message', (reply: ParseReply) => {
        if (!thread.alive) return;
        if (!thread.inFlight.has(reply.batch) || ('parsed' in reply && !fitsBatch(reply.parsed, batches[reply.batch]))) {
          fail(thread, new Error('parse worker answered with something else than the batch it was sent'));
          return;
        }
        thread.inFlight.delete(reply.batch);
        if ('parsed' in reply) {
          results[reply.batch] = reply.parsed;
        } else {
          mainOnly.push(reply.batch);
          options.onWorkerFailure?.(new Error(`parse worker could not parse or send spec files: ${reply.failed}`));
        }
        dispatch(thread);
        notify();
      });
      worker.on('error', (error) => fail(thread, error));
      worker.on('messageerror', (error) => fail(thread, error));
      worker.on('exit', (code) => fail(thread, new Error(`parse worker exited with code ${code}`)));
      dispatch(thread);
    }

    for (;;) {
      const workersBusy = threads.some((thread) => thread.inFlight.size > 0);
      const index = mainOnly.shift() ?? (mainThreadParses || !workersBusy ? queue.shift() : undefined);
      if (index !== undefined) {
        results[index] = parseSpecFiles(filesOf(index));
        // Let worker replies in, so idle workers get their next batch.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      if (!workersBusy) break;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    closing = true;
    await Promise.all(threads.map((thread) => thread.worker.terminate()));
  }
  return results.flatMap((parsed, index) => {
    if (parsed === undefined) throw new Error(`spec files ${String(batches[index]?.from)}… were not parsed`);
    return parsed;
  });
}

/** Whether a worker's answer holds one parsed file for each file of the batch. */
function fitsBatch(parsed: unknown, batch: Batch | undefined): boolean {
  return batch !== undefined && Array.isArray(parsed) && parsed.length === batch.to - batch.from;
}

/**
 * How to start a worker running `script`. JavaScript (the built package) runs as is. TypeScript
 * (running from sources: tsx, vitest) needs tsx's loader, and `--import tsx` in the worker's
 * `execArgv` does not give it one: on Node 20 tsx registers its hooks in the main thread only, so
 * the worker's entry fails with "Unknown file extension .ts". A one-line bootstrap registers them
 * through tsx's API and then imports the script. Throws when tsx cannot be found.
 */
function workerFor(script: URL): { entry: URL | string; workerOptions: WorkerOptions } {
  if (!script.pathname.endsWith('.ts')) return { entry: script, workerOptions: {} };
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); });`;
  return { entry: bootstrap, workerOptions: { eval: true, execArgv: [] } };
}
