/**
 * The App's composition root: the one place that constructs Redis connections, the Probot
 * instance, queues, workers and the HTTP server, and closes them again. `role` decides what runs
 * in this process — `web` answers webhooks and enqueues, `worker` runs jobs, `all` both — so the
 * two scale out as separate replicas sharing one Redis. `startServer` is a recipe: the pieces are
 * made by the files beside it (`redis-connections.ts`, `queues.ts`, `workers.ts`,
 * `worker-role.ts`, `web-role.ts`, `github-clients.ts`, `closers.ts`); what the jobs and the
 * webhook handlers do is not here but in `src/queue` and `src/webhooks`.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createLogger } from '../logger.js';
import { DriftStore } from '../queue/drift/drift-store.js';
import { statePrefix } from '../queue/keys.js';
import type { SpecLoadThreadOptions } from '../spec-files/spec-load-thread.js';
import { within } from '../util/within.js';
import { Closers } from './closers.js';
import type { ServerConfig, ServerRole } from './config.js';
import { createProbot, githubClients } from './github-clients.js';
import { createHttpServer, type HttpRoute, type Readiness } from './http.js';
import { AppMetrics, createMetricsServer } from './metrics.js';
import { openRedis } from './redis-connections.js';
import { ServerStartError } from './start-error.js';
import { startWebRole } from './web-role.js';
import { type ApplyWindowOptions, startWorkerRole } from './worker-role.js';

/** Options of {@link startServer}. */
export interface StartServerOptions {
  config: ServerConfig;
  role?: ServerRole;
  /** The process logger; default a JSON logger on stderr at the configured level. */
  logger?: Logger;
  /** More `GET` routes on the HTTP server (by path). */
  routes?: Readonly<Record<string, HttpRoute>>;
  /** The spec load thread's budget and its clock (tests run the budget out by hand). */
  specLoads?: Pick<SpecLoadThreadOptions, 'budgetMs' | 'startBudget'>;
  /** The clock apply windows are judged by, and how often a parked guest looks again (tests move their own clock). */
  applyWindows?: ApplyWindowOptions;
}

/** A started App process. */
export interface RunningServer {
  /** `http://host:port` the process listens on. */
  url: string;
  role: ServerRole;
  logger: Logger;
  /** The process's metrics (the apply worker counts applies here). */
  metrics: AppMetrics;
  /** `http://host:port` of the metrics server when METRICS_PORT is set. */
  metricsUrl?: string | undefined;
  readiness(): Promise<Readiness>;
  /**
   * Stops taking webhooks (readiness fails at once), lets running jobs finish for up to the
   * configured shutdown timeout and hands back the rest (another worker picks them up), then
   * closes Redis. Idempotent; every step is attempted.
   */
  close(): Promise<void>;
}

/** `http://host:port` of a listening server, loopback for a wildcard address. */
function listeningUrl(address: AddressInfo): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host === '[::]' || host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`;
}

/** Listens on `port`; a port taken is a {@link ServerStartError} naming `label`. Resolves the server's URL. */
async function listen(server: Server, port: number, host: string | undefined, label: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new ServerStartError(`cannot listen on ${host ?? '*'}:${port}${label}: ${error.message}`)));
    server.listen(port, host, () => resolve());
  });
  return listeningUrl(server.address() as AddressInfo);
}

/** Whether the process can do its work: not stopping, Redis answering, every worker running. */
async function checkReadiness(redis: Redis, workers: readonly Worker[], stopping: boolean): Promise<Readiness> {
  const problems: string[] = [];
  if (stopping) problems.push('shutting down');
  const pong = await within(
    redis.ping().catch(() => undefined),
    1000,
  );
  if (pong !== 'PONG') problems.push('Redis unreachable');
  if (workers.some((w) => !w.isRunning())) problems.push('workers not running');
  return { ready: problems.length === 0, problems };
}

/**
 * Starts the App in this process: the fail-fast Redis connection, the metrics and GitHub clients,
 * then each role's side, then the HTTP servers. Everything opened is closed again, newest first,
 * by `close()` — or at once when the start fails half-way.
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config } = options;
  const role = options.role ?? 'all';
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  const closers = new Closers(logger);
  let stopping = false;
  try {
    const redis = await openRedis('state', config.redisUrl, closers);
    const metrics = new AppMetrics();
    metrics.watchDrift(() => new DriftStore(redis, statePrefix(config.redisPrefix)).drifted());
    const probot = createProbot(config, logger);
    const clients = githubClients(probot, metrics);
    const workers =
      role === 'web'
        ? []
        : await startWorkerRole({
            config,
            logger,
            metrics,
            clients,
            closers,
            specLoads: options.specLoads,
            applyWindows: options.applyWindows,
          });
    const webhooks = role === 'worker' ? undefined : await startWebRole({ config, logger, metrics, probot, redis, closers });

    const readiness = () => checkReadiness(redis, workers, stopping);
    const server = createHttpServer({
      webhooks,
      webhookPath: config.webhookPath,
      readiness,
      routes: config.metricsPort === undefined ? { [config.metricsPath]: metrics.route(), ...options.routes } : options.routes,
      onError: (error) => logger.error({ err: error }, 'request failed'),
    });
    const url = await listen(server, config.port, config.host, '');
    // First to close: no new webhooks while the rest shuts down.
    closers.add('http', async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        logger.info('no longer taking webhooks: finishing running jobs');
      });
    });
    let metricsUrl: string | undefined;
    if (config.metricsPort !== undefined) {
      const metricsServer = createMetricsServer(config.metricsPath, metrics);
      metricsUrl = await listen(metricsServer, config.metricsPort, config.host, ' (METRICS_PORT)');
      closers.add('metrics http', async () => {
        await new Promise<void>((resolve) => {
          metricsServer.close(() => resolve());
          metricsServer.closeAllConnections();
        });
      });
    }
    logger.info({ url, role, webhookPath: role === 'worker' ? undefined : config.webhookPath }, 'pve-gitops App serving');

    let closing: Promise<void> | undefined;
    return {
      url,
      role,
      logger,
      metrics,
      metricsUrl,
      readiness,
      close() {
        stopping = true;
        closing ??= closers.closeAll().then(() => logger.info('pve-gitops App stopped'));
        return closing;
      },
    };
  } catch (error) {
    await closers.closeAll();
    throw error;
  }
}
