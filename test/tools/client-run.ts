/**
 * What the scripts that run a real Proxmox client against the simulator share (proxmoxer/run.ts,
 * ansible/run.ts): the simulator's token in the parts a client is given, the client run with its
 * output passed through, and the report of the API requests it made, from the simulator's journal.
 */
import { spawn } from 'node:child_process';
import type { RunningSimulator } from '../../src/pve/sim/index.js';

/** The simulator's API token as clients take it: `user@realm`, the token's name, its secret. */
export function tokenParts(sim: RunningSimulator): { user: string; tokenName: string; secret: string } {
  const eq = sim.token.lastIndexOf('=');
  const [user, tokenName] = sim.token.slice(0, eq).split('!') as [string, string];
  return { user, tokenName, secret: sim.token.slice(eq + 1) };
}

/**
 * Runs `command` with its output on ours; resolves its exit status, 127 (with `cannot run <name>`
 * on stderr) when it cannot be started.
 */
export function runClient(name: string, command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<number> {
  return new Promise<number>((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'], ...(env ? { env } : {}) });
    child.on('exit', (status) => resolve(status ?? 1));
    child.on('error', (err) => {
      process.stderr.write(`cannot run ${name}: ${err.message}\n`);
      resolve(127);
    });
  });
}

/**
 * Prints the requests in the simulator's journal, as JSON with `--json`, else one per line
 * (status, method, path, parameters); then closes the simulator and exits with `code`.
 */
export async function reportRequestsAndExit(sim: RunningSimulator, code: number): Promise<never> {
  const requests = sim.sim.statsCollector.requests();
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(requests, null, 1)}\n`);
  else for (const r of requests) process.stdout.write(`${r.status} ${r.method} ${r.path} ${JSON.stringify(r.params)}\n`);
  await sim.close();
  process.exit(code);
}
