/**
 * Only what was posted on the pull request is applied: a plan is the pull request's plan once its
 * comment was written, never before — not when a newer push superseded it, not when GitHub
 * refused its comment, not when it was made against a branch the pull request no longer targets.
 * Through the App: signed deliveries, the GitHub test double, the real Redis, the simulator.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { EXAMPLE_DEFAULT_BRANCH, expectApplyCheckRun, expectApplyComment, expectDefaultBranch, finishedComment } from './apply-flow.js';
import { type ApplyWorld, ownedGuest, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { issueCommentEvent, pullRequestEvent } from './deliveries.js';
import { expectAcceptedCommand, expectArchive, expectCheckRun, expectCommentEdit, expectNewComment, expectReply } from './plan-flow.js';
import { rawConfig } from './sim-writes.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { at } from './world.js';

let world: ApplyWorld | undefined;

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
});

const X = 100901;
const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
const withMemory = (memory: number): RepoFiles => ({ ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory }) });

/** Delivers a push (`opened` for n = 1, else `synchronize`) of pull request `pr`, updated at second `n`. */
async function push(w: ApplyWorld, pr: number, headSha: string, baseSha: string, n: number): Promise<string> {
  const result = await w.app.deliver({
    event: 'pull_request',
    payload: pullRequestEvent({
      action: n === 1 ? 'opened' : 'synchronize',
      installationId: w.installationId,
      repo: w.repo,
      number: pr,
      headSha,
      baseSha,
      updatedAt: at(n),
    }),
  });
  expect(result.status).toBe(200);
  return result.deliveryId;
}

/** GitHub's answer to `GET /repos/{o}/{r}/pulls/{n}`: open, or merged as `mergeSha` into the default branch. */
function expectPull(w: ApplyWorld, pr: number, shas: { headSha: string; baseSha: string; mergeSha?: string }): void {
  w.github.expect({
    method: 'GET',
    path: `/repos/${w.repo.owner}/${w.repo.name}/pulls/${pr}`,
    reply: {
      json: {
        number: pr,
        state: shas.mergeSha ? 'closed' : 'open',
        merged: shas.mergeSha !== undefined,
        merge_commit_sha: shas.mergeSha ?? null,
        draft: false,
        updated_at: at(30),
        head: { sha: shas.headSha },
        base: { sha: shas.baseSha, ref: EXAMPLE_DEFAULT_BRANCH, repo: { default_branch: EXAMPLE_DEFAULT_BRANCH } },
      },
    },
  });
}

/** Delivers a writer's `/pve <command>` comment on pull request `pr`; resolves with the delivery id. */
async function command(w: ApplyWorld, pr: number, body: string, commentId: number): Promise<string> {
  expectAcceptedCommand(w.github, w.repo, 'alice', commentId);
  const result = await w.app.deliver({
    event: 'issue_comment',
    payload: issueCommentEvent({ installationId: w.installationId, repo: w.repo, number: pr, body, author: 'alice', commentId }),
  });
  expect(result.status).toBe(200);
  return result.deliveryId;
}

