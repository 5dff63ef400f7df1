/**
 * What planning costs: a head already planned and posted against its base is not planned again
 * by the next delivery that names it, and pull requests racing for one guest cost refreshes of
 * their comments in proportion to their number, not to its square. Through the App: signed
 * deliveries, the GitHub test double, the real Redis, the simulator counting its requests.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from './harness.js';
import { pullRequestEvent } from './deliveries.js';
import { expectArchive, expectCheckRun, expectCommentEdit, expectNewComment } from './plan-flow.js';
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

type Action = 'opened' | 'reopened' | 'ready_for_review' | 'synchronize';

async function deliver(w: World, pr: number, action: Action, shas: { headSha: string; baseSha: string }, n: number, draft = false) {
  const result = await w.app.deliver({
    event: 'pull_request',
    payload: pullRequestEvent({ action, installationId: w.installationId, repo: w.repo, number: pr, ...shas, draft, updatedAt: at(n) }),
  });
  expect(result.status).toBe(200);
  return result.deliveryId;
}

describe('planning once', () => {
  it('opened, reopened, ready_for_review and synchronize of one head plan it once: one check run, one cluster read; ready only edits the draft label away', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const sim = w.clusters.sims.lab!;
    const shas = { headSha: newSha(), baseSha: newSha() };
    await expectArchive(w.github, w.repo, shas.baseSha, base);
    await expectArchive(w.github, w.repo, shas.headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
    expectCheckRun(w.github, w.repo, { headSha: shas.headSha, pr: 5, id: 1501 });
    const comment = expectNewComment(w.github, w.repo, 5, 1601);
    await w.app.jobDone('plan', await deliver(w, 5, 'opened', shas, 1, true));
    expect(await comment.body()).toContain('**Draft pull request**');
    await w.app.jobDone('plan', await deliver(w, 5, 'reopened', shas, 2, true));
    w.github.verify();

    // Marked ready: the comment loses its draft label, from the posted plan; nothing is planned.
    const ready = expectCommentEdit(w.github, w.repo, 1601);
    await w.app.jobDone('plan', await deliver(w, 5, 'ready_for_review', shas, 3));
    const body = await ready.body();
    expect(body).not.toContain('Draft pull request');
    expect(body).toContain('**1 to create**');
    await w.app.jobDone('plan', await deliver(w, 5, 'synchronize', shas, 4));
    w.github.verify();
    expect(sim.sim.stats().requests.byRoute['GET /cluster/resources']).toBe(1);
    expect(w.app.logs().match(/not planned again/g)).toHaveLength(3);
  });
});
