/**
 * What several subcommands do alike: load and validate a spec directory (with the limits from the
 * environment), report invalid specs, open the clusters' connections with progress on stderr. It
 * holds no subcommand of its own.
 */
import type { SpecSet } from '../core/model.js';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { formatSpecError } from '../core/spec/errors.js';
import type { OpenClusters } from '../connections/open-clusters.js';
import type { SpecParseCache } from '../core/spec/parse-cache.js';
import { collectSpecDir, loadSpecDirContents, type SpecDirContents } from '../spec-files/read-spec-dir.js';
import { SpecLimitSettingError, specLimitsFromEnv } from '../spec-files/spec-limits-env.js';
import type { CommandIO } from './types.js';
import { UsageError } from './args.js';

/** Writes one line to stderr: progress and diagnostics, never results. */
export function note(io: CommandIO, line: string): void {
  io.stderr.write(`${line}\n`);
}

/**
 * Loads and validates a spec directory; each error as `file:line:col: message` (or `file: message`
 * for a file refused whole). The bounds come from the environment (`PVE_GITOPS_MAX_…`); loads
 * that share `cache` (a plan's base and head) parse equal files once. `contents`: the directory
 * as {@link readSpecDir} already read it.
 */
export async function loadSpecDir(
  dir: string,
  io: CommandIO,
  cache?: SpecParseCache,
  contents?: SpecDirContents,
): Promise<{ specs: SpecSet; errorLines: string[] }> {
  const limits = specLimits(io);
  // Large repositories are parsed on worker threads; a worker that fails only costs speed.
  const loaded = await loadSpecDirContents(contents ?? (await readSpecDir(dir, io)), {
    label: dir,
    limits,
    ...(cache ? { cache } : {}),
    onWorkerFailure: (error) => note(io, `warning: parsing specs in the main thread instead of a worker: ${error.message}`),
  });
  return { specs: loaded.specs, errorLines: loaded.errors.map(formatSpecError) };
}

/** Reads a spec directory's files (the first half of {@link loadSpecDir}), within the environment's bounds. */
export function readSpecDir(dir: string, io: CommandIO): Promise<SpecDirContents> {
  return collectSpecDir(resolve(io.cwd, dir), { label: dir, limits: specLimits(io) });
}

/** The spec bounds the environment sets (`PVE_GITOPS_MAX_…`); a malformed one is a usage error. */
export function specLimits(io: CommandIO): ReturnType<typeof specLimitsFromEnv> {
  try {
    return specLimitsFromEnv(io.env);
  } catch (err) {
    if (err instanceof SpecLimitSettingError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * Prints spec errors (one `file:line:col: message` per line, the command's result) and says on
 * stderr what was not done because of them. True when there were errors.
 */
export function reportInvalidSpecs(io: CommandIO, errorLines: readonly string[], notDone: string): boolean {
  if (errorLines.length === 0) return false;
  for (const line of errorLines) io.stdout.write(`${line}\n`);
  note(io, `the specs are invalid: ${notDone}`);
  return true;
}

/**
 * The CLI's diagnostic log: JSON lines on stderr, silent unless PVE_GITOPS_LOG_LEVEL asks
 * (`debug` shows every Proxmox request with its status and time).
 */
async function commandLogger(io: CommandIO): Promise<Logger | undefined> {
  const level = io.env.PVE_GITOPS_LOG_LEVEL;
  if (!level || level === 'silent') return undefined;
  const { createLogger } = await import('../logger.js');
  return createLogger({ level, stream: io.stderr });
}

/**
 * Opens clients for the named clusters (see {@link connectClusters}); a missing connection also
 * says how to try the product without a cluster. `preconnect`: the command reads every guest,
 * its clients open their connections ahead (`src/pve/preconnect.ts`).
 */
export async function connect(
  names: string[],
  mode: 'read' | 'write',
  io: CommandIO,
  file: string | undefined,
  { preconnect = false }: { preconnect?: boolean } = {},
): Promise<OpenClusters> {
  // Loaded here, not with this module: `validate` needs neither the Proxmox client nor undici,
  // whose loading took about a tenth of its time.
  const [{ ClusterConfigError }, { connectClusters, MissingConnectionError }] = await Promise.all([
    import('../connections/cluster-connections.js'),
    import('../connections/connect.js'),
  ]);
  const logger = await commandLogger(io);
  try {
    return await connectClusters(names, mode, {
      env: io.env,
      cwd: io.cwd,
      file,
      warn: (message) => note(io, `warning: ${message}`),
      progress: (message) => note(io, message),
      logger,
      preconnect,
    });
  } catch (err) {
    if (err instanceof MissingConnectionError)
      throw new UsageError(`${err.message}; to try the product without a cluster run \`pve-gitops demo\``);
    if (err instanceof ClusterConfigError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * A progress reporter for long reads: silent for the first second (small estates need no
 * progress), then at most one line per second on stderr, and the last line once it started.
 */
export function progress(io: CommandIO): (event: { cluster: string; read: number; total: number }) => void {
  const started = Date.now();
  let last = 0;
  return (event) => {
    const now = Date.now();
    if (now - started < 1000) return;
    if (event.read !== event.total && now - last < 1000) return;
    last = now;
    note(io, `reading ${event.cluster}: ${event.read}/${event.total} guests`);
  };
}