describe('only a posted plan is applied', () => {
  it('a push planned after the next push was posted is superseded and never applied: /pve apply applies the plan the comment shows', async () => {
    // Two plans at once, so the older push can still be planning when the newer one is posted.
    const w = (world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] }));
    const sim = w.clusters.sims.lab!;
    const pr = 101;
    const [baseSha, older, newer, mergeSha] = [newSha(), newSha(), newSha(), newSha()];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await expectArchive(w.github, w.repo, baseSha, base);
    const olderArchive = await expectArchive(w.github, w.repo, older, withMemory(8192), held);
    const olderCheck = expectCheckRun(w.github, w.repo, { headSha: older, pr, id: 1011 });
    await expectArchive(w.github, w.repo, newer, withMemory(4096));
    const newerCheck = expectCheckRun(w.github, w.repo, { headSha: newer, pr, id: 1012 });
    const comment = expectNewComment(w.github, w.repo, pr, 1111);

    const first = await push(w, pr, older, baseSha, 1);
    await olderArchive.requested;
    // The newer push is planned and posted while the older one still reads its archive.
    const second = await push(w, pr, newer, baseSha, 2);
    await w.app.jobDone('plan', second);
    expect((await newerCheck.result()).conclusion).toBe('success');
    expect(await comment.body()).toContain('| `memory` | `2048` | `4096` | live |');
    release();
    await w.app.jobDone('plan', first);
    expect(await olderCheck.result()).toMatchObject({ conclusion: 'skipped', output: { title: `Superseded by ${newer.slice(0, 7)}` } });
    w.github.verify();

    // Merged (its delivery lost, say): `/pve apply` applies what the comment shows, 4096.
    expectPull(w, pr, { headSha: newer, baseSha, mergeSha });
    // The default branch is still at the merge: it says what the posted plan's head says.
    await expectDefaultBranch(w.github, w.repo, mergeSha, withMemory(4096));
    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 1013 });
    const applied = expectApplyComment(w.github, w.repo, { pr, id: 1112 });
    await w.app.jobDone('command', await command(w, pr, '/pve apply', 10101));
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    expect(await applied.until(finishedComment)).toContain(`applying the plan reviewed for \`${newer.slice(0, 7)}\``);
    expect(rawConfig(sim, X)).toContain('memory: 4096');
    w.github.verify();
  });

  it('a re-plan whose comment GitHub refused is not applied: the merge carries out the plan the comment still shows', async () => {
    const w = (world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] }));
    const sim = w.clusters.sims.lab!;
    const pr = 102;
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, withMemory(4096));
    expectCheckRun(w.github, w.repo, { headSha, pr, id: 1021 });
    const comment = expectNewComment(w.github, w.repo, pr, 1121);
    await w.app.jobDone('plan', await push(w, pr, headSha, baseSha, 1));
    expect(await comment.body()).not.toContain('`cores`');
    w.github.verify();

    // An operator sets cores 3; `/pve plan` plans the head again (it would revert cores), but
    // GitHub refuses every edit of the comment, which still shows the plan above.
    sim.sim.operatorEdit(X, { set: { cores: 3 } });
    expectPull(w, pr, { headSha, baseSha });
    // One check run for the job and its retries, completed as a failure by the last attempt.
    const planRun = { name: 'pve-gitops/plan', head_sha: headSha };
    w.github.expect({ method: 'POST', path: '/repos/acme/estate/check-runs', body: planRun, reply: { status: 201, json: { id: 1022 } } });
    const runUpdates = w.github.expect({
      method: 'PATCH',
      path: '/repos/acme/estate/check-runs/1022',
      times: 'any',
      reply: { json: { id: 1022 } },
    });
    // Each of the job's three attempts asks again who commented, and what the head is.
    for (let attempt = 1; attempt < 3; attempt++) {
      expectAcceptedCommand(w.github, w.repo, 'alice', 10201);
      expectPull(w, pr, { headSha, baseSha });
    }
    const refused = w.github.expect({
      method: 'PATCH',
      path: `/repos/acme/estate/issues/comments/1121`,
      times: 'any',
      reply: { status: 422, json: { message: 'Validation Failed' } },
    });
    await expect(w.app.jobDone('command', await command(w, pr, '/pve plan', 10201))).rejects.toThrow();
    expect(String((refused.requests[0]?.body as { body?: string } | undefined)?.body)).toContain('| `cores` | `3` | `2` | live |');
    expect(runUpdates.requests.at(-1)?.body).toMatchObject({
      status: 'completed',
      conclusion: 'failure',
      output: { title: 'pve-gitops could not finish the plan', summary: expect.stringContaining('after 3 attempts') },
    });

    // The merge applies the plan shown: cores moved since, so that is a conflict, and nothing is written.
    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 1023 });
    const applied = expectApplyComment(w.github, w.repo, { pr, id: 1122 });
    await w.merge({ number: pr, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'failure', output: { title: '1 conflict' } });
    expect(await applied.until(finishedComment)).toContain('⚠️ **conflict** · **lab/app-01**');
    expect(rawConfig(sim, X)).toContain('cores: 3');
    expect(rawConfig(sim, X)).toContain('memory: 2048');
    expect(sim.sim.stats().writes.total).toBe(0);
    w.github.verify();
  }, 60_000);
});

