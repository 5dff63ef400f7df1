/**
 * What a merge-to-apply test runs against: the GitHub test double, a `lab` simulator holding the
 * guests the test's specs own, and the App (in this process, or only its web role when workers run
 * as processes of their own), with settings that make waits short: stalled jobs found within
 * seconds, reports a fraction of a second apart, retries quick. Each world has its own Redis key
 * prefix, repository and installation (Probot's throttling groups requests by installation across
 * the process), so tests stand alone.
 */
import { randomBytes } from 'node:crypto';
import type { SimFixture } from '../../src/pve/sim/index.js';
import type { ServerRole } from '../../src/server/config.js';
import { startClusters, type TestClusters } from './clusters.js';
import type { TestRepo } from './deliveries.js';
import { GitHubDouble } from './github-double.js';
import { startTestApp, type TestApp } from './harness.js';

/** Settings that keep apply tests short (see README "Merge to apply" for what each does). */
export const FAST_APPLY_ENV: Record<string, string> = {
  JOB_LOCK_MS: '2000',
  JOB_STALLED_INTERVAL_MS: '1000',
  APPLY_REPORT_INTERVAL_MS: '150',
  APPLY_BACKOFF_MS: '200',
  APPLY_ATTEMPTS: '3',
  APPLY_LOCK_POLL_MS: '50',
  APPLY_CONCURRENCY: '8',
  WORKER_CONCURRENCY: '2',
};

/** A fixture guest owned by the specs (owner tag), 2 GB and 2 cores, as `vmDoc` describes it. */
export function ownedGuest(vmid: number, name: string, node = 'pve-01', config: Record<string, string | number> = {}) {
  return {
    vmid,
    type: 'qemu',
    node,
    config: {
      name,
      memory: 2048,
      cores: 2,
      net0: `virtio=BC:24:11:00:${String(vmid % 100).padStart(2, '0')}:01,bridge=vmbr0`,
      tags: 'pve-gitops',
      ...config,
    },
  };
}

/** A started apply test world. */
export interface ApplyWorld {
  github: GitHubDouble;
  clusters: TestClusters;
  app: TestApp;
  repo: TestRepo;
  installationId: number;
  redisUrl: string;
  close(): Promise<void>;
}

/** Starts a world whose `lab` simulator holds `guests`. */
export async function startApplyWorld(options: {
  redisUrl: string;
  guests: SimFixture['guests'];
  role?: ServerRole;
  env?: Record<string, string | undefined>;
  taskMs?: number;
}): Promise<ApplyWorld> {
  const github = await GitHubDouble.start();
  const clusters = await startClusters({ lab: { fixture: { guests: options.guests }, taskMs: options.taskMs ?? 20 } });
  const app = await startTestApp({
    github,
    redisUrl: options.redisUrl,
    role: options.role ?? 'all',
    env: { ...clusters.env, ...FAST_APPLY_ENV, ...options.env },
  });
  const repo = { id: 1_000_000 + randomBytes(3).readUIntBE(0, 3), owner: 'acme', name: 'estate' };
  const installationId = 1 + randomBytes(3).readUIntBE(0, 3);
  return {
    github,
    clusters,
    app,
    repo,
    installationId,
    redisUrl: options.redisUrl,
    async close() {
      await app.close();
      await clusters.close();
      await github.close();
    },
  };
}
