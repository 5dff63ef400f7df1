/**
 * Loads spec files as `loadSpecs` does — bounds, strict decoding, parsing, cross-file assembly —
 * with two savings for large repositories:
 *
 * - a content-addressed parse cache (`createSpecParseCache`): texts already parsed, by this load,
 *   an earlier one (a pull request's base) or another file with the same bytes, are not parsed
 *   again; cross-file checks still see every guest, because assembly always runs over all files;
 * - texts in the common subset of YAML read in one pass (`parseCommonYaml`), and worker threads
 *   for what is left for the YAML library: its parsing is most of the time of loading such texts,
 *   and each file parses on its own. Workers parse batches (`parseWithLibrary`, plain-data
 *   results); the main thread parses batches too and then assembles (`assembleSpecs`), so the result is the same
 *   as `loadSpecs(files)`.
 *
 * Files come in memory (`{ path, text }` or `{ path, bytes }`): the CLI reads them from a directory
 * (`readSpecDir`), the App from a git archive. A worker that cannot start, crashes or cannot send
 * its result costs only speed: its batches are parsed in the main thread. Workers are terminated
 * before this returns, also on error.
 */
import { availableParallelism, loadavg } from 'node:os';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import {
  assembleSpecs,
  cachedParse,
  cacheParsed,
  prepareSpecFiles,
  type LoadedSpecs,
  type LoadSpecsOptions,
} from '../core/spec/load-specs.js';
import type { SpecFileInput } from '../core/spec/spec-text.js';
import { parseCommonYaml } from '../core/spec/common-yaml.js';
import { parseWithLibrary } from '../core/spec/parse-spec-file.js';
import type { ParsedSpecText } from '../core/spec/parsed-spec.js';
import type { SpecLimits } from '../core/spec/spec-limits.js';
import { withEnvSnapshot } from './env-snapshot.js';
import type { ParseReply, ParseRequest } from './parse-worker.js';

/** Below this much YAML (in characters) left for the library to parse, starting threads costs more than it saves. */
const PARALLEL_THRESHOLD = 512 * 1024;

/** Most threads worth starting: beyond this the main thread's share of the work dominates. */
const MAX_PARSERS = 4;

/** Longest stretch of parsing in the main thread between two turns of the event loop. */
const YIELD_AFTER_MS = 20;

/** Batches each worker holds at once, so it never waits for the main thread to hand out the next one. */
const IN_FLIGHT = 2;

/** Options of {@link loadSpecFiles}: those of `loadSpecs` (limits, cache, label) and the threads'. */
export interface LoadSpecFilesOptions extends LoadSpecsOptions {
  /** Worker threads to start. Default {@link defaultWorkers}: one per idle core, up to 4, minus one for the main thread. 0 parses in-thread. */
  workers?: number;
  /** Total characters of YAML to parse below which everything is parsed in-thread. Default {@link PARALLEL_THRESHOLD}. */
  threshold?: number;
  /** The worker script (default: `parse-worker` next to this module); a `.ts` script is run with tsx's loader. */
  workerUrl?: URL;
  /**
   * Whether the main thread parses too while workers run. Default true: on two cores one worker
   * plus the main thread measured faster than two workers and an idle main thread. False leaves
   * the parsing to the workers unless they fail (the main thread then waits for them: a worker
   * that hangs would hold up loading).
   */
  mainThreadParses?: boolean;
  /** Told when a worker fails and its files are parsed in the main thread instead; loading goes on. */
  onWorkerFailure?: (error: Error) => void;
  /** Told of each worker started, to observe it (every one has stopped when loading returns: `threadId` is -1). */
  onWorkerStart?: (worker: Worker) => void;
}

/**
 * Loads and validates spec files held in memory: bounds first (a repository or file over a limit
 * is refused with a `file: message` error before any YAML is parsed), then each distinct text not
 * in `options.cache` parsed once — on worker threads when there is enough of it — then every
 * file assembled and validated together. Resolves with the specs and every error, ordered by
 * file and position; `specs` is complete only when `errors` is empty.
 *
 * @example
 * const cache = createSpecParseCache({ maxEntries: 20_000 });
 * const base = await loadSpecFiles(baseFiles, { cache });
 * const head = await loadSpecFiles(headFiles, { cache }); // parses only what the change touched
 */
