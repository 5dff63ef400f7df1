/**
 * The App's configuration: the environment, parsed once into a {@link ServerConfig}, or a list of
 * problems, one line per variable, that `pve-gitops serve` prints before exiting. Nothing else in
 * the App reads the environment; cluster connections are passed on as the CLI takes them
 * (`PVE_CLUSTER_<NAME>_*` or a connections file) and opened per plan by `connectClusters`.
 */
import { createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ClusterConfigError, loadClusterConnections } from '../connections/cluster-connections.js';
import { LOG_LEVELS, type LogLevel } from '../logger.js';

/** Which part of the App a process runs: `web` answers webhooks, `worker` runs jobs, `all` both. */
export type ServerRole = 'all' | 'web' | 'worker';

export const SERVER_ROLES: readonly ServerRole[] = ['all', 'web', 'worker'];

/** Probot's default webhook path, kept so an app registered from app.yml works unchanged. */
const DEFAULT_WEBHOOK_PATH = '/api/github/webhooks';

/** Everything the App needs to run, validated. Holds secrets: never log it whole. */
export interface ServerConfig {
  appId: number;
  /** PEM text of the App's private key. */
  privateKey: string;
  /** Secret GitHub signs deliveries with; absent for a worker-only process, which receives none. */
  webhookSecret: string | undefined;
  webhookPath: string;
  port: number;
  host: string | undefined;
  logLevel: LogLevel;
  /** GitHub's REST API root for GitHub Enterprise Server (`${GHE_PROTOCOL}://${GHE_HOST}/api/v3`); undefined: github.com. */
  githubBaseUrl: string | undefined;
  redisUrl: string;
  /** Prefix of every Redis key the App writes (queues and state), so several installs can share one Redis. */
  redisPrefix: string;
  /** Jobs one worker process runs at once. */
  workerConcurrency: number;
  /** How long a stopping process waits for running jobs before handing them back. */
  shutdownTimeoutMs: number;
  /**
   * BullMQ's job lock: a worker renews it while a job runs; a job whose lock expired (its worker
   * died) is found by the stall check and runs again on another worker.
   */
  jobLockMs: number;
  /** How often each worker looks for stalled jobs. */
  stalledIntervalMs: number;
  /** Merge-to-apply (README "Merge to apply (GitHub App)"). */
  apply: ApplySettings;
  /** Where cluster connections come from, exactly as the CLI reads them (see `connectClusters`). */
  connections: { env: NodeJS.ProcessEnv; cwd: string; file: string | undefined };
  /** Interval of each repository's scheduled drift report; 0: no schedule (`/pve drift` still works). */
  driftIntervalMs: number;
  /** Path of the Prometheus metrics. */
  metricsPath: string;
  /** Port of a server for the metrics alone; undefined: served on PORT. */
  metricsPort: number | undefined;
}

/** How merged plans are applied; shared by every worker process on one Redis. */
interface ApplySettings {
  /** Guest jobs one worker process runs at once (guests waiting out a Proxmox lock included). */
  concurrency: number;
  /** Guests being read and written at once per cluster, across all workers. */
  clusterLimit: number;
  /** Guests being read and written at once per node, across all workers. */
  nodeLimit: number;
  /** How long a Proxmox lock (a backup) is waited out before the guest is reported. */
  lockWaitMs: number;
  /** First pause while a Proxmox lock is waited out; doubles up to 15 s. */
  lockPollMs: number;
  /** Runs of a guest job when the cluster is unreachable (the first included). */
  attempts: number;
  /** First pause before running a guest job again; doubles each time. */
  backoffMs: number;
  /** The pull request's apply comment and check run are updated at most this often. */
  reportIntervalMs: number;
  /** A GitHub deployment per cluster per run, its status following the items (on unless `APPLY_DEPLOYMENTS=0`). */
  deployments: boolean;
}

/** The outcome of {@link loadServerConfig}: a config, or every problem found. */
type ConfigResult = { ok: true; config: ServerConfig } | { ok: false; problems: string[] };

/** Said when the GitHub App credentials are missing: where to get them. */
const REGISTER_HINT =
  'no GitHub App credentials: register the app from app.yml (README "Registering the app": open ' +
  "https://github.com/settings/apps/new, or your organisation's, and create it with the permissions and events app.yml lists), " +
  'then set APP_ID, PRIVATE_KEY_PATH (the downloaded .pem) and WEBHOOK_SECRET';

const LogLevelSchema = z.enum(LOG_LEVELS);

/** `host` or `host:port`, no scheme or path (Probot's GHE_HOST). */
const HOST_PATTERN = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$/;

