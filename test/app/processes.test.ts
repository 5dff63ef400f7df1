import { afterEach, describe, expect, inject, it } from 'vitest';
import { startRedisServer } from '../helpers/redis-server.js';
import { startClusters, type TestClusters } from './clusters.js';
import { deliver, pullRequestEvent } from './deliveries.js';
import { GitHubDouble } from './github-double.js';
import { appEnvironment, inspectQueue, type QueueInspector, startTestApp } from './harness.js';
import { expectArchive, expectCheckRun, expectNewComment, openPullRequestAddingOneVm } from './plan-flow.js';
import { type AppProcess, spawnApp } from './processes.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { at } from './world.js';

const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  cleanups.length = 0;
});

const repo = { id: 4_242_424, owner: 'acme', name: 'estate' };
const base: RepoFiles = { 'cluster.yaml': clusterDoc() };

async function setup(): Promise<{ github: GitHubDouble; clusters: TestClusters }> {
  const github = await GitHubDouble.start();
  cleanups.push(() => github.close());
  const clusters = await startClusters({ lab: {} });
  cleanups.push(() => clusters.close());
  return { github, clusters };
}

function track(app: AppProcess): AppProcess {
  cleanups.push(() => app.stop('SIGKILL'));
  return app;
}

describe('pve-gitops serve as processes', () => {
  it('web and worker roles in separate processes: the web process enqueues, the worker plans and posts, both stop on SIGTERM with 0', async () => {
    const { github, clusters } = await setup();
    const { env, prefix, webhookSecret } = appEnvironment(github, inject('redisUrl'), { ...clusters.env, LOG_LEVEL: 'info' });
    const web = track(await spawnApp('web', env));
    const worker = track(await spawnApp('worker', env));
    const queue: QueueInspector = inspectQueue(inject('redisUrl'), prefix);
    cleanups.push(() => queue.close());

    expect((await fetch(`${web.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${worker.url}/readyz`)).status).toBe(200);
    // The worker process answers health checks but takes no webhooks.
    expect((await fetch(`${worker.url}/api/github/webhooks`, { method: 'POST' })).status).toBe(404);

    const { delivery: result, check, comment } = await openPullRequestAddingOneVm(github, repo, web.url, webhookSecret);
    expect(result.status).toBe(200);
    await queue.jobDone('plan', result.deliveryId);
    github.verify();
    expect((await check.result()).conclusion).toBe('success');
    expect(await comment.body()).toContain('**1 to create**');
    // The web process never talked to GitHub or Proxmox; the worker did both.
    expect(web.output()).not.toMatch(/"msg":"plan posted"/);
    expect(worker.output()).toMatch(/"msg":"plan posted"/);

    expect(await web.stop('SIGTERM')).toBe(0);
    expect(await worker.stop('SIGINT')).toBe(0);
  });

  it('on SIGTERM stops taking webhooks, finishes the running plan, then exits 0', async () => {
    const { github, clusters } = await setup();
    const { env, prefix, webhookSecret } = appEnvironment(github, inject('redisUrl'), { ...clusters.env, LOG_LEVEL: 'info' });
    const app = track(await spawnApp('all', env));
    const queue = inspectQueue(inject('redisUrl'), prefix);
    cleanups.push(() => queue.close());

    const baseSha = newSha();
    const headSha = newSha();
    let release: () => void = () => {};
    await expectArchive(github, repo, baseSha, base);
    const held = await expectArchive(
      github,
      repo,
      headSha,
      { ...base, 'web.yaml': vmDoc('web-01', 100101) },
      new Promise((r) => (release = r)),
    );
    expectCheckRun(github, repo, { headSha, pr: 1, id: 2002 });
    expectNewComment(github, repo, 1, 2102);
    const result = await deliver(app.url, {
      event: 'pull_request',
      secret: webhookSecret,
      payload: pullRequestEvent({ action: 'opened', installationId: 78, repo, number: 1, headSha, baseSha, updatedAt: at(1) }),
    });
    expect(result.status).toBe(200);
    await held.requested;

    app.child.kill('SIGTERM');
    await app.waitFor(/no longer taking webhooks/);
    await expect(fetch(`${app.url}/readyz`)).rejects.toThrow();
    release();
    expect(await app.exited).toBe(0);
    // The plan that was running when the signal came was finished, not lost.
    expect(await (await queue.job('plan', result.deliveryId))?.getState()).toBe('completed');
    github.verify();
    expect(app.output()).toMatch(/"msg":"pve-gitops App stopped"/);
  });

  it('says what is wrong and exits 1 when Redis cannot be reached, without a stack trace', async () => {
    const github = await GitHubDouble.start();
    cleanups.push(() => github.close());
    const { env } = appEnvironment(github, 'redis://127.0.0.1:9', {});
    const app = spawnApp('web', env);
    await expect(app).rejects.toThrow(/exited with 1 before printing/);
    await expect(app).rejects.toThrow(/cannot connect to Redis \(REDIS_URL\) for the App state: connect ECONNREFUSED 127\.0\.0\.1:9/);
    await expect(app).rejects.not.toThrow(/\n\s+at /);
  });

  it('answers a webhook 500 and reports not ready while Redis is down, so GitHub can deliver again', async () => {
    const redis = await startRedisServer();
    cleanups.push(() => redis.stop());
    const github = await GitHubDouble.start();
    cleanups.push(() => github.close());
    const app = await startTestApp({ github, redisUrl: redis.url, role: 'web' });
    cleanups.push(() => app.close());
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
    await redis.stop();
    const payload = pullRequestEvent({ action: 'opened', installationId: 79, repo, number: 1, headSha: newSha(), baseSha: newSha() });
    const result = await app.deliver({ event: 'pull_request', payload });
    expect(result.status).toBe(500);
    const ready = await fetch(`${app.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toContain('Redis unreachable');
    expect(app.logs()).toMatch(/"level":50/);
  });

  it('exits 0 on SIGTERM after its Redis is gone, without claiming that jobs were still running', async () => {
    const redis = await startRedisServer();
    cleanups.push(() => redis.stop());
    const { github, clusters } = await setup();
    const { env } = appEnvironment(github, redis.url, { ...clusters.env, LOG_LEVEL: 'info' });
    const app = track(await spawnApp('all', env));
    await redis.stop();
    // Its workers have tried to reconnect and failed (they are waiting to try again) before it is asked to stop.
    await app.waitFor(/ECONNREFUSED.*"msg":"worker error"/);
    app.child.kill('SIGTERM');
    expect(await app.exited).toBe(0);
    expect(app.output()).toMatch(/"msg":"pve-gitops App stopped"/);
    expect(app.output()).not.toMatch(/jobs still running/);
  });
});