export async function loadSpecFiles(files: readonly SpecFileInput[], options: LoadSpecFilesOptions = {}): Promise<LoadedSpecs> {
  const prepared = prepareSpecFiles(files, options);
  if (prepared.refused) return assembleSpecs([], prepared);
  const { texts } = prepared;
  // Equal texts parse once within a load too, cache or not.
  const parses = new Map<string, ParsedSpecText | undefined>();
  for (const file of texts) if (!parses.has(file.text)) parses.set(file.text, cachedParse(file.text, prepared, options.cache));
  // Texts in the common subset of YAML are read here in a single pass, in a fraction of the
  // library's time (see common-yaml.ts); only what the library must parse is worth threads.
  const missing: string[] = [];
  let awake = performance.now();
  for (const [text, cached] of parses) {
    if (cached !== undefined) continue;
    // Parsing a large repository holds the thread for a second or more: a turn of the event loop
    // now and then lets what is in flight meanwhile go on (`plan --base` requests its listing and
    // opens its connections first: an answer left unread stalls in the socket until loading ends).
    if (performance.now() - awake > YIELD_AFTER_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      awake = performance.now();
    }
    const parsed = parseCommonYaml(text, prepared.limits);
    if (parsed === undefined) {
      missing.push(text);
      continue;
    }
    parses.set(text, parsed);
    cacheParsed(text, parsed, prepared, options.cache);
  }
  const size = missing.reduce((sum, text) => sum + text.length, 0);
  const workers = Math.max(0, Math.floor(options.workers ?? defaultWorkers()));
  const fresh =
    workers === 0 || missing.length < 2 || size < (options.threshold ?? PARALLEL_THRESHOLD)
      ? withEnvSnapshot(() => missing.map((text) => parseWithLibrary(text, prepared.limits)))
      : await parseOnThreads(missing, workers, size, prepared.limits, options);
  missing.forEach((text, index) => {
    const parsed = fresh[index];
    if (parsed === undefined) throw new Error(`spec text ${index} was not parsed`);
    parses.set(text, parsed);
    cacheParsed(text, parsed, prepared, options.cache);
  });
  return assembleSpecs(
    texts.map((file) => {
      const parsed = parses.get(file.text);
      if (parsed === undefined) throw new Error(`${file.path} was not parsed`);
      return { path: file.path, ...parsed };
    }),
    prepared,
  );
}

/**
 * Worker threads worth starting now: one per idle core, less one for the main thread, at most
 * {@link MAX_PARSERS} parsers in all. A worker costs CPU of its own (its start, copying results
 * back, a second heap to collect): on 2 cores already busy with other work, loading 10,000 guests
 * with a worker took 0.7–0.8 s more CPU and was no faster than in one thread, so a machine whose
 * load average fills its cores parses in-thread.
 */
export function defaultWorkers(cores = availableParallelism(), load = loadavg()[0] ?? 0): number {
  const idle = Math.min(cores, MAX_PARSERS) - Math.max(0, Math.round(load));
  return Math.max(0, idle - 1);
}

/** A run of consecutive texts, parsed as one message. */
interface Batch {
  from: number;
  to: number;
  size: number;
}

/** Cuts `texts` into runs of about `target` characters (a larger text is a batch of its own). */
function batchesOf(texts: readonly string[], target: number): Batch[] {
  const batches: Batch[] = [];
  let current: Batch = { from: 0, to: 0, size: 0 };
  texts.forEach((text, index) => {
    if (current.size > 0 && current.size + text.length > target) {
      batches.push(current);
      current = { from: index, to: index, size: 0 };
    }
    current.to = index + 1;
    current.size += text.length;
  });
  if (current.to > current.from) batches.push(current);
  return batches;
}

interface ParserThread {
  worker: Worker;
  /** Batches sent and not answered yet, in the order sent (the worker parses them in that order). */
  inFlight: Set<number>;
  alive: boolean;
}

async function parseOnThreads(
  texts: readonly string[],
  workerCount: number,
  size: number,
  limits: SpecLimits,
  options: LoadSpecFilesOptions,
): Promise<ParsedSpecText[]> {
  const run = new ThreadedParse(texts, workerCount, size, limits, options);
  try {
    run.startWorkers(workerCount);
    await run.parseInMainThread();
  } finally {
    await run.close();
  }
  return run.collect();
}

/**
 * One parallel parse: a queue of batches, handed to each worker as it answers (two at a time, so it
 * never waits for the main thread to hand out the next) and taken by the main thread between its
 * own batches. When the queue is empty the main thread parses batches the workers still hold
 * instead of waiting for them; a worker's answer to a batch already parsed is dropped.
 */
