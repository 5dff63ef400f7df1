/**
 * `pve-gitops sim`: serves the simulated Proxmox VE API until SIGINT/SIGTERM. Once listening it
 * prints exactly one JSON line on stdout (URL, tokens, CA/fingerprint with --tls, nodes, guest
 * count) so scripts and other processes can connect; everything else goes to stderr.
 */
import { startSimulator, type SimulatorOptions } from '../pve/sim/index.js';
import { intFlag, parseFlags, UsageError } from './args.js';
import type { Command, CommandIO } from './types.js';

const USAGE =
  'pve-gitops sim [--host 127.0.0.1] [--port 8006] [--nodes pve-01,pve-02] [--token USER@REALM!ID=SECRET] ' +
  '[--audit-token USER@REALM!ID=SECRET] [--tls] [--latency-ms N] [--task-ms N] [--auth-delay-ms N] [--rrd-lag-ms N] [--ha-round-ms N] [--fixture FILE]';

const FLAGS = {
  host: { type: 'string' },
  port: { type: 'string' },
  nodes: { type: 'string' },
  token: { type: 'string' },
  'audit-token': { type: 'string' },
  tls: { type: 'boolean' },
  'latency-ms': { type: 'string' },
  'rrd-lag-ms': { type: 'string' },
  'ha-round-ms': { type: 'string' },
  'task-ms': { type: 'string' },
  'auth-delay-ms': { type: 'string' },
  fixture: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Turns the flags into simulator options; throws {@link UsageError} on bad values. */
function simOptions(args: string[]): SimulatorOptions | 'help' {
  const flags = parseFlags(args, FLAGS);
  if (flags.help) return 'help';
  const port = intFlag(flags.port, 'port', 8006);
  if (port > 65535) throw new UsageError(`--port must be at most 65535, got ${port}`);
  const nodes = flags.nodes
    ?.split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  if (nodes !== undefined) {
    if (nodes.length === 0) throw new UsageError('--nodes needs at least one node name');
    for (const node of nodes) {
      if (!/^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/.test(node)) throw new UsageError(`--nodes: invalid node name '${node}'`);
    }
  }
  return {
    host: flags.host ?? '127.0.0.1',
    port,
    ...(nodes ? { nodes } : {}),
    ...(flags.token ? { token: flags.token } : {}),
    ...(flags['audit-token'] ? { auditToken: flags['audit-token'] } : {}),
    tls: flags.tls === true,
    latencyMs: intFlag(flags['latency-ms'], 'latency-ms', 0),
    rrdLagMs: intFlag(flags['rrd-lag-ms'], 'rrd-lag-ms', 0),
    // HA-managed guests change power state at the HA manager's next round, as on Proxmox.
    haRoundMs: intFlag(flags['ha-round-ms'], 'ha-round-ms', 1000),
    taskMs: intFlag(flags['task-ms'], 'task-ms', 50),
    // Proxmox delays failed logins by 3 s; the CLI behaves the same unless told otherwise.
    authFailureDelayMs: intFlag(flags['auth-delay-ms'], 'auth-delay-ms', 3000),
    ...(flags.fixture ? { fixture: flags.fixture } : {}),
  };
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

async function run(args: string[], io: CommandIO): Promise<number> {
  let options: SimulatorOptions | 'help';
  try {
    options = simOptions(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(`pve-gitops sim: ${err.message}\nUsage: ${USAGE}\n`);
    return 1;
  }
  if (options === 'help') {
    io.stdout.write(`Usage: ${USAGE}\n\n${simCommand.summary}\n`);
    return 0;
  }
  const signal = untilSignal();
  let running;
  try {
    running = await startSimulator(options);
  } catch (err) {
    io.stderr.write(`pve-gitops sim: ${(err as Error).message}\n`);
    return 1;
  }
  const line = {
    url: running.url,
    token: running.token,
    auditToken: running.auditToken,
    ...(running.caFile ? { caFile: running.caFile } : {}),
    ...(running.fingerprint ? { fingerprint: running.fingerprint } : {}),
    nodes: running.sim.nodes,
    guests: running.sim.guests.size,
  };
  io.stdout.write(`${JSON.stringify(line)}\n`);
  io.stderr.write(`pve-gitops sim: serving ${running.url}/api2/json (Ctrl-C to stop)\n`);
  const received = await signal;
  io.stderr.write(`pve-gitops sim: ${received}, shutting down\n`);
  await running.close();
  return 0;
}

/** The `sim` subcommand. */
export const simCommand: Command = {
  name: 'sim',
  summary: 'serve a simulated Proxmox VE API (stateful, faithful errors, tasks, tokens) on loopback',
  usage: USAGE,
  run,
};