/** BullMQ and state keys start with this; keep it to characters that read well in `redis-cli`. */
const PREFIX_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function intVar(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  range: { min: number; max: number },
  problems: string[],
  what: string,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < range.min || Number(raw) > range.max) {
    problems.push(`${name}: must be ${what}, an integer from ${range.min} to ${range.max}; got '${raw.slice(0, 40)}'`);
    return fallback;
  }
  return Number(raw);
}

/** Default interval of the scheduled drift report: hourly. */
const DEFAULT_DRIFT_INTERVAL_MS = 3600_000;

/**
 * DRIFT_INTERVAL: `0` (off), seconds (`3600`), or a number with a unit (`90s`, `30m`, `1h`, `1d`);
 * at least a minute, at most a week.
 */
function parseDriftInterval(raw: string | undefined, problems: string[]): number {
  if (raw === undefined || raw === '') return DEFAULT_DRIFT_INTERVAL_MS;
  const match = /^(\d+)\s*(s|m|h|d)?$/.exec(raw.trim());
  const unit = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 } as const;
  const ms = match ? Number(match[1]) * unit[(match[2] as keyof typeof unit | undefined) ?? 's'] : Number.NaN;
  if (ms === 0) return 0;
  if (!(ms >= 60_000 && ms <= 7 * 86_400_000)) {
    problems.push(`DRIFT_INTERVAL: must be 0 (off) or from 60s to 7d, like 3600, 30m or 1h; got '${raw.slice(0, 40)}'`);
    return DEFAULT_DRIFT_INTERVAL_MS;
  }
  return ms;
}

/** The interval in words for the report ("every hour"). */
export function intervalWords(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [size, name] of units) {
    if (ms % size === 0) {
      const n = ms / size;
      return n === 1 ? `every ${name}` : `every ${n} ${name}s`;
    }
  }
  return `every ${ms} ms`;
}

/**
 * A PEM private key from PRIVATE_KEY as people manage to pass it: multi-line, with literal `\n`
 * escapes (one-line env files, docker `--env`), or base64-encoded PEM (Probot accepts that too).
 */
export function normalisePrivateKey(raw: string): string {
  const text = raw.trim();
  if (text.includes('-----BEGIN')) return `${text.replace(/\\n/g, '\n')}\n`;
  if (/^[A-Za-z0-9+/=\s]+$/.test(text)) {
    const decoded = Buffer.from(text, 'base64').toString('utf8');
    if (decoded.includes('-----BEGIN')) return decoded;
  }
  return text;
}

/** True when `pem` is a private key node:crypto can read; the key itself never goes into a message. */
function isPrivateKey(pem: string): boolean {
  try {
    return createPrivateKey(pem).type === 'private';
  } catch {
    return false;
  }
}

