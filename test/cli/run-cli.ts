/**
 * Runs the command line in-process as a user types it: `main` with the arguments, the environment
 * given (colour off), its own stdout and stderr collected, and stdin as given.
 */
import { PassThrough, Readable } from 'node:stream';
import { main } from '../../src/cli.js';
import type { CommandIO } from '../../src/commands/types.js';

/** What a command left: its exit code and everything it wrote. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function collect(stream: PassThrough): () => string {
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return () => text;
}

/** Runs `pve-gitops <args>`; `clock` (ms since the epoch) is the time apply windows are judged by. */
export async function cli(args: string[], env: NodeJS.ProcessEnv = {}, cwd = process.cwd(), stdin = '', clock?: number): Promise<Run> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out = collect(stdout);
  const err = collect(stderr);
  const io: CommandIO = {
    stdout,
    stderr,
    stdin: Readable.from([stdin]),
    env: { NO_COLOR: '1', ...env },
    cwd,
    ...(clock !== undefined ? { clock: () => clock } : {}),
  };
  const code = await main(args, io);
  return { code, stdout: out(), stderr: err() };
}
