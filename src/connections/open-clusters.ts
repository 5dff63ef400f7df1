import type { ClusterAccess } from '../core/model.js';
import { type ClusterConnection, clusterAccess } from './cluster-connections.js';
import { PveClient, type PveLogger } from '../pve/client.js';
import { PveClusterAdapter } from '../pve/cluster-adapter.js';

/**
 * Requests in flight per cluster unless configured: enough that a drift read of 1,000 guests at
 * 20 ms round trip takes about 1.3 s, few enough for pveproxy's small worker pool.
 */
export const DEFAULT_CONCURRENCY = 16;

/** A logger that can make per-cluster children (pino's shape). */
interface ChildLogger extends PveLogger {
  child(bindings: Record<string, unknown>): PveLogger;
}

/** Adapters for a set of clusters, closed together. */
export interface OpenClusters {
  clusters: Record<string, PveClusterAdapter>;
  /** The clients behind the adapters, for calls outside the ports (version, nodes). */
  clients: Record<string, PveClient>;
  /** Per cluster, what planning needs from the connection: host-access policy, insecurity. */
  access: Record<string, ClusterAccess>;
  close(): Promise<void>;
}

/**
 * Opens one client per cluster. `mode: 'read'` is for plans and drift: it uses the read-only
 * token when one is configured and the client refuses every write before any I/O, so the plan
 * path holds no writer (DESIGN §6).
 */
export function openClusters(
  connections: Readonly<Record<string, ClusterConnection>>,
  mode: 'read' | 'write',
  options: { logger?: PveLogger; warn?: (message: string) => void } = {},
): OpenClusters {
  const clients: Record<string, PveClient> = {};
  const clusters: Record<string, PveClusterAdapter> = {};
  const access: Record<string, ClusterAccess> = {};
  for (const connection of Object.values(connections)) {
    access[connection.name] = clusterAccess(connection);
    if (access[connection.name]?.insecure === 'http') {
      options.warn?.(`cluster ${connection.name}: plain http:// — the token travels unencrypted (allowed explicitly)`);
    } else if (connection.insecure) {
      options.warn?.(`cluster ${connection.name}: TLS verification is turned OFF (insecure: true)`);
    }
    const client = new PveClient({
      cluster: connection.name,
      url: connection.url,
      token: mode === 'read' ? (connection.readToken ?? connection.token) : connection.token,
      ca: connection.ca,
      fingerprint: connection.fingerprint,
      insecure: connection.insecure,
      concurrency: connection.concurrency ?? DEFAULT_CONCURRENCY,
      readOnly: mode === 'read',
      logger:
        options.logger && 'child' in options.logger ? (options.logger as ChildLogger).child({ cluster: connection.name }) : options.logger,
    });
    clients[connection.name] = client;
    clusters[connection.name] = new PveClusterAdapter(client);
  }
  return {
    clusters,
    clients,
    access,
    async close() {
      await Promise.allSettled(Object.values(clients).map((c) => c.close()));
    },
  };
}
