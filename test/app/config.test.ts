import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import { loadServerConfig, normalisePrivateKey } from '../../src/server/config.js';
import { TEST_PRIVATE_KEY_PEM, VALID_SERVER_ENV } from './server-env.js';

const pem = TEST_PRIVATE_KEY_PEM;
const valid = VALID_SERVER_ENV;

async function problems(env: NodeJS.ProcessEnv, role: 'all' | 'web' | 'worker' = 'all'): Promise<string[]> {
  const result = await loadServerConfig(env, { cwd: process.cwd(), role });
  return result.ok ? [] : result.problems;
}

describe('server configuration', () => {
  it('reads a complete environment with Probot defaults for what is left out', async () => {
    const result = await loadServerConfig(valid, { cwd: process.cwd(), role: 'all' });
    if (!result.ok) throw new Error(result.problems.join('\n'));
    expect(result.config).toMatchObject({
      appId: 12345,
      webhookPath: '/api/github/webhooks',
      port: 3000,
      logLevel: 'info',
      githubBaseUrl: undefined,
      redisPrefix: 'pve-gitops',
      jobLockMs: 30_000,
      stalledIntervalMs: 30_000,
      apply: {
        concurrency: 16,
        clusterLimit: 4,
        nodeLimit: 2,
        lockWaitMs: 600_000,
        lockPollMs: 1000,
        attempts: 5,
        backoffMs: 10_000,
        reportIntervalMs: 3000,
      },
    });
  });

  it('points Octokit at GitHub Enterprise Server from GHE_HOST and GHE_PROTOCOL', async () => {
    const result = await loadServerConfig({ ...valid, GHE_HOST: 'ghe.example.net:8443', GHE_PROTOCOL: 'http' }, { cwd: '.', role: 'web' });
    expect(result.ok && result.config.githubBaseUrl).toBe('http://ghe.example.net:8443/api/v3');
  });

  it('without GitHub credentials says how to register the app from app.yml, with every other problem at once', async () => {
    const found = await problems({});
    expect(found[0]).toMatch(/register the app from app\.yml/);
    expect(found.some((p) => p.startsWith('WEBHOOK_SECRET:'))).toBe(true);
    expect(found.some((p) => p.startsWith('REDIS_URL:'))).toBe(true);
    expect(found.some((p) => p.includes('no cluster connection configured'))).toBe(true);
  });

  it.each([
    ['APP_ID', 'abc', /^APP_ID: must be the app's numeric ID/],
    ['PRIVATE_KEY', 'not-a-key', /^PRIVATE_KEY: not a PEM private key/],
    ['PORT', '99999', /^PORT: must be the TCP port to listen on/],
    ['LOG_LEVEL', 'loud', /^LOG_LEVEL: must be one of/],
    ['GHE_HOST', 'https://ghe.example.net/', /^GHE_HOST: must be a host name/],
    ['GHE_PROTOCOL', 'ftp', /^GHE_PROTOCOL: must be https or http/],
    ['REDIS_URL', 'http://user:hunter2@redis', /^REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL$/],
    ['WEBHOOK_PATH', 'hooks', /^WEBHOOK_PATH: must be a URL path/],
    ['WORKER_CONCURRENCY', '0', /^WORKER_CONCURRENCY: must be/],
    ['APPLY_NODE_LIMIT', '0', /^APPLY_NODE_LIMIT: must be guests written at once per node, an integer from 1 to 64; got '0'$/],
    ['APPLY_CLUSTER_LIMIT', 'many', /^APPLY_CLUSTER_LIMIT: must be guests written at once per cluster/],
    ['JOB_LOCK_MS', '5', /^JOB_LOCK_MS: must be milliseconds of a job lock, an integer from 1000/],
    ['PVE_CLUSTER_LAB_TOKEN', '', /PVE_CLUSTER_LAB_URL is set but PVE_CLUSTER_LAB_TOKEN is not/],
    ['PVE_CLUSTER_LAB_URL', 'ftp://pve', /^PVE_CLUSTER_LAB_URL: /],
    ['PVE_GITOPS_CLUSTERS', '/nonexistent/clusters.yaml', /^PVE_GITOPS_CLUSTERS: cannot read cluster connections file/],
    ['PVE_CLUSTER_LAB_REPOSITORIES', 'estate', /^PVE_CLUSTER_LAB_REPOSITORIES: 'estate' is not a repository \(owner\/name/],
  ])('names %s when it is malformed', async (name, value, expected) => {
    // GHE_PROTOCOL means nothing without GHE_HOST, which would be a second problem.
    const found = await problems({ ...valid, ...(name === 'GHE_PROTOCOL' ? { GHE_HOST: 'ghe.example.net' } : {}), [name]: value });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(expected);
  });

  it('never echoes a secret in a problem', async () => {
    const found = await problems({ ...valid, PRIVATE_KEY: 'secret-key-material', REDIS_URL: 'redis//:hunter2@x', APP_ID: 'x' });
    expect(found.join('\n')).not.toMatch(/secret-key-material|hunter2/);
  });

  it('needs no webhook secret for a worker and no cluster connection for a web process', async () => {
    expect(await problems({ ...valid, WEBHOOK_SECRET: undefined }, 'worker')).toEqual([]);
    expect(await problems({ ...valid, PVE_CLUSTER_LAB_URL: undefined, PVE_CLUSTER_LAB_TOKEN: undefined }, 'web')).toEqual([]);
  });

  it.each([
    ['with literal \\n escapes', pem.replace(/\n/g, '\\n')],
    ['base64-encoded', Buffer.from(pem).toString('base64')],
  ])('accepts a private key %s', async (_, value) => {
    expect(normalisePrivateKey(value).trim()).toBe(pem.trim());
    expect(await problems({ ...valid, PRIVATE_KEY: value })).toEqual([]);
  });

  it('`pve-gitops serve` prints one line per problem and exits 1, without a stack trace', async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let err = '';
    stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await main(['serve', '--role', 'web'], {
      stdout,
      stderr,
      stdin: Readable.from(['']),
      env: { APP_ID: 'x' },
      cwd: process.cwd(),
    });
    expect(code).toBe(1);
    expect(err).toMatch(/cannot start, the configuration has \d+ problem/);
    expect(err).toMatch(/^ {2}APP_ID: /m);
    expect(err).toMatch(/^ {2}PRIVATE_KEY or PRIVATE_KEY_PATH: required/m);
    expect(err).not.toMatch(/\n\s+at /);
  });

  it('`pve-gitops serve --role` refuses an unknown role', async () => {
    const stderr = new PassThrough();
    let err = '';
    stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await main(['serve', '--role', 'api'], {
      stdout: new PassThrough(),
      stderr,
      stdin: Readable.from(['']),
      env: {},
      cwd: '.',
    });
    expect(code).toBe(1);
    expect(err).toMatch(/--role must be one of all, web, worker/);
  });
});
