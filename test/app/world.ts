/**
 * Everything an App test runs against, started and stopped together: the GitHub test double, the
 * simulated clusters with their connection environment, the App itself on the real Redis, and a
 * repository and installation of the test's own (Probot's throttling groups requests by
 * installation across the process, so tests never share one).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { ServerRole } from '../../src/server/config.js';
import { startClusters, type TestClusters } from './clusters.js';
import { pullRequestEvent, type TestRepo } from './deliveries.js';
import { GitHubDouble } from './github-double.js';
import { startTestApp, type TestApp, type TestAppOptions } from './harness.js';

/** A started test world. */
export interface World {
  github: GitHubDouble;
  clusters: TestClusters;
  app: TestApp;
  repo: TestRepo;
  installationId: number;
  close(): Promise<void>;
}

/** Options of {@link startWorld}. */
export interface WorldOptions {
  redisUrl: string;
  /** Simulated clusters by name (default one empty `lab`). */
  clusters?: Parameters<typeof startClusters>[0];
  role?: ServerRole;
  env?: Record<string, string | undefined>;
  specLoads?: TestAppOptions['specLoads'];
  applyWindows?: TestAppOptions['applyWindows'];
}

/** Starts a world; the App plans one job at a time unless `env` says otherwise, so tests read in order. */
export async function startWorld(options: WorldOptions): Promise<World> {
  const github = await GitHubDouble.start();
  const clusters = await startClusters(options.clusters ?? { lab: {} });
  const app = await startTestApp({
    github,
    redisUrl: options.redisUrl,
    role: options.role ?? 'all',
    env: { ...clusters.env, WORKER_CONCURRENCY: '1', ...options.env },
    ...(options.specLoads ? { specLoads: options.specLoads } : {}),
    ...(options.applyWindows ? { applyWindows: options.applyWindows } : {}),
  });
  const repo = { id: 1_000_000 + randomBytes(3).readUIntBE(0, 3), owner: 'acme', name: 'estate' };
  const installationId = 1 + randomBytes(3).readUIntBE(0, 3);
  return {
    github,
    clusters,
    app,
    repo,
    installationId,
    async close() {
      await app.close();
      await clusters.close();
      await github.close();
    },
  };
}

/** `updated_at` of the n-th event of a test: whole seconds, increasing. */
export function at(n: number): string {
  return new Date(Date.UTC(2030, 0, 1, 0, 0, n)).toISOString().replace('.000Z', 'Z');
}

/**
 * Delivers `pull_request.opened` for pull request `pr` (updated at second `pr`), expects the
 * webhook to be accepted and resolves with the delivery id (for `app.jobDone`).
 */
export async function openPullRequest(
  w: World,
  pr: number,
  headSha: string,
  baseSha: string,
  extra: Partial<Parameters<typeof pullRequestEvent>[0]> = {},
): Promise<string> {
  const result = await w.app.deliver({
    event: 'pull_request',
    payload: pullRequestEvent({
      action: 'opened',
      installationId: w.installationId,
      repo: w.repo,
      number: pr,
      headSha,
      baseSha,
      updatedAt: at(pr),
      ...extra,
    }),
  });
  expect(result.status).toBe(200);
  return result.deliveryId;
}
