/**
 * The command line's entry: the list of subcommands, `--help` and `--version`, and the dispatch
 * of argv to one subcommand, loaded only when it runs. It knows no subcommand's flags or work
 * (each lives in `src/commands/`), and does not set the exit status (`bin.ts` does).
 */
import { createRequire } from 'node:module';
import { UsageError } from './commands/args.js';
import type { Command, CommandIO } from './commands/types.js';
import { errorMessage } from './util/error-message.js';

/**
 * A subcommand, loaded only when it runs: each command module brings its own dependencies (the
 * Proxmox client and undici, the simulator, the engine), and `validate` needs none of them.
 * Loading every module made every command pay about 0.1–0.2 s of start-up for code it never ran.
 */
interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

/** Every subcommand, in the order `--help` lists them (summaries kept equal to the modules' by a test). */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'demo',
    summary: 'the whole story on simulated clusters: plan, apply, drift, plan again',
    load: async () => (await import('./commands/demo.js')).demoCommand,
  },
  {
    name: 'validate',
    summary: 'check the spec files; exit 0 valid, 1 invalid',
    load: async () => (await import('./commands/validate.js')).validateCommand,
  },
  {
    name: 'check',
    summary: 'check the connection to every cluster of the specs: TLS, both tokens and their privileges, nodes; exit 0 ok, 1 problems',
    load: async () => (await import('./commands/check.js')).checkCommand,
  },
  {
    name: 'plan',
    summary: 'read-only plan of the specs against the clusters; exit 0 no changes, 2 changes, 1 error',
    load: async () => (await import('./commands/plan.js')).planCommand,
  },
  {
    name: 'apply',
    summary: 'apply a stored plan, or a fresh one after showing it and asking',
    load: async () => (await import('./commands/apply.js')).applyCommand,
  },
  {
    name: 'drift',
    summary: 'read-only report of every owned guest against the specs; exit 0 none, 2 drifted, 1 error',
    load: async () => (await import('./commands/drift.js')).driftCommand,
  },
  {
    name: 'import',
    summary: 'write spec files adopting the live guests the specs do not describe yet; exit 0 done, 2 some refused, 1 error',
    load: async () => (await import('./commands/import.js')).importCommand,
  },
  {
    name: 'adopt',
    summary: 'write the live values of drifted keys into the spec files (comments kept); exit 0 done or nothing to do, 1 error',
    load: async () => (await import('./commands/adopt.js')).adoptCommand,
  },
  {
    name: 'schema',
    summary: 'print the JSON Schema of spec documents, for editors',
    load: async () => (await import('./commands/schema.js')).schemaCommand,
  },
  {
    name: 'sim',
    summary: 'serve a simulated Proxmox VE API (stateful, faithful errors, tasks, tokens) on loopback',
    load: async () => (await import('./commands/sim.js')).simCommand,
  },
  {
    name: 'serve',
    summary: 'run the GitHub App: webhooks and the workers that plan, apply and report drift (--role web or worker runs one of them)',
    load: async () => (await import('./commands/serve.js')).serveCommand,
  },
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
  const entry = COMMANDS.find((c) => c.name === name);
  if (!entry) {
    io.stderr.write(`pve-gitops: unknown command '${name}'\n\n${help()}`);
    return 1;
  }
  const command = await entry.load();
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
    io.stderr.write(`pve-gitops ${command.name}: ${errorMessage(err)}\n`);
    return 1;
  }
}
