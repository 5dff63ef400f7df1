/**
 * `pve-gitops serve [--role all|web|worker]`: runs the GitHub App until SIGTERM or SIGINT. A thin
 * wrapper over `src/server`: configuration problems are printed one per line (never a stack
 * trace) with exit status 1; a clean stop exits 0.
 */
import { loadServerConfig, SERVER_ROLES, type ServerRole } from '../server/config.js';
import { startServer } from '../server/serve.js';
import { ServerStartError } from '../server/start-error.js';
import { closeOnSignals } from '../server/shutdown.js';
import { parseFlags, UsageError } from './args.js';
import type { Command } from './types.js';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the GitHub App: webhooks and the workers that plan, apply and report drift (--role web or worker runs one of them)',
  usage: 'pve-gitops serve [--role all|web|worker]   (configuration from the environment: README, "The GitHub App", "Running it")',
  async run(args, io) {
    const flags = parseFlags(args, { role: { type: 'string', default: 'all' } });
    if (!(SERVER_ROLES as readonly string[]).includes(flags.role)) {
      throw new UsageError(`--role must be one of ${SERVER_ROLES.join(', ')}, got '${flags.role}'`);
    }
    const role = flags.role as ServerRole;
    const loaded = await loadServerConfig(io.env, { cwd: io.cwd, role });
    if (!loaded.ok) {
      io.stderr.write(`pve-gitops serve: cannot start, the configuration has ${loaded.problems.length} problem(s):\n`);
      for (const problem of loaded.problems) io.stderr.write(`  ${problem}\n`);
      return 1;
    }
    let server: Awaited<ReturnType<typeof startServer>>;
    try {
      server = await startServer({ config: loaded.config, role });
    } catch (error) {
      if (error instanceof ServerStartError) {
        io.stderr.write(`pve-gitops serve: ${error.message}\n`);
        return 1;
      }
      throw error;
    }
    const signals = closeOnSignals(
      async (signal) => {
        server.logger.info({ signal }, 'stopping');
        await server.close();
      },
      { onRepeat: (signal) => server.logger.warn({ signal }, 'already stopping') },
    );
    try {
      // A close that failed rejects: the CLI reports it and exits 1.
      await signals.closed;
    } finally {
      signals.remove();
    }
    return 0;
  },
};