describe('a plan posted after the merge', () => {
  // `merged_at` has whole seconds: a comment of the merge's second may have come after it.
  it.each([
    ['after the merge', at(6)],
    ["in the merge's second", at(5)],
  ])(
    'is not applied by the merge when its comment was written %s: nothing is applied until /pve apply after review',
    async (_when, writtenAt) => {
      const w = (world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] }));
      const sim = w.clusters.sims.lab!;
      const pr = 106;
      const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
      // The plan job of the merged head posts late (a push racing the merge): GitHub's clock says when.
      w.github.commentsWrittenAt = writtenAt;
      await expectArchive(w.github, w.repo, baseSha, base);
      await expectArchive(w.github, w.repo, headSha, withMemory(4096));
      expectCheckRun(w.github, w.repo, { headSha, pr, id: 1061 });
      const comment = expectNewComment(w.github, w.repo, pr, 1161);
      await w.app.jobDone('plan', await push(w, pr, headSha, baseSha, 1));
      expect(await comment.body()).toContain('| `memory` | `2048` | `4096` | live |');
      w.github.verify();

      // Merged at second 5: the plan shown from `writtenAt` is not what was seen when merging.
      const planCheck = expectCheckRun(w.github, w.repo, { headSha, pr, id: 1062 });
      const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 1063, deployments: [] });
      const notice = expectApplyComment(w.github, w.repo, { pr, id: 1162 });
      const merged = await w.merge({ number: pr, headSha, baseSha, mergeSha, mergedAt: at(5) });
      await w.app.jobDone('closed', merged.deliveryId);
      expect(await check.completed).toMatchObject({ conclusion: 'neutral', output: { title: 'Not applied: no reviewed plan' } });
      expect(await notice.until(() => true)).toContain('was posted only when (or after) this pull request was merged');
      expect((await planCheck.result()).conclusion).toBe('success');
      expect(sim.sim.stats().writes.total).toBe(0);
      w.github.verify();

      // Reviewed now, `/pve apply` applies it: the posted plan of the merged head, as the default branch says.
      expectPull(w, pr, { headSha, baseSha, mergeSha });
      await expectDefaultBranch(w.github, w.repo, mergeSha, withMemory(4096));
      const applyCheck = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 1064 });
      await w.app.jobDone('command', await command(w, pr, '/pve apply', 10601));
      expect(await applyCheck.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
      const reviewed = `applying the plan reviewed for \`${headSha.slice(0, 7)}\``;
      expect(await notice.until((body) => body.includes(reviewed) && finishedComment(body))).toContain('**1 applied**');
      expect(rawConfig(sim, X)).toContain('memory: 4096');
      w.github.verify();
    },
    60_000,
  );
});

