/** Where a command writes: results to `stdout`, progress and errors to `stderr`. */
export interface CommandIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The time apply windows are judged by, ms since the epoch (default the wall clock; tests inject their own). */
  clock?: () => number;
}

/** A subcommand of `pve-gitops`: takes its own arguments, returns the process exit code. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(args: string[], io: CommandIO): Promise<number>;
}
