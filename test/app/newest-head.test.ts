import { afterEach, describe, expect, inject, it } from 'vitest';
import { pullRequestEvent } from './deliveries.js';
import { startTestApp, type TestApp } from './harness.js';
import { expectArchive, expectCheckRun, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { at, startWorld, type World } from './world.js';

let world: World | undefined;
let worker: TestApp | undefined;

afterEach(async () => {
  await worker?.close();
  await world?.close();
  world = undefined;
  worker = undefined;
});

const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
const headFiles = (memory: number): RepoFiles => ({ ...base, 'web.yaml': vmDoc('web-01', 100101, { memory }) });

function push(w: World, headSha: string, baseSha: string, n: number, deliveryId?: string) {
  return w.app.deliver({
    event: 'pull_request',
    payload: pullRequestEvent({
      action: n === 1 ? 'opened' : 'synchronize',
      installationId: w.installationId,
      repo: w.repo,
      number: 2,
      headSha,
      baseSha,
      updatedAt: at(n),
    }),
    ...(deliveryId ? { deliveryId } : {}),
  });
}

describe('newest head wins', () => {
  it('a burst of pushes to one pull request posts only the newest head’s plan, and a late older delivery is not even enqueued', async () => {
    // Webhooks first, workers later: every job is in the queue before any runs.
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), role: 'web' }));
    const baseSha = newSha();
    const heads = Array.from({ length: 5 }, () => newSha());
    const deliveries: string[] = [];
    for (const [i, head] of heads.entries()) {
      const result = await push(w, head, baseSha, i + 1);
      expect(result.status).toBe(200);
      deliveries.push(result.deliveryId);
    }
    const late = await push(w, newSha(), baseSha, 0);
    expect(late.status).toBe(200);
    expect(await w.app.job('plan', late.deliveryId)).toBeUndefined();
    expect(await w.app.jobs()).toHaveLength(5);

    const newest = heads[4]!;
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, newest, headFiles(4096));
    const check = expectCheckRun(w.github, w.repo, { headSha: newest, pr: 2, id: 801 });
    const comment = expectNewComment(w.github, w.repo, 2, 901);
    worker = await startTestApp({
      github: w.github,
      redisUrl: inject('redisUrl'),
      role: 'worker',
      env: { ...w.clusters.env, REDIS_PREFIX: w.app.prefix },
    });
    for (const id of deliveries) await worker.jobDone('plan', id);
    w.github.verify();
    expect((await check.result()).conclusion).toBe('success');
    expect(await comment.body()).toContain(`planned for ${newest.slice(0, 7)}`);
  });

  it('a plan whose head was superseded while it was planned is not posted: its check run says so, the newer plan is posted', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const [older, newer] = [newSha(), newSha()];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await expectArchive(w.github, w.repo, baseSha, base);
    const olderArchive = await expectArchive(w.github, w.repo, older, headFiles(1024), held);
    const olderCheck = expectCheckRun(w.github, w.repo, { headSha: older, pr: 2, id: 802 });
    await expectArchive(w.github, w.repo, newer, headFiles(2048));
    const newerCheck = expectCheckRun(w.github, w.repo, { headSha: newer, pr: 2, id: 803 });
    const comment = expectNewComment(w.github, w.repo, 2, 902);

    const first = await push(w, older, baseSha, 1);
    // The older plan is reading its archive when the newer push arrives.
    await olderArchive.requested;
    const second = await push(w, newer, baseSha, 2);
    release();
    await w.app.jobDone('plan', first.deliveryId);
    await w.app.jobDone('plan', second.deliveryId);
    w.github.verify();

    expect(await olderCheck.result()).toMatchObject({ conclusion: 'skipped', output: { title: `Superseded by ${newer.slice(0, 7)}` } });
    expect((await newerCheck.result()).conclusion).toBe('success');
    expect(await comment.body()).toContain('`2048`');
  });

  it('a delivery GitHub sends again (same X-GitHub-Delivery) is planned once', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const head = newSha();
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, head, headFiles(1024));
    expectCheckRun(w.github, w.repo, { headSha: head, pr: 2, id: 804 });
    expectNewComment(w.github, w.repo, 2, 903);
    const first = await push(w, head, baseSha, 1);
    await w.app.jobDone('plan', first.deliveryId);
    const again = await push(w, head, baseSha, 1, first.deliveryId);
    expect(again.status).toBe(200);
    // Still the one job, finished: nothing was run again.
    const jobs = await w.app.jobs();
    expect(jobs.map((job) => job.id)).toEqual([`plan-${first.deliveryId}`]);
    expect(await jobs[0]?.getState()).toBe('completed');
    w.github.verify();
  });
});
