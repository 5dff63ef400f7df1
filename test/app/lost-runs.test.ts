/**
 * A run Redis lost, reported by a worker that only started it (it never reported the run, so it
 * knows none of its deployments): its deployments are found on the merge commit by the run id in
 * their payload and ended in `error`, saying why; another run's deployment on the same commit is
 * left alone. A real Redis (the run is simply not there), GitHub's double over HTTP, Probot's Octokit.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Probot } from 'probot';
import { afterEach, expect, inject, it } from 'vitest';
import { ApplyStore, type ApplyRun } from '../../src/queue/apply/apply-store.js';
import { LOST_DEPLOYMENT, LostRuns } from '../../src/queue/apply/lost-runs.js';
import { GitHubDouble } from './github-double.js';
import { newSha } from './spec-repo.js';

let github: GitHubDouble | undefined;
let redis: Redis | undefined;

afterEach(async () => {
  await github?.close();
  redis?.disconnect();
  github = undefined;
  redis = undefined;
});

it("a lost run's deployments, unknown to the worker reporting it, are found on the merge commit and ended in error", async () => {
  const double = await GitHubDouble.start();
  github = double;
  const probot = new Probot({
    appId: double.app.id,
    privateKey: double.app.privateKeyPem,
    secret: 'lost',
    baseUrl: `${double.url}/api/v3`,
    log: pino({ level: 'silent' }),
  });
  const installationId = 1 + randomBytes(3).readUIntBE(0, 3);
  const octokit = await probot.auth(installationId);
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 3 });
  const statePrefix = `lost-${randomBytes(4).toString('hex')}:state`;
  const mergeSha = newSha();
  const run: ApplyRun = {
    id: `m-lost-${randomBytes(4).toString('hex')}`,
    repo: { id: 1, owner: 'acme', name: 'estate' },
    pr: 7,
    installationId,
    headSha: newSha(),
    mergeSha,
    trigger: 'merge',
    createdAt: '2030-01-01T00:00:00Z',
    order: 1,
    guests: ['lab/100'],
  };
  const lost = new LostRuns({
    logger: pino({ level: 'silent' }),
    redis,
    store: new ApplyStore(redis, statePrefix),
    github: async () => octokit,
    statePrefix,
    deployments: true,
  });
  // Started here, never reported here; Redis has no record of it.
  lost.note(run);

  double.expect({
    method: 'GET',
    path: `/repos/acme/estate/commits/${mergeSha}/check-runs`,
    reply: { json: { total_count: 0, check_runs: [] } },
  });
  const check = double.expect({ method: 'POST', path: '/repos/acme/estate/check-runs', reply: { status: 201, json: { id: 5 } } });
  double.expect({ method: 'GET', path: '/repos/acme/estate/issues/7/comments', reply: { json: [] } });
  double.expect({ method: 'POST', path: '/repos/acme/estate/issues/7/comments', reply: { status: 201, json: { id: 6 } } });
  const listed = double.expect({
    method: 'GET',
    path: '/repos/acme/estate/deployments',
    query: { sha: mergeSha },
    reply: {
      json: [
        { id: 71, environment: 'lab', payload: { run: run.id, pr: 7 } },
        { id: 72, environment: 'lab', payload: { run: 'another-run', pr: 8 } },
        { id: 73, environment: 'edge', payload: { run: run.id, pr: 7 } },
      ],
    },
  });
  const ended = [71, 73].map((id) =>
    double.expect({ method: 'POST', path: `/repos/acme/estate/deployments/${id}/statuses`, reply: { status: 201, json: { id } } }),
  );

  // The first look lets a worker that reported the run go first; the second reports it.
  await lost.check();
  expect(check.requests).toHaveLength(0);
  await lost.check();
  await listed.done;
  const bodies = await Promise.all(ended.map(async (e) => (await e.done)[0]?.body));
  expect(bodies).toEqual([
    expect.objectContaining({ state: 'error', environment: 'lab', description: LOST_DEPLOYMENT }),
    expect.objectContaining({ state: 'error', environment: 'edge', description: LOST_DEPLOYMENT }),
  ]);
  expect(lost.size).toBe(0);
  double.verify();
});