class ThreadedParse {
  private readonly mainThreadParses: boolean;
  private readonly batches: Batch[];
  private readonly results: (ParsedSpecText[] | undefined)[];
  private readonly queue: number[];
  /** Batches a worker could not parse or send back; only the main thread may parse them. */
  private readonly mainOnly: number[] = [];
  private readonly threads: ParserThread[] = [];
  private closing = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly texts: readonly string[],
    workerCount: number,
    size: number,
    private readonly limits: SpecLimits,
    private readonly options: LoadSpecFilesOptions,
  ) {
    this.mainThreadParses = options.mainThreadParses ?? true;
    const parsers = workerCount + (this.mainThreadParses ? 1 : 0);
    // Many batches per parser, so the last ones finish close together and the main thread lets
    // replies in often; a message costs far less than a batch.
    this.batches = batchesOf(texts, Math.max(16 * 1024, Math.ceil(size / (parsers * 16))));
    // Filled, not sparse: array methods skip holes, and a skipped batch would be lost files.
    this.results = this.batches.map(() => undefined);
    // Largest first: what is left at the end is small.
    this.queue = this.batches.map((_, index) => index).sort((a, b) => (this.batches[b]?.size ?? 0) - (this.batches[a]?.size ?? 0));
  }

  startWorkers(count: number): void {
    const script =
      this.options.workerUrl ?? new URL(import.meta.url.endsWith('.ts') ? './parse-worker.ts' : './parse-worker.js', import.meta.url);
    for (let n = 0; n < count; n++) {
      let worker: Worker;
      try {
        const { entry, workerOptions } = workerFor(script);
        worker = new Worker(entry, workerOptions);
      } catch (error) {
        this.options.onWorkerFailure?.(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      this.options.onWorkerStart?.(worker);
      const thread: ParserThread = { worker, inFlight: new Set(), alive: true };
      this.threads.push(thread);
      worker.on('message', (reply: ParseReply) => this.answered(thread, reply));
      worker.on('error', (error) => this.fail(thread, error));
      worker.on('messageerror', (error) => this.fail(thread, error));
      worker.on('exit', (code) => this.fail(thread, new Error(`parse worker exited with code ${code}`)));
      this.dispatch(thread);
    }
  }

  /** Parses batches here until every batch is parsed, here or by a worker. */
  async parseInMainThread(): Promise<void> {
    for (;;) {
      const index = this.nextForMainThread();
      if (index !== undefined) {
        this.results[index] ??= withEnvSnapshot(() => this.textsOf(index).map((text) => parseWithLibrary(text, this.limits)));
        // Let worker replies in, so a worker that finished gets its next batch.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      if (this.results.every((parsed) => parsed !== undefined)) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Every parsed text, in the order of the texts. */
  collect(): ParsedSpecText[] {
    const all: ParsedSpecText[] = [];
    for (let index = 0; index < this.batches.length; index++) {
      const parsed = this.results[index];
      if (parsed === undefined) throw new Error(`spec texts from ${String(this.batches[index]?.from)} were not parsed`);
      all.push(...parsed);
    }
    if (all.length !== this.texts.length) throw new Error(`parsed ${all.length} of ${this.texts.length} spec texts`);
    return all;
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.threads.map((thread) => thread.worker.terminate()));
  }

  private nextForMainThread(): number | undefined {
    const forMain = this.mainOnly.shift();
    if (forMain !== undefined) return forMain;
    const workersBusy = this.threads.some((thread) => this.unparsed(thread).length > 0);
    if (this.mainThreadParses || !workersBusy) return this.queue.shift() ?? this.steal();
    return undefined;
  }

  /**
   * A batch a worker holds, when nothing else is left: the last one sent to the busiest worker,
   * which it has not started if it holds two (it works through them in order). Rather than wait,
   * the main thread parses it too — at worst a batch's time, and a worker that hangs can never
   * hold up loading.
   */
  private steal(): number | undefined {
    let held: number[] = [];
    for (const thread of this.threads) {
      const unparsed = this.unparsed(thread);
      if (unparsed.length > held.length) held = unparsed;
    }
    return held[held.length - 1];
  }

  private unparsed(thread: ParserThread): number[] {
    return [...thread.inFlight].filter((index) => this.results[index] === undefined);
  }

  private textsOf(index: number): string[] {
    const batch = this.batches[index];
    return batch ? this.texts.slice(batch.from, batch.to) : [];
  }

  private dispatch(thread: ParserThread): void {
    while (thread.alive && thread.inFlight.size < IN_FLIGHT) {
      const index = this.queue.shift();
      if (index === undefined) return;
      thread.inFlight.add(index);
      thread.worker.postMessage({ batch: index, texts: this.textsOf(index), limits: this.limits } satisfies ParseRequest);
    }
  }

  private answered(thread: ParserThread, reply: ParseReply): void {
    if (!thread.alive) return;
    if (!thread.inFlight.has(reply.batch) || ('parsed' in reply && !fitsBatch(reply.parsed, this.batches[reply.batch]))) {
      this.fail(thread, new Error('parse worker answered with something else than the batch it was sent'));
      return;
    }
    thread.inFlight.delete(reply.batch);
    if ('parsed' in reply) {
      this.results[reply.batch] ??= reply.parsed;
    } else if (this.results[reply.batch] === undefined) {
      this.mainOnly.push(reply.batch);
      this.options.onWorkerFailure?.(new Error(`parse worker could not parse or send spec files: ${reply.failed}`));
    }
    this.dispatch(thread);
    this.notify();
  }

  /** Gives a failed worker's batches back to the queue; the others (or the main thread) parse them. */
  private fail(thread: ParserThread, error: Error): void {
    if (!thread.alive || this.closing) return;
    thread.alive = false;
    this.queue.unshift(...this.unparsed(thread));
    thread.inFlight.clear();
    this.options.onWorkerFailure?.(error);
    void thread.worker.terminate();
    for (const other of this.threads) this.dispatch(other);
    this.notify();
  }

  private notify(): void {
    this.wake?.();
    this.wake = undefined;
  }
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
export function workerFor(script: URL): { entry: URL | string; workerOptions: WorkerOptions } {
  if (!script.pathname.endsWith('.ts')) return { entry: script, workerOptions: {} };
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); });`;
  return { entry: bootstrap, workerOptions: { eval: true, execArgv: [] } };
}
