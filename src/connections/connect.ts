import type { PveLogger, PveResponseEvent } from '../pve/client.js';
import type { SpecSet } from '../core/model.js';
import { envPrefix, loadClusterConnections } from './cluster-connections.js';
import { type OpenClusters, openClusters } from './open-clusters.js';

/** Clusters the specs name but the server has no connection for. */
export class MissingConnectionError extends Error {
  override name = 'MissingConnectionError';
  constructor(readonly clusters: string[]) {
    const first = clusters[0] ?? '';
    super(
      `no connection configured for cluster${clusters.length > 1 ? 's' : ''} ${clusters.join(', ')}: set ${envPrefix(first)}URL and ` +
        `${envPrefix(first)}TOKEN, or name a connections file (see README "Cluster connections")`,
    );
  }
}

/** Cluster names a spec set (and its base) refers to, sorted. */
export function clusterNames(...sets: (SpecSet | undefined)[]): string[] {
  const names = new Set<string>();
  for (const set of sets) {
    for (const c of set?.clusters ?? []) names.add(c.name);
    for (const g of set?.guests ?? []) names.add(g.cluster);
  }
  return [...names].sort();
}

/** Where connections come from, and what to tell about them. */
export interface ConnectOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** A connections file (`--clusters FILE` or `PVE_GITOPS_CLUSTERS`). */
  file?: string | undefined;
  warn?: (message: string) => void;
  /** Lines for a person watching a request or task that takes more than a few seconds. */
  progress?: (message: string) => void;
  logger?: PveLogger | undefined;
  /** Observer of every Proxmox request's outcome (the App's request metric). */
  onResponse?: ((event: PveResponseEvent) => void) | undefined;
}

/**
 * Opens clients for the named clusters from the server's configuration (environment or
 * connections file) — the one way both the CLI and the App reach a cluster. `read` opens
 * read-only clients with the read token where one is configured. Throws
 * {@link MissingConnectionError} naming every cluster without a connection, and
 * `ClusterConfigError` for a malformed setting.
 */
export async function connectClusters(names: string[], mode: 'read' | 'write', options: ConnectOptions): Promise<OpenClusters> {
  const connections = await loadClusterConnections({ names, env: options.env, cwd: options.cwd, file: options.file });
  const missing = names.filter((n) => !connections[n]);
  if (missing.length > 0) throw new MissingConnectionError(missing);
  const wanted = Object.fromEntries(names.map((n) => [n, connections[n]!]));
  return openClusters(wanted, mode, {
    warn: options.warn,
    progress: options.progress,
    logger: options.logger,
    onResponse: options.onResponse,
  });
}
