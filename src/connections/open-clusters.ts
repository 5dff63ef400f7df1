/**
 * Opens the Proxmox adapters for a set of configured connections (a client per cluster with its
 * concurrency and progress notes) and closes them together. It does not decide which clusters to
 * open or check who may use them (`connect.ts` does).
 */
import type { ClusterAccess } from '../core/model.js';
import { type ClusterConnection, clusterAccess } from './cluster-connections.js';
import { PveClient } from '../pve/client.js';
import type { PveLogger, PveResponseEvent } from '../pve/transport.js';
import { PveClusterAdapter } from '../pve/cluster-adapter.js';

/**
 * Requests in flight per cluster unless configured: enough that a drift read of 1,000 guests at
 * 20 ms round trip takes about 1.3 s, few enough for pveproxy's small worker pool.
 */
const DEFAULT_CONCURRENCY = 16;

/** Adapters for a set of clusters, closed together. */
export interface OpenClusters {
  clusters: Record<string, PveClusterAdapter>;
  /** The clients behind the adapters, for calls outside the ports (version, nodes). */
  clients: Record<string, PveClient>;
  /** Per cluster, what planning needs from the connection: host-access policy, insecurity. */
  access: Record<string, ClusterAccess>;
  /** Per cluster, the repositories the server lets use it (absent: every one). */
  repositories: Record<string, readonly string[] | undefined>;
  close(): Promise<void>;
}

/** Options of {@link openClusters}. */
interface OpenClustersOptions {
  /** Gets every client's request log lines (each carries its `cluster`). */
  logger?: PveLogger;
  warn?: (message: string) => void;
  /**
   * Lines for a person watching when something takes longer than a few seconds: a request that
   * has not been answered, a task still running. At most one line per cluster every 5 seconds.
   */
  progress?: (message: string) => void;
  /** After how long a request or task counts as slow, and how often it is reported (default 5 s). */
  slowAfterMs?: number;
  /** Observer of every Proxmox request's outcome (the App's request metric). */
  onResponse?: ((event: PveResponseEvent) => void) | undefined;
  /** Open each cluster's connections ahead of the requests (`PveClientOptions.preconnect`): a command reading every guest. */
  preconnect?: boolean | undefined;
}

const SLOW_AFTER_MS = 5_000;

/** At most one progress line per cluster per interval, however many requests are slow at once. */
function throttled(progress: (message: string) => void, everyMs: number): (cluster: string, message: string) => void {
  const last = new Map<string, number>();
  return (cluster, message) => {
    const now = Date.now();
    if (now - (last.get(cluster) ?? -Infinity) < everyMs * 0.9) return;
    last.set(cluster, now);
    progress(message);
  };
}

/**
 * Opens one client per cluster. `mode: 'read'` is for plans and drift: it uses the read-only
 * token when one is configured and the client refuses every write before any I/O, so the plan
 * path holds no writer.
 */
export function openClusters(
  connections: Readonly<Record<string, ClusterConnection>>,
  mode: 'read' | 'write',
  options: OpenClustersOptions = {},
): OpenClusters {
  const clients: Record<string, PveClient> = {};
  const clusters: Record<string, PveClusterAdapter> = {};
  const access: Record<string, ClusterAccess> = {};
  const repositories: Record<string, readonly string[] | undefined> = {};
  const slowAfterMs = options.slowAfterMs ?? SLOW_AFTER_MS;
  const progress = options.progress ? throttled(options.progress, slowAfterMs) : undefined;
  for (const connection of Object.values(connections)) {
    access[connection.name] = clusterAccess(connection);
    repositories[connection.name] = connection.repositories;
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
      timeoutMs: connection.timeoutMs,
      connectTimeoutMs: connection.connectTimeoutMs,
      readOnly: mode === 'read',
      preconnect: options.preconnect === true,
      slowRequestMs: slowAfterMs,
      // The client puts `cluster` on every line itself: no child logger binding it a second time.
      logger: options.logger,
      onResponse: options.onResponse,
      onSlowRequest: progress
        ? (e) =>
            progress(
              e.cluster,
              `${e.cluster}: waiting for an answer to ${e.method} ${e.path} for ${Math.round(e.elapsedMs / 1000)} s (gives up after ${Math.round(e.timeoutMs / 1000)} s)`,
            )
        : undefined,
    });
    clients[connection.name] = client;
    clusters[connection.name] = new PveClusterAdapter(client, {
      slowTaskMs: slowAfterMs,
      onSlowTask: progress
        ? (e) => progress(e.cluster, `${e.cluster}: task ${e.upid} still running after ${Math.round(e.elapsedMs / 1000)} s`)
        : undefined,
    });
  }
  return {
    clusters,
    clients,
    access,
    repositories,
    async close() {
      await Promise.allSettled(Object.values(clients).map((c) => c.close()));
    },
  };
}
