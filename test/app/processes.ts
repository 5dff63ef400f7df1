/**
 * `pve-gitops serve` as separate processes, as they run in production: `node --import tsx
 * src/bin.ts serve --role …` with an operator's environment. Waits for log lines (events), never
 * for a clock.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A running `pve-gitops serve` process. */
export interface AppProcess {
  url: string;
  child: ChildProcess;
  /** Everything it wrote to stderr (its JSON log) and stdout. */
  output(): string;
  /** Resolves with the first output line matching `pattern` (already written or to come). */
  waitFor(pattern: RegExp): Promise<string>;
  /** Resolves with the exit code once it exited. */
  exited: Promise<number | null>;
  /** Sends `signal` (default SIGTERM) and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Spawns `pve-gitops serve --role <role>` with exactly `env` (plus PATH) and waits until it serves (its info log line: LOG_LEVEL info or lower). */
export async function spawnApp(role: 'all' | 'web' | 'worker', env: Record<string, string>): Promise<AppProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin.ts', 'serve', '--role', role], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const onData = (chunk: Buffer): void => {
    text += chunk.toString();
    for (const waiter of [...waiters]) {
      const line = text.split('\n').find((l) => waiter.pattern.test(l));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = (pattern: RegExp): Promise<string> => {
    const line = text.split('\n').find((l) => pattern.test(l));
    if (line !== undefined) return Promise.resolve(line);
    return new Promise<string>((resolve, reject) => {
      waiters.push({ pattern, resolve });
      exited.then((code) => reject(new Error(`pve-gitops serve exited with ${code} before printing ${pattern}:\n${text}`)));
    });
  };
  const serving = await waitFor(/"msg":"pve-gitops App serving"/);
  const url = (JSON.parse(serving) as { url: string }).url;
  return {
    url,
    child,
    output: () => text,
    waitFor,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