async function readPrivateKey(env: NodeJS.ProcessEnv, cwd: string, problems: string[]): Promise<string> {
  const inline = env.PRIVATE_KEY;
  const path = env.PRIVATE_KEY_PATH;
  if (inline !== undefined && inline !== '') {
    const pem = normalisePrivateKey(inline);
    if (!isPrivateKey(pem))
      problems.push('PRIVATE_KEY: not a PEM private key (paste the .pem GitHub generated, with \\n for line breaks, or base64)');
    return pem;
  }
  if (path !== undefined && path !== '') {
    let text: string;
    try {
      text = await readFile(resolve(cwd, path), 'utf8');
    } catch (error) {
      problems.push(`PRIVATE_KEY_PATH: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
      return '';
    }
    if (!isPrivateKey(text)) problems.push(`PRIVATE_KEY_PATH: ${path} is not a PEM private key`);
    return text;
  }
  problems.push('PRIVATE_KEY or PRIVATE_KEY_PATH: required, the private key GitHub generated for the app (.pem)');
  return '';
}

/** Names of clusters configured through `PVE_CLUSTER_<NAME>_URL`, as the CLI would look them up. */
function envClusterNames(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .map((key) => /^PVE_CLUSTER_(.+)_URL$/.exec(key)?.[1])
    .filter((name): name is string => name !== undefined && name !== '')
    .map((name) => name.toLowerCase())
    .sort();
}

/**
 * Checks the cluster connections a worker will open, so a typo stops the start instead of failing
 * every plan later: each `PVE_CLUSTER_<NAME>_*` group and the connections file, each on its own
 * line. The connections are opened per plan, with the cluster names the specs use.
 */
async function checkConnections(env: NodeJS.ProcessEnv, cwd: string, problems: string[]): Promise<void> {
  const file = env.PVE_GITOPS_CLUSTERS || undefined;
  let found = 0;
  if (file !== undefined) {
    try {
      found += Object.keys(await loadClusterConnections({ names: [], env: {}, cwd, file })).length;
    } catch (error) {
      problems.push(`PVE_GITOPS_CLUSTERS: ${error instanceof ClusterConfigError ? error.message : String(error)}`);
      found += 1;
    }
  }
  // The file was checked above; each variable group on its own, so every mistake gets its line.
  const variables = { ...env, PVE_GITOPS_CLUSTERS: undefined };
  for (const name of envClusterNames(env)) {
    try {
      found += Object.keys(await loadClusterConnections({ names: [name], env: variables, cwd, file: undefined })).length;
    } catch (error) {
      problems.push(error instanceof ClusterConfigError ? error.message : String(error));
      found += 1;
    }
  }
  if (found === 0) {
    problems.push(
      'PVE_CLUSTER_<NAME>_URL and PVE_CLUSTER_<NAME>_TOKEN, or PVE_GITOPS_CLUSTERS: no cluster connection configured; ' +
        'a worker plans against the clusters the specs name (README "Cluster connections")',
    );
  }
}

/**
 * Reads the App's configuration from `env` (Probot's variable names plus the App's own). Every
 * problem is reported at once, one line each, naming the variable; secrets are never echoed.
 * `role` decides what is needed: a worker needs cluster connections, a web process the webhook secret.
 */
export async function loadServerConfig(env: NodeJS.ProcessEnv, options: { cwd: string; role: ServerRole }): Promise<ConfigResult> {
  const problems: string[] = [];
  const web = options.role !== 'worker';
  const worker = options.role !== 'web';

  const credentialsMissing = !env.APP_ID && !env.PRIVATE_KEY && !env.PRIVATE_KEY_PATH;
  if (credentialsMissing) problems.push(REGISTER_HINT);

  let appId = 0;
  if (!env.APP_ID) {
    if (!credentialsMissing) problems.push('APP_ID: required, the app\'s numeric ID (its settings page, "App ID")');
  } else if (!/^\d+$/.test(env.APP_ID) || Number(env.APP_ID) <= 0) {
    problems.push(`APP_ID: must be the app's numeric ID; got '${env.APP_ID.slice(0, 40)}'`);
  } else {
    appId = Number(env.APP_ID);
  }

  const privateKey = credentialsMissing ? '' : await readPrivateKey(env, options.cwd, problems);

  const webhookSecret = env.WEBHOOK_SECRET || undefined;
  if (web && webhookSecret === undefined) {
    problems.push("WEBHOOK_SECRET: required, the secret set in the app's webhook settings (deliveries are verified with it)");
  }

  const webhookPath = env.WEBHOOK_PATH || DEFAULT_WEBHOOK_PATH;
  if (!/^\/[\w\-./~%]*$/.test(webhookPath))
    problems.push(`WEBHOOK_PATH: must be a URL path starting with '/'; got '${webhookPath.slice(0, 80)}'`);

  const port = intVar(env, 'PORT', 3000, { min: 0, max: 65535 }, problems, 'the TCP port to listen on');
  const host = env.HOST || undefined;

  let logLevel: LogLevel = 'info';
  if (env.LOG_LEVEL) {
    const parsed = LogLevelSchema.safeParse(env.LOG_LEVEL);
    if (parsed.success) logLevel = parsed.data;
    else problems.push(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}; got '${env.LOG_LEVEL.slice(0, 40)}'`);
  }

  let githubBaseUrl: string | undefined;
  const protocol = env.GHE_PROTOCOL || 'https';
  if (protocol !== 'https' && protocol !== 'http') problems.push(`GHE_PROTOCOL: must be https or http; got '${protocol.slice(0, 40)}'`);
  if (env.GHE_HOST) {
    if (!HOST_PATTERN.test(env.GHE_HOST)) {
      problems.push(`GHE_HOST: must be a host name (and optional :port) without scheme or path; got '${env.GHE_HOST.slice(0, 80)}'`);
    } else {
      githubBaseUrl = `${protocol}://${env.GHE_HOST}/api/v3`;
    }
  } else if (env.GHE_PROTOCOL) {
    problems.push('GHE_PROTOCOL: set without GHE_HOST; set GHE_HOST to your GitHub Enterprise Server host');
  }

  const redisUrl = env.REDIS_URL ?? '';
  if (!redisUrl) {
    problems.push('REDIS_URL: required, e.g. redis://127.0.0.1:6379 (jobs and plans are kept in Redis)');
  } else if (!/^rediss?:\/\/[^\s]+$/.test(redisUrl) || !URL.canParse(redisUrl)) {
    // The URL may hold a password: never echo it.
    problems.push('REDIS_URL: must be a redis:// or rediss:// URL');
  }

  const redisPrefix = env.REDIS_PREFIX || 'pve-gitops';
  if (!PREFIX_PATTERN.test(redisPrefix))
    problems.push(`REDIS_PREFIX: letters, digits, '_', '.', '-' (at most 64); got '${redisPrefix.slice(0, 80)}'`);

  const workerConcurrency = intVar(env, 'WORKER_CONCURRENCY', 2, { min: 1, max: 64 }, problems, 'how many jobs a worker runs at once');
  const shutdownTimeoutMs =
    1000 * intVar(env, 'SHUTDOWN_TIMEOUT', 25, { min: 1, max: 3600 }, problems, 'seconds to wait for running jobs when stopping');

  const jobLockMs = intVar(env, 'JOB_LOCK_MS', 30_000, { min: 1000, max: 600_000 }, problems, 'milliseconds of a job lock');
  const stalledIntervalMs = intVar(
    env,
    'JOB_STALLED_INTERVAL_MS',
    30_000,
    { min: 500, max: 600_000 },
    problems,
    'milliseconds between stalled-job checks',
  );
  const apply: ApplySettings = {
    concurrency: intVar(env, 'APPLY_CONCURRENCY', 16, { min: 1, max: 256 }, problems, 'how many guest applies a worker runs at once'),
    clusterLimit: intVar(env, 'APPLY_CLUSTER_LIMIT', 4, { min: 1, max: 256 }, problems, 'guests written at once per cluster'),
    nodeLimit: intVar(env, 'APPLY_NODE_LIMIT', 2, { min: 1, max: 64 }, problems, 'guests written at once per node'),
    lockWaitMs: 1000 * intVar(env, 'APPLY_LOCK_WAIT', 600, { min: 0, max: 86_400 }, problems, 'seconds to wait out a Proxmox lock'),
    lockPollMs: intVar(
      env,
      'APPLY_LOCK_POLL_MS',
      1000,
      { min: 10, max: 60_000 },
      problems,
      'milliseconds of the first pause in a lock wait',
    ),
    attempts: intVar(env, 'APPLY_ATTEMPTS', 5, { min: 1, max: 50 }, problems, 'runs of a guest apply when the cluster is unreachable'),
    backoffMs: intVar(env, 'APPLY_BACKOFF_MS', 10_000, { min: 10, max: 3_600_000 }, problems, 'milliseconds before the first retry'),
    reportIntervalMs: intVar(
      env,
      'APPLY_REPORT_INTERVAL_MS',
      3000,
      { min: 10, max: 600_000 },
      problems,
      'milliseconds between updates of the apply comment',
    ),
    deployments: flag01(env, 'APPLY_DEPLOYMENTS', problems, true),
  };

  if (worker) await checkConnections(env, options.cwd, problems);

  const driftIntervalMs = parseDriftInterval(env.DRIFT_INTERVAL, problems);
  const metricsPath = env.METRICS_PATH || '/metrics';
  if (!/^\/[\w\-./~%]*$/.test(metricsPath))
    problems.push(`METRICS_PATH: must be a URL path starting with '/'; got '${metricsPath.slice(0, 80)}'`);
  else if (metricsPath === webhookPath || metricsPath === '/healthz' || metricsPath === '/readyz')
    problems.push(`METRICS_PATH: '${metricsPath}' is taken by the webhook or health endpoints`);
  const metricsPort = env.METRICS_PORT
    ? intVar(env, 'METRICS_PORT', 0, { min: 0, max: 65535 }, problems, 'the TCP port of the metrics')
    : undefined;

  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    config: {
      appId,
      privateKey,
      webhookSecret,
      webhookPath,
      port,
      host,
      logLevel,
      githubBaseUrl,
      redisUrl,
      redisPrefix,
      workerConcurrency,
      shutdownTimeoutMs,
      jobLockMs,
      stalledIntervalMs,
      apply,
      connections: { env: { ...env }, cwd: options.cwd, file: env.PVE_GITOPS_CLUSTERS || undefined },
      driftIntervalMs,
      metricsPath,
      metricsPort,
    },
  };
}

/** A `0`/`1` switch of the environment (absent or empty: `absent`); anything else is a problem. */
function flag01(env: NodeJS.ProcessEnv, name: string, problems: string[], absent = false): boolean {
  const value = env[name];
  if (value === undefined || value === '') return absent;
  if (value === '0') return false;
  if (value === '1') return true;
  problems.push(`${name} must be 0 or 1, got '${value}'`);
  return absent;
}