describe('a retargeted pull request', () => {
  /** A pull request event of `pr` whose base is `baseRef` at `baseSha`. */
  function onBase(
    w: ApplyWorld,
    pr: number,
    options: { action: 'opened' | 'edited'; headSha: string; baseSha: string; baseRef: string; n: number },
  ) {
    const payload = pullRequestEvent({
      action: options.action,
      installationId: w.installationId,
      repo: w.repo,
      number: pr,
      headSha: options.headSha,
      baseSha: options.baseSha,
      updatedAt: at(options.n),
    });
    payload.pull_request.base.ref = options.baseRef;
    return payload;
  }

  const develop = (memory: number): RepoFiles => ({ ...base, 'vms/db.yaml': vmDoc('db-01', X + 1, { memory }) });

  it('is planned again against its new base when the base changes, and the merge applies that plan', async () => {
    const w = (world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(X, 'app-01'), ownedGuest(X + 1, 'db-01')],
    }));
    const sim = w.clusters.sims.lab!;
    const pr = 103;
    const [developSha, mainSha, headSha, mergeSha] = [newSha(), newSha(), newSha(), newSha()];
    // develop brought db-01 a change main does not have yet; the pull request changes app-01.
    const onDevelop = develop(8192);
    const head = { ...onDevelop, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
    await expectArchive(w.github, w.repo, developSha, onDevelop);
    await expectArchive(w.github, w.repo, headSha, head);
    expectCheckRun(w.github, w.repo, { headSha, pr, id: 1031 });
    const comment = expectNewComment(w.github, w.repo, pr, 1131);
    const opened = await w.app.deliver({
      event: 'pull_request',
      payload: onBase(w, pr, { action: 'opened', headSha, baseSha: developSha, baseRef: 'develop', n: 1 }),
    });
    await w.app.jobDone('plan', opened.deliveryId);
    expect(await comment.body()).not.toContain('db-01');

    // An edit of the title changes no base: nothing is planned.
    const retitled = onBase(w, pr, { action: 'edited', headSha, baseSha: developSha, baseRef: 'develop', n: 2 });
    retitled.changes = { title: { from: 'an older title' } };
    const titleEdit = await w.app.deliver({ event: 'pull_request', payload: retitled });
    expect(titleEdit.status).toBe(200);
    expect(await w.app.job('plan', titleEdit.deliveryId)).toBeUndefined();

    // Retargeted to the default branch: planned against it, db-01's change from develop shows.
    await expectArchive(w.github, w.repo, mainSha, { ...base, 'vms/db.yaml': vmDoc('db-01', X + 1) });
    const replanned = expectCheckRun(w.github, w.repo, { headSha, pr, id: 1032 });
    const edit = expectCommentEdit(w.github, w.repo, 1131);
    const payload = onBase(w, pr, { action: 'edited', headSha, baseSha: mainSha, baseRef: EXAMPLE_DEFAULT_BRANCH, n: 3 });
    payload.changes = { base: { ref: { from: 'develop' }, sha: { from: developSha } } };
    const edited = await w.app.deliver({ event: 'pull_request', payload });
    expect(edited.status).toBe(200);
    await w.app.jobDone('plan', edited.deliveryId);
    expect((await replanned.result()).output?.title).toBe('2 to update');
    expect(await edit.body()).toContain('**lab/db-01**');
    w.github.verify();

    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 1033 });
    const applied = expectApplyComment(w.github, w.repo, { pr, id: 1132 });
    await w.merge({ number: pr, headSha, baseSha: mainSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    expect(await applied.until(finishedComment)).toContain('**2 applied**');
    expect(rawConfig(sim, X + 1)).toContain('memory: 8192');
    w.github.verify();
  }, 60_000);

  it('a plan made against another branch is not applied: the merge plans against the branch merged into, and says why', async () => {
    const w = (world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(X, 'app-01'), ownedGuest(X + 1, 'db-01')],
    }));
    const sim = w.clusters.sims.lab!;
    const pr = 104;
    const [developSha, mainSha, headSha, mergeSha] = [newSha(), newSha(), newSha(), newSha()];
    const onDevelop = develop(8192);
    const head = { ...onDevelop, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
    await expectArchive(w.github, w.repo, developSha, onDevelop);
    await expectArchive(w.github, w.repo, headSha, head);
    expectCheckRun(w.github, w.repo, { headSha, pr, id: 1041 });
    expectNewComment(w.github, w.repo, pr, 1141);
    const opened = await w.app.deliver({
      event: 'pull_request',
      payload: onBase(w, pr, { action: 'opened', headSha, baseSha: developSha, baseRef: 'develop', n: 1 }),
    });
    await w.app.jobDone('plan', opened.deliveryId);
    w.github.verify();

    // Retargeted (that delivery never came) and merged into the default branch.
    await expectArchive(w.github, w.repo, mainSha, { ...base, 'vms/db.yaml': vmDoc('db-01', X + 1) });
    const planCheck = expectCheckRun(w.github, w.repo, { headSha, pr, id: 1042 });
    const planEdit = expectCommentEdit(w.github, w.repo, 1141);
    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 1043, deployments: [] });
    const notice = expectApplyComment(w.github, w.repo, { pr, id: 1142 });
    const merged = await w.merge({ number: pr, headSha, baseSha: mainSha, mergeSha });
    await w.app.jobDone('closed', merged.deliveryId);
    expect(await check.completed).toMatchObject({ conclusion: 'neutral', output: { title: 'Not applied: no reviewed plan' } });
    expect(await notice.until(() => true)).toContain(
      `was made against \`develop\`, but this pull request was merged into \`${EXAMPLE_DEFAULT_BRANCH}\``,
    );
    expect((await planCheck.result()).output?.title).toBe('2 to update');
    expect(await planEdit.body()).toContain('**lab/db-01**');
    expect(sim.sim.stats().writes.total).toBe(0);
    w.github.verify();
  }, 60_000);

  it('/pve apply on a pull request merged into another branch than its plan was made against applies nothing and says why', async () => {
    const w = (world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] }));
    const sim = w.clusters.sims.lab!;
    const pr = 105;
    const [developSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await expectArchive(w.github, w.repo, developSha, base);
    await expectArchive(w.github, w.repo, headSha, withMemory(4096));
    expectCheckRun(w.github, w.repo, { headSha, pr, id: 1051 });
    expectNewComment(w.github, w.repo, pr, 1151);
    const opened = await w.app.deliver({
      event: 'pull_request',
      payload: onBase(w, pr, { action: 'opened', headSha, baseSha: developSha, baseRef: 'develop', n: 1 }),
    });
    await w.app.jobDone('plan', opened.deliveryId);

    expectPull(w, pr, { headSha, baseSha: newSha(), mergeSha });
    const reply = expectReply(w.github, w.repo, pr, /was made against `develop`/);
    await w.app.jobDone('command', await command(w, pr, '/pve apply', 10501));
    expect(await reply.body()).toContain(`not \`${EXAMPLE_DEFAULT_BRANCH}\`, which this pull request was merged into: nothing is applied`);
    expect(sim.sim.stats().writes.total).toBe(0);
    w.github.verify();
  });
});
