/**
 * Cluster connections: name → API URL, credentials and TLS trust. They come from the server's
 * environment or a config file, never from the spec repository, so a pull request can never
 * redirect a credential (docs/design.md#cluster-connections). Reading and checking the settings
 * is all this file does; opening clusters with them is `connect.ts` and `open-clusters.ts`.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { envPrefix } from '../core/cluster-name.js';
import { HOST_ACCESS_RULES, type HostAccessRule, hostAccessRule } from '../core/key-rules.js';
import type { ClusterAccess } from '../core/model.js';

/** One cluster's connection: its API URL, its tokens and how its TLS certificate is trusted. */
export interface ClusterConnection {
  name: string;
  url: string;
  /** Token used for applies (`USER@REALM!ID=SECRET`). */
  token: string;
  /** Optional read-only (PVEAuditor) token used for plans and drift reports. */
  readToken?: string;
  /** PEM text of a CA to trust. */
  ca?: string;
  /** Pinned SHA-256 fingerprint of the server certificate. */
  fingerprint?: string;
  /** Explicit opt-out of TLS verification. */
  insecure: boolean;
  /** Explicit permission to use a plain `http://` URL (the token travels unencrypted). */
  allowHttp: boolean;
  /** Kinds of host-reaching options the server allows on this cluster (see `key-rules.ts`). */
  allowHostAccess: HostAccessRule[];
  /** Requests in flight to this cluster at most. */
  concurrency?: number;
  /** How long one request may wait for its answer, in ms. */
  timeoutMs?: number;
  /** How long opening a connection (TCP and TLS) may take, in ms. */
  connectTimeoutMs?: number;
  /**
   * The repositories (`owner/name`, or `owner/*` for all of an owner's, lower-cased) whose specs
   * may use this cluster; absent, every repository the App is installed on may.
   */
  repositories?: string[];
}

/** `owner/name` or `owner/*`, as GitHub spells owners and repository names. */
const REPOSITORY_RE = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/(?:\*|[A-Za-z0-9._-]{1,100})$/;

/**
 * Whether the repository `owner/name` may use the cluster of `connection`. GitHub treats owner
 * and repository names case-insensitively, so the comparison does too.
 */
export function repositoryAllowed(repositories: readonly string[] | undefined, repository: string): boolean {
  if (repositories === undefined) return true;
  const wanted = repository.toLowerCase();
  const owner = wanted.split('/')[0];
  return repositories.some((entry) => entry === wanted || entry === `${owner}/*`);
}

/** `owner/repo,owner/*` (commas or spaces) → the entries, lower-cased, refusing anything else. */
function parseRepositories(values: readonly string[] | undefined, what: string): string[] | undefined {
  if (values === undefined) return undefined;
  const entries = values.flatMap((value) => value.split(/[,\s]+/)).filter((entry) => entry !== '');
  for (const entry of entries) {
    if (!REPOSITORY_RE.test(entry))
      throw new ClusterConfigError(`${what}: '${entry}' is not a repository (owner/name, or owner/* for all of an owner's)`);
  }
  if (entries.length === 0) throw new ClusterConfigError(`${what}: names no repository (leave it out to allow every installed repository)`);
  return entries.map((entry) => entry.toLowerCase());
}

/** What planning needs to know of a connection: its host-access policy and whether it is insecure. */
export function clusterAccess(connection: ClusterConnection): ClusterAccess {
  const access: ClusterAccess = { allowHostAccess: [...connection.allowHostAccess] };
  if (connection.url.startsWith('http:')) access.insecure = 'http';
  // A pinned fingerprint or a CA wins over `insecure` (pve/tls.ts): then TLS is still verified.
  else if (connection.insecure && connection.fingerprint === undefined && connection.ca === undefined) access.insecure = 'tls-unverified';
  return access;
}

/** One cluster in a connections file. Secrets may come from the environment or a file. */
const ConnectionEntry = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  token: z.string().min(3).optional(),
  tokenEnv: z.string().min(1).optional(),
  tokenFile: z.string().min(1).optional(),
  readToken: z.string().min(3).optional(),
  readTokenEnv: z.string().min(1).optional(),
  readTokenFile: z.string().min(1).optional(),
  caFile: z.string().min(1).optional(),
  fingerprint: z
    .string()
    .regex(/^([0-9a-fA-F]{2}:?){31}[0-9a-fA-F]{2}$/, 'must be a SHA-256 fingerprint (64 hex digits, colons optional)')
    .optional(),
  insecure: z.boolean().optional(),
  allowHttp: z.boolean().optional(),
  allowHostAccess: z.array(z.enum(HOST_ACCESS_RULES, { error: `must be one of ${HOST_ACCESS_RULES.join(', ')}` })).optional(),
  concurrency: z.int().min(1).max(64).optional(),
  /** Seconds. */
  timeout: z.number().min(1).max(600).optional(),
  /** Seconds. */
  connectTimeout: z.number().min(1).max(120).optional(),
  /** Repositories that may use the cluster (`owner/name` or `owner/*`); absent: every installed one. */
  repositories: z.array(z.string()).optional(),
});

