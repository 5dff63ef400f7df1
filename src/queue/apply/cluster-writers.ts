/**
 * The apply worker's cluster clients: one writing client per cluster for the life of the worker
 * process, opened the first time a guest of that cluster is applied, from the server's own
 * connection settings (never the repository's) exactly as the CLI opens them. Reusing one client
 * keeps its connection pool (and TLS sessions) across the hundreds of guest jobs of a merge, and
 * its request limit (`concurrency` of the connection) bounds everything this process sends.
 */
import { repositoryAllowed } from '../../connections/cluster-connections.js';
import { type ConnectOptions, connectClusters, RepositoryNotAllowedError } from '../../connections/connect.js';
import type { OpenClusters } from '../../connections/open-clusters.js';
import type { HostAccessRule } from '../../core/key-rules.js';
import type { ClusterWriter } from '../../core/ports.js';

/** A cluster's writer and what the server's policy lets it write. */
export interface OpenWriter {
  writer: ClusterWriter;
  /** Host-reaching options the server allows on the cluster (checked again at every write step). */
  allowHostAccess: readonly HostAccessRule[];
}

/** Writing clients by cluster name, opened on first use. */
export class ClusterWriters {
  private readonly open = new Map<string, Promise<OpenClusters>>();

  constructor(private readonly connections: ConnectOptions) {}

  /**
   * The writer of `cluster` for the specs of `repository` (`owner/name`). Throws
   * `MissingConnectionError` when the server has no connection for it, `ClusterConfigError` for a
   * malformed one and `RepositoryNotAllowedError` when the server does not let the repository use
   * it (none is worth a retry). The client is shared; the repository is checked at every call.
   */
  async get(cluster: string, repository: string): Promise<OpenWriter> {
    let opening = this.open.get(cluster);
    if (!opening) {
      opening = connectClusters([cluster], 'write', this.connections);
      this.open.set(cluster, opening);
      // A failure is not kept: a token file missing now may be there for the next guest.
      opening.catch(() => {
        if (this.open.get(cluster) === opening) this.open.delete(cluster);
      });
    }
    const clients = await opening;
    const writer = clients.clusters[cluster];
    if (!writer) throw new Error(`no client opened for cluster ${cluster}`);
    if (!repositoryAllowed(clients.repositories[cluster], repository)) throw new RepositoryNotAllowedError([cluster], repository);
    return { writer, allowHostAccess: clients.access[cluster]?.allowHostAccess ?? [] };
  }

  /** Closes every client; idempotent. */
  async close(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.allSettled(all.map(async (opening) => (await opening).close()));
  }
}
