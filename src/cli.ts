import { createRequire } from 'node:module';
import { applyCommand } from './commands/apply.js';
import { checkCommand } from './commands/check.js';
import { UsageError } from './commands/args.js';
import { demoCommand } from './commands/demo.js';
import { driftCommand } from './commands/drift.js';
import { planCommand } from './commands/plan.js';
import { schemaCommand } from './commands/schema.js';
import { serveCommand } from './commands/serve.js';
import { simCommand } from './commands/sim.js';
import type { Command, CommandIO } from './commands/types.js';
import { validateCommand } from './commands/validate.js';

/** Every subcommand, in the order `--help` lists them. */
export const COMMANDS: readonly Command[] = [
  demoCommand,
  validateCommand,
  checkCommand,
  planCommand,
  applyCommand,
  driftCommand,
  schemaCommand,
  simCommand,
  serveCommand,
];

function version(): string {
  const require = createRequire(import.meta.url);
  return (require('../package.json') as { version: string }).version;
}

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'pve-gitops — pull-request plans and merge-to-apply for Proxmox VE',
    '',
    'Usage: pve-gitops <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `pve-gitops <command> --help` for the options of a command.',
    '',
  ].join('\n');
}

function defaultIO(): CommandIO {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd() };
}

/** Runs the command line; resolves with the exit status. */
export async function main(argv: string[], io: CommandIO = defaultIO()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(help());
    return name === undefined ? 1 : 0;
  }
  if (name === '--version' || name === '-v') {
    io.stdout.write(`${version()}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.stderr.write(`pve-gitops: unknown command '${name}'\n\n${help()}`);
    return 1;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`Usage: ${command.usage}\n\n${command.summary}\n`);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`pve-gitops ${command.name}: ${err.message}\nUsage: ${command.usage}\n`);
      return 1;
    }
    io.stderr.write(`pve-gitops ${command.name}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
