/**
 * From the specs to open clusters: which clusters the specs name, their connections from the
 * server's environment or a connections file, refusals for a cluster without a connection or a
 * repository a cluster does not allow, and the opened adapters. Reading the connection settings
 * themselves is `cluster-connections.ts`; talking to Proxmox is `src/pve`.
 */
import type { PveLogger, PveResponseEvent } from '../pve/transport.js';
import type { SpecSet } from '../core/model.js';
import { type ClusterConnection, loadClusterConnections, repositoryAllowed } from './cluster-connections.js';
import { envPrefix } from '../core/cluster-name.js';
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

/** Clusters whose connection the server does not let this repository use. */
export class RepositoryNotAllowedError extends Error {
  override name = 'RepositoryNotAllowedError';
  constructor(
    readonly clusters: string[],
    readonly repository: string,
  ) {
    super(clusters.map((cluster) => repositoryRefusal(cluster, repository)).join('; '));
  }
}

/**
 * Why `repository` may not use `cluster`: names the setting, never the repositories it allows
 * (another repository's name is not this one's business).
 */
function repositoryRefusal(cluster: string, repository: string): string {
  return `repository ${repository} may not use cluster '${cluster}': the server's ${envPrefix(cluster)}REPOSITORIES (or repositories: in the connections file) does not name it`;
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
  /**
   * The App: the repository (`owner/name`) whose specs name the clusters; a cluster whose
   * connection does not let it is refused ({@link RepositoryNotAllowedError}).
   */
  repository?: string | undefined;
  /** Open each cluster's connections ahead of the requests: for a command that reads every guest (`drift`). */
  preconnect?: boolean | undefined;
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
  const repository = options.repository;
  if (repository !== undefined) {
    const refused = names.filter((n) => !repositoryAllowed(connections[n]!.repositories, repository));
    if (refused.length > 0) throw new RepositoryNotAllowedError(refused, repository);
  }
  const wanted = Object.fromEntries(names.map((n) => [n, connections[n]!]));
  return openClusters(wanted, mode, {
    warn: options.warn,
    progress: options.progress,
    logger: options.logger,
    onResponse: options.onResponse,
    preconnect: options.preconnect,
  });
}

/**
 * Opens read-only clients for those of `names` the server has a connection for and lets
 * `options.repository` use. Clusters without a connection are left out (the plan says "no
 * connection is configured"); refused ones are left out too, with why, for the plan to report.
 * Throws `ClusterConfigError` for a malformed setting.
 */
export async function connectReadable(
  names: readonly string[],
  options: ConnectOptions,
): Promise<{ open: OpenClusters; refused: Record<string, string> }> {
  let wanted = [...names];
  const refused: Record<string, string> = {};
  // Each round leaves out at least one cluster, so this ends.
  for (;;) {
    try {
      return { open: await connectClusters(wanted, 'read', options), refused };
    } catch (error) {
      if (error instanceof MissingConnectionError) {
        wanted = wanted.filter((name) => !error.clusters.includes(name));
      } else if (error instanceof RepositoryNotAllowedError) {
        for (const cluster of error.clusters) refused[cluster] = repositoryRefusal(cluster, error.repository);
        wanted = wanted.filter((name) => !error.clusters.includes(name));
      } else {
        throw error;
      }
    }
  }
}

/**
 * Every connection the server has (the `PVE_CLUSTER_<NAME>_URL` groups of the environment and
 * the connections file), for checks of the configuration as a whole.
 */
export async function configuredConnections(options: Pick<ConnectOptions, 'env' | 'cwd' | 'file'>): Promise<ClusterConnection[]> {
  const names = Object.keys(options.env)
    .map((key) => /^PVE_CLUSTER_(.+)_URL$/.exec(key)?.[1]?.toLowerCase())
    .filter((name): name is string => name !== undefined && name !== '');
  const connections = await loadClusterConnections({ names, env: options.env, cwd: options.cwd, file: options.file });
  return Object.values(connections).sort((a, b) => a.name.localeCompare(b.name));
}