const ConnectionsFile = z.strictObject({ clusters: z.record(z.string().min(1), ConnectionEntry) });

/** A connection setting that is missing or malformed; says where it came from. */
export class ClusterConfigError extends Error {
  override name = 'ClusterConfigError';
}

async function secret(
  direct: string | undefined,
  envName: string | undefined,
  file: string | undefined,
  env: NodeJS.ProcessEnv,
  baseDir: string,
  what: string,
): Promise<string | undefined> {
  if (direct !== undefined) return direct;
  if (envName !== undefined) {
    const value = env[envName];
    if (value === undefined || value === '') throw new ClusterConfigError(`${what}: environment variable ${envName} is not set`);
    return value;
  }
  if (file !== undefined) {
    try {
      return (await readFile(resolve(baseDir, file), 'utf8')).trim();
    } catch (err) {
      throw new ClusterConfigError(`${what}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  return undefined;
}

const PEM_CERTIFICATE_RE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Reads a CA file: PEM text holding at least one certificate, each of which must parse. A file
 * without one (a key, a CSR, an empty file) would silently trust nothing but the system CAs.
 */
async function readCa(path: string | undefined, baseDir: string, what: string): Promise<string | undefined> {
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(resolve(baseDir, path), 'utf8');
  } catch (err) {
    throw new ClusterConfigError(`${what}: cannot read CA file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const blocks = text.match(PEM_CERTIFICATE_RE) ?? [];
  if (blocks.length === 0) {
    throw new ClusterConfigError(`${what}: CA file ${path} holds no certificate (expected a PEM "BEGIN CERTIFICATE" block)`);
  }
  blocks.forEach((block, index) => {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new ClusterConfigError(`${what}: CA file ${path}: certificate ${index + 1} cannot be read: ${(err as Error).message}`);
    }
  });
  return text;
}

function setTimeouts(connection: ClusterConnection, entry: { timeout?: number | undefined; connectTimeout?: number | undefined }): void {
  if (entry.timeout !== undefined) connection.timeoutMs = Math.round(entry.timeout * 1000);
  if (entry.connectTimeout !== undefined) connection.connectTimeoutMs = Math.round(entry.connectTimeout * 1000);
}

/** Refuses a plain `http://` URL unless the connection allows it explicitly. */
function checkScheme(url: string, allowHttp: boolean, what: string, setting: string): void {
  if (url.startsWith('http:') && !allowHttp) {
    throw new ClusterConfigError(
      `${what}: ${url} is plain http://, which sends the API token unencrypted; use https://, or allow it explicitly with ${setting}`,
    );
  }
}

/** `args,hookscript` → the rules, refusing unknown words. */
function parseHostAccess(value: string | undefined, what: string): HostAccessRule[] {
  if (value === undefined || value.trim() === '') return [];
  return value.split(/[,\s]+/).flatMap((word) => {
    if (word === '') return [];
    const rule = hostAccessRule(word);
    if (!rule) throw new ClusterConfigError(`${what}: unknown host-access kind '${word}' (one of ${HOST_ACCESS_RULES.join(', ')})`);
    return [rule];
  });
}

async function fromFile(path: string, env: NodeJS.ProcessEnv, cwd: string): Promise<Record<string, ClusterConnection>> {
  const full = resolve(cwd, path);
  let text: string;
  try {
    text = await readFile(full, 'utf8');
  } catch (err) {
    throw new ClusterConfigError(`cannot read cluster connections file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ClusterConfigError(`${path}: ${(err as Error).message}`);
  }
  const parsed = ConnectionsFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ClusterConfigError(`${path}: ${issue ? `${issue.path.join('.') || '(top)'}: ${issue.message}` : 'invalid'}`);
  }
  const baseDir = resolve(full, '..');
  const result: Record<string, ClusterConnection> = {};
  for (const [name, entry] of Object.entries(parsed.data.clusters)) {
    const what = `${path}: cluster ${name}`;
    const token = await secret(entry.token, entry.tokenEnv, entry.tokenFile, env, baseDir, `${what} token`);
    if (token === undefined) throw new ClusterConfigError(`${what}: one of token, tokenEnv or tokenFile is required`);
    checkScheme(entry.url, entry.allowHttp ?? false, what, 'allowHttp: true');
    const connection: ClusterConnection = {
      name,
      url: entry.url,
      token,
      insecure: entry.insecure ?? false,
      allowHttp: entry.allowHttp ?? false,
      allowHostAccess: entry.allowHostAccess ?? [],
    };
    const readToken = await secret(entry.readToken, entry.readTokenEnv, entry.readTokenFile, env, baseDir, `${what} readToken`);
    if (readToken !== undefined) connection.readToken = readToken;
    const ca = await readCa(entry.caFile, baseDir, what);
    if (ca !== undefined) connection.ca = ca;
    if (entry.fingerprint !== undefined) connection.fingerprint = entry.fingerprint;
    if (entry.concurrency !== undefined) connection.concurrency = entry.concurrency;
    const repositories = parseRepositories(entry.repositories, `${what} repositories`);
    if (repositories !== undefined) connection.repositories = repositories;
    setTimeouts(connection, entry);
    result[name] = connection;
  }
  return result;
}

/** `1` or `true` switches a setting on; anything else leaves it off. */
function flag(value: string | undefined): true | undefined {
  return value === '1' || value === 'true' ? true : undefined;
}

async function fromEnv(names: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Record<string, ClusterConnection>> {
  const result: Record<string, ClusterConnection> = {};
  for (const name of names) {
    const prefix = envPrefix(name);
    const url = env[`${prefix}URL`];
    if (!url) continue;
    const token = env[`${prefix}TOKEN`];
    if (!token) throw new ClusterConfigError(`${prefix}URL is set but ${prefix}TOKEN is not`);
    const entry = ConnectionEntry.safeParse({
      url,
      token,
      readToken: env[`${prefix}READ_TOKEN`] || undefined,
      caFile: env[`${prefix}CA_FILE`] || undefined,
      fingerprint: env[`${prefix}FINGERPRINT`] || undefined,
      insecure: flag(env[`${prefix}INSECURE`]),
      allowHttp: flag(env[`${prefix}ALLOW_HTTP`]),
      concurrency: env[`${prefix}CONCURRENCY`] ? Number(env[`${prefix}CONCURRENCY`]) : undefined,
      timeout: env[`${prefix}TIMEOUT`] ? Number(env[`${prefix}TIMEOUT`]) : undefined,
      connectTimeout: env[`${prefix}CONNECT_TIMEOUT`] ? Number(env[`${prefix}CONNECT_TIMEOUT`]) : undefined,
    });
    if (!entry.success) {
      const issue = entry.error.issues[0];
      const variable = String(issue?.path[0] ?? '')
        .replace(/([a-z])([A-Z])/g, '$1_$2')
        .toUpperCase();
      throw new ClusterConfigError(`${prefix}${variable}: ${issue?.message ?? 'invalid'}`);
    }
    checkScheme(url, entry.data.allowHttp ?? false, `${prefix}URL`, `${prefix}ALLOW_HTTP=1`);
    const connection: ClusterConnection = {
      name,
      url,
      token,
      insecure: entry.data.insecure ?? false,
      allowHttp: entry.data.allowHttp ?? false,
      allowHostAccess: parseHostAccess(env[`${prefix}ALLOW_HOST_ACCESS`], `${prefix}ALLOW_HOST_ACCESS`),
    };
    if (entry.data.readToken) connection.readToken = entry.data.readToken;
    const ca = await readCa(entry.data.caFile, cwd, `${prefix}CA_FILE`);
    if (ca !== undefined) connection.ca = ca;
    if (entry.data.fingerprint) connection.fingerprint = entry.data.fingerprint;
    if (entry.data.concurrency) connection.concurrency = entry.data.concurrency;
    const listed = env[`${prefix}REPOSITORIES`];
    const repositories = parseRepositories(listed === undefined ? undefined : [listed], `${prefix}REPOSITORIES`);
    if (repositories !== undefined) connection.repositories = repositories;
    setTimeouts(connection, entry.data);
    result[name] = connection;
  }
  return result;
}

/**
 * Loads the connections for `names`: from `PVE_CLUSTER_<NAME>_*` variables, then from the file
 * (`file`, or `PVE_GITOPS_CLUSTERS`), the environment winning for a cluster named in both.
 */
export async function loadClusterConnections(options: {
  names: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  file?: string;
}): Promise<Record<string, ClusterConnection>> {
  const file = options.file ?? options.env.PVE_GITOPS_CLUSTERS;
  const fromConfig = file ? await fromFile(file, options.env, options.cwd) : {};
  const fromVariables = await fromEnv(options.names, options.env, options.cwd);
  return { ...fromConfig, ...fromVariables };
}
