/**
 * Worker processes for real: `node --import tsx src/bin.ts serve --role worker` with the App's
 * environment, exactly what the image runs (`pve-gitops serve --role worker`), so tests can kill
 * one with SIGKILL mid-apply or stop it with SIGSTOP. Its JSON log lines (stderr) are kept and
 * can be waited for.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../src/bin.ts', import.meta.url));

/** A log line of the worker, parsed. */
// biome-ignore lint/suspicious/noExplicitAny: pino lines are free-form JSON
export type LogLine = Record<string, any>;

/** A running worker process. */
export interface WorkerProcess {
  pid: number;
  /** `http://host:port` it serves health (and, for the web role, webhooks) on. */
  url: string;
  lines: LogLine[];
  /** The first log line (logged already or to come) for which `test` holds; rejects if the process exits first. */
  until(test: (line: LogLine) => boolean): Promise<LogLine>;
  /** Sends `signal` and waits for the process to end (SIGSTOP/SIGCONT return at once). */
  signal(signal: NodeJS.Signals): Promise<void>;
  /** Resolves with how the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a worker process with `env` (the App's environment) and waits until it serves. */
export function startWorkerProcess(env: Record<string, string>): Promise<WorkerProcess> {
  return startAppProcess(['serve', '--role', 'worker'], env);
}

/**
 * Starts `pve-gitops <args>` (`serve …`) with `env` and waits until it serves: from the sources, or
 * the built `bin` (a `.js` file, run as the image runs it) in `cwd`.
 */
export async function startAppProcess(
  args: readonly string[],
  env: Record<string, string>,
  options: { bin?: string; cwd?: string } = {},
): Promise<WorkerProcess> {
  const bin = options.bin ?? BIN;
  const child: ChildProcess = spawn(process.execPath, [...(bin.endsWith('.ts') ? ['--import', 'tsx'] : []), bin, ...args], {
    // Only what the App is configured with, plus what node needs to run.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines: LogLine[] = [];
  let waiters: { test: (line: LogLine) => boolean; resolve: (line: LogLine) => void; reject: (error: Error) => void }[] = [];
  let rest = '';
  let text = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    rest += chunk.toString();
    const parts = rest.split('\n');
    rest = parts.pop() ?? '';
    for (const part of parts) {
      let line: LogLine;
      try {
        line = JSON.parse(part) as LogLine;
      } catch {
        line = { msg: part };
      }
      lines.push(line);
      waiters = waiters.filter((w) => {
        if (!w.test(line)) return true;
        w.resolve(line);
        return false;
      });
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      for (const w of waiters)
        w.reject(new Error(`worker process exited (${code ?? signal}) before the awaited log line:\n${text.slice(-3000)}`));
      waiters = [];
      resolve({ code, signal });
    }),
  );
  const until = (test: (line: LogLine) => boolean): Promise<LogLine> => {
    const found = lines.find(test);
    if (found) return Promise.resolve(found);
    if (child.exitCode !== null || child.signalCode !== null)
      return Promise.reject(new Error(`worker process has exited:\n${text.slice(-3000)}`));
    return new Promise((resolve, reject) => waiters.push({ test, resolve, reject }));
  };
  const serving = await until((line) => line.msg === 'pve-gitops App serving');
  return {
    pid: child.pid ?? 0,
    url: String(serving.url),
    lines,
    until,
    async signal(signal) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      if (signal !== 'SIGSTOP' && signal !== 'SIGCONT') await exited;
    },
    exited,
  };
}
