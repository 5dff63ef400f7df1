/**
 * What an apply is keyed on: a merge is carried out once and a `/pve apply` comment once, whatever
 * deliveries bring them. GitHub's signature covers the body and not `X-GitHub-Delivery`, so a
 * captured delivery posted again under a new delivery id is as validly signed as the first.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { statePrefix } from '../../src/queue/keys.js';
import {
  type ApplyQueues,
  applyQueues,
  expectApplyCheckRun,
  expectDefaultBranch,
  expectApplyComment,
  finishedComment,
  mergeEvent,
  pullAnswer,
} from './apply-flow.js';
import { type ApplyWorld, ownedGuest, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { issueCommentEvent } from './deliveries.js';
import { expectAcceptedCommand } from './plan-flow.js';
import { rawConfig } from './sim-writes.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { at } from './world.js';

let world: ApplyWorld | undefined;
let queues: ApplyQueues | undefined;

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await queues?.close();
  queues = undefined;
  await world?.close();
  world = undefined;
});

/**
 * What Redis no longer holds once a run's record and its merge job expired (30 days, a day): the
 * test deletes them instead of waiting. The carried-out marks are what is left.
 */
async function forgetFinishedRuns(w: ApplyWorld): Promise<void> {
  const redis = new Redis(w.redisUrl, { maxRetriesPerRequest: 3 });
  try {
    const keys = await redis.keys(`${statePrefix(w.app.prefix)}:apply:run:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
  await queues!.forgetCompletedMerges();
}

/** Two merges of one guest: #1 raises memory to 4096, #2 (after it) sets 2048 again. Resolves once both applied. */
async function twoMerges(w: ApplyWorld, X: number, prs: [number, number]) {
  const { github, repo, installationId } = w;
  const sim = w.clusters.sims.lab!;
  const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
  const first: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
  const [baseSha, head1, merge1, head2, merge2] = [newSha(), newSha(), newSha(), newSha(), newSha()];
  await w.storePlan({ pr: prs[0], headSha: head1, baseSha, head: first, base });
  const check1 = expectApplyCheckRun(github, repo, { mergeSha: merge1, id: prs[0] * 10 + 1 });
  const comment1 = expectApplyComment(github, repo, { pr: prs[0], id: prs[0] * 10 + 2 });
  const payload1 = mergeEvent({ installationId, repo, number: prs[0], headSha: head1, baseSha, mergeSha: merge1, mergedAt: at(1) });
  expect((await w.app.deliver({ event: 'pull_request', payload: payload1 })).status).toBe(200);
  expect(await check1.completed).toMatchObject({ conclusion: 'success' });
  await comment1.until(finishedComment);
  expect(rawConfig(sim, X)).toContain('memory: 4096');

  await w.storePlan({ pr: prs[1], headSha: head2, baseSha: merge1, head: base, base: first });
  const check2 = expectApplyCheckRun(github, repo, { mergeSha: merge2, id: prs[1] * 10 + 1 });
  const comment2 = expectApplyComment(github, repo, { pr: prs[1], id: prs[1] * 10 + 2 });
  await w.merge({ number: prs[1], headSha: head2, baseSha: merge1, mergeSha: merge2, mergedAt: at(2) });
  expect(await check2.completed).toMatchObject({ conclusion: 'success' });
  await comment2.until(finishedComment);
  expect(rawConfig(sim, X)).toContain('memory: 2048');
  return { payload1, head1, baseSha, merge1 };
}

describe('a merge is carried out once', () => {
  it('a captured merge delivery posted again under a new delivery id starts nothing, also once its run record expired', async () => {
    const X = 101101;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const w = world;
    queues = applyQueues(w.redisUrl, w.app.prefix);
    const { payload1 } = await twoMerges(w, X, [111, 112]);
    const jobsBefore = await queues.guestJobIds();
    const writesBefore = w.clusters.sims.lab!.sim.stats().writes.total;

    // The attacker's copy: the same signed body, a delivery id of their own.
    const replay = await w.app.deliver({ event: 'pull_request', payload: payload1 });
    expect(replay.status).toBe(200);
    await queues.mergesSettled();
    expect(await queues.guestJobIds()).toEqual(jobsBefore);

    // Thirty days on, the run record and the merge job are gone; the merge was still carried out.
    await forgetFinishedRuns(w);
    expect((await w.app.deliver({ event: 'pull_request', payload: payload1 })).status).toBe(200);
    await queues.mergesSettled();
    expect(await queues.guestJobIds()).toEqual(jobsBefore);
    expect(w.clusters.sims.lab!.sim.stats().writes.total).toBe(writesBefore);
    expect(rawConfig(w.clusters.sims.lab!, X)).toContain('memory: 2048');
    expect(w.app.logs()).toContain('carried out already: nothing is started again');
    w.github.verify();
  }, 60_000);
});

describe('a /pve apply comment is carried out once', () => {
  it('its delivery replayed under a new delivery id applies nothing again', async () => {
    const X = 101201;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const w = world;
    const { github, repo, installationId } = w;
    const sim = w.clusters.sims.lab!;
    queues = applyQueues(w.redisUrl, w.app.prefix);
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const first: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
    const [baseSha, head1, merge1, head2, merge2] = [newSha(), newSha(), newSha(), newSha(), newSha()];
    // #121 was merged while its apply could not start; `/pve apply` carries it out.
    await w.storePlan({ pr: 121, headSha: head1, baseSha, head: first, base });
    expectAcceptedCommand(github, repo, 'alice', 12101);
    github.expect(pullAnswer(repo, 121, { headSha: head1, baseSha, mergeSha: merge1 }));
    await expectDefaultBranch(github, repo, merge1, first);
    const check1 = expectApplyCheckRun(github, repo, { mergeSha: merge1, id: 1211 });
    const comment1 = expectApplyComment(github, repo, { pr: 121, id: 1212 });
    const command = issueCommentEvent({ installationId, repo, number: 121, body: '/pve apply', author: 'alice', commentId: 12101 });
    const applied = await w.app.deliver({ event: 'issue_comment', payload: command });
    await w.app.jobDone('command', applied.deliveryId);
    expect(await check1.completed).toMatchObject({ conclusion: 'success' });
    await comment1.until(finishedComment);
    expect(rawConfig(sim, X)).toContain('memory: 4096');

    // #122 merged after it: 2048 again.
    await w.storePlan({ pr: 122, headSha: head2, baseSha: merge1, head: base, base: first });
    const check2 = expectApplyCheckRun(github, repo, { mergeSha: merge2, id: 1221 });
    const comment2 = expectApplyComment(github, repo, { pr: 122, id: 1222 });
    await w.merge({ number: 122, headSha: head2, baseSha: merge1, mergeSha: merge2 });
    expect(await check2.completed).toMatchObject({ conclusion: 'success' });
    await comment2.until(finishedComment);
    const jobsBefore = await queues.guestJobIds();

    // The comment's delivery again: the plan worker checks the author and reacts as to any
    // delivery; the apply sees the comment was carried out and starts nothing.
    expectAcceptedCommand(github, repo, 'alice', 12101);
    github.expect(pullAnswer(repo, 121, { headSha: head1, baseSha, mergeSha: merge1 }, 'any'));
    const replay = await w.app.deliver({ event: 'issue_comment', payload: command });
    expect(replay.deliveryId).not.toBe(applied.deliveryId);
    await w.app.jobDone('command', replay.deliveryId);
    expect(await queues.guestJobIds()).toEqual(jobsBefore);
    expect(rawConfig(sim, X)).toContain('memory: 2048');
    github.verify();
  }, 60_000);
});
