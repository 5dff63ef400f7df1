import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import {
  applyQueues,
  EXAMPLE_DEFAULT_BRANCH,
  expectApplyCheckRun,
  expectApplyComment,
  expectDefaultBranch,
  finishedComment,
  pullAnswer,
} from './apply-flow.js';
import { type ApplyWorld, ownedGuest, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { issueCommentEvent, pullRequestEvent } from './deliveries.js';
import { expectAcceptedCommand, expectArchive, expectCheckRun, expectNewComment, expectReply } from './plan-flow.js';
import { lockGuest, rawConfig, watchWrites } from './sim-writes.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { at } from './world.js';

let world: ApplyWorld | undefined;

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
});

describe('merge to apply', () => {
  it('a merge applies the plan stored for its head and posts per-guest results to the comment and the check run', async () => {
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(100101, 'web-01'), ownedGuest(100102, 'db-01', 'pve-02')],
    });
    const { github, app, repo, installationId } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = {
      'cluster.yaml': clusterDoc(),
      'vms/web.yaml': vmDoc('web-01', 100101),
      'vms/db.yaml': vmDoc('db-01', 100102),
    };
    const head: RepoFiles = {
      ...base,
      'vms/web.yaml': vmDoc('web-01', 100101, { memory: 4096 }),
      'vms/db.yaml': vmDoc('db-01', 100102, { cores: 4 }),
      'vms/app.yaml': vmDoc('app-01', 100103),
    };
    const baseSha = newSha();
    const headSha = newSha();
    const mergeSha = newSha();
    const pr = 21;

    // The pull request is planned as usual; its plan is stored for its head.
    await expectArchive(github, repo, baseSha, base);
    await expectArchive(github, repo, headSha, head);
    const planCheck = expectCheckRun(github, repo, { headSha, pr, id: 801 });
    expectNewComment(github, repo, pr, 901);
    const opened = await app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({ action: 'opened', installationId, repo, number: pr, headSha, baseSha }),
    });
    await app.jobDone('plan', opened.deliveryId);
    expect((await planCheck.result()).output?.title).toBe('1 to create, 2 to update');
    github.verify();

    // Merged: no archive is read again, the stored plan is applied.
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 802 });
    const comment = expectApplyComment(github, repo, { pr, id: 902 });
    const merged = await world.merge({ number: pr, headSha, baseSha, mergeSha });
    expect(merged.status).toBe(200);
    const completed = await check.completed;
    const body = await comment.until(finishedComment);

    expect(completed).toMatchObject({ status: 'completed', conclusion: 'success', output: { title: '3 applied' } });
    expect(body).toMatch(/^<!-- pve-gitops:apply -->\n### pve-gitops apply\n/);
    expect(body).toContain(`Merged as \`${mergeSha.slice(0, 7)}\`: applying the plan reviewed for \`${headSha.slice(0, 7)}\`.`);
    expect(body).toContain('**3 applied**');
    for (const name of ['web-01', 'db-01', 'app-01']) expect(body).toMatch(new RegExp(`✅ \\*\\*applied\\*\\* · \\*\\*lab/${name}\\*\\*`));
    // Task ids of the create, so an operator can find its log.
    expect(body).toMatch(/`UPID:pve-01:[0-9A-F]+:[0-9A-F]+:[0-9A-F]+:qmcreate:100103:/);
    expect(rawConfig(sim, 100101)).toContain('memory: 4096');
    expect(rawConfig(sim, 100102)).toContain('cores: 4');
    expect(rawConfig(sim, 100103)).toContain('name: app-01');
    github.verify();
  });
});

describe('one guest, several merges', () => {
  it('two merges touching one guest apply in merge order, one write at a time, while their other guests run in parallel', async () => {
    const X = 100201;
    const Y = 100202;
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(X, 'app-01'), ownedGuest(Y, 'db-01', 'pve-02')],
    });
    const { github, repo } = world;
    const sim = world.clusters.sims.lab!;
    const writes = watchWrites(sim);
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X), 'vms/db.yaml': vmDoc('db-01', Y) };
    // A raises the memory of X; B, branched after A, also sets X's cores and Y's memory. Both
    // were planned before either merged, against the same cluster.
    const headA: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 3072 }) };
    const headB: RepoFiles = {
      ...base,
      'vms/app.yaml': vmDoc('app-01', X, { memory: 3072, cores: 4 }),
      'vms/db.yaml': vmDoc('db-01', Y, { memory: 4096 }),
    };
    const [baseSha, shaA, shaB, mergeA, mergeB] = [newSha(), newSha(), newSha(), newSha(), newSha()];
    await world.storePlan({ baseSha, base, pr: 31, headSha: shaA, head: headA });
    await world.storePlan({ baseSha, base, pr: 32, headSha: shaB, head: headB });

    // A backup holds X: A's apply of X waits it out, and keeps X's place for A.
    const backup = lockGuest(sim, X);
    const checkA = expectApplyCheckRun(github, repo, { mergeSha: mergeA, id: 811 });
    const commentA = expectApplyComment(github, repo, { pr: 31, id: 911 });
    const checkB = expectApplyCheckRun(github, repo, { mergeSha: mergeB, id: 812 });
    const commentB = expectApplyComment(github, repo, { pr: 32, id: 912 });
    await world.merge({ number: 31, headSha: shaA, baseSha, mergeSha: mergeA, mergedAt: at(1) });
    await commentA.until((body) => body.includes('locked (backup)'));
    await world.merge({ number: 32, headSha: shaB, baseSha, mergeSha: mergeB, mergedAt: at(2) });
    // B's other guest does not wait for X; B's X waits for A's.
    const waiting = await commentB.until((body) => /applied\*\* · \*\*lab\/db-01\*\*/.test(body) && body.includes('waiting'));
    expect(waiting).toContain('waiting for the apply of \\#31 to finish with this guest');
    expect(writes.of(X)).toEqual([]);
    expect(writes.of(Y)).toHaveLength(1);

    backup.release();
    const [doneA, doneB] = await Promise.all([checkA.completed, checkB.completed]);
    expect(doneA).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    expect(doneB).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    const bodyA = await commentA.until(finishedComment);
    const bodyB = await commentB.until(finishedComment);
    // In merge order: A set the memory; B, finding it done, set only the cores. Had B gone first,
    // it would have set both and A would have found nothing to do.
    expect(bodyA).toMatch(/\| `wait-lock` \| locked \(backup\); waiting up to 600 s \|[\s\S]*\| `config` \| set memory \|/);
    expect(bodyB).toMatch(/\| `config` \| set cores \|/);
    expect(rawConfig(sim, X)).toMatch(/cores: 4\n[\s\S]*memory: 3072/);
    // Never two writes in flight for X, and Y's write was over before X's first began.
    const [first, second] = writes.of(X);
    expect(writes.of(X)).toHaveLength(2);
    expect(first!.end).toBeLessThanOrEqual(second!.start);
    expect(writes.of(Y)[0]!.end).toBeLessThanOrEqual(first!.start);
    expect(sim.sim.stats().guests[String(X)]).toEqual({ writes: 2, maxConcurrentWrites: 1 });
    github.verify();
  });
});

describe('merges in the same second', () => {
  it("are applied in the order of the default branch's history, whatever order their webhooks arrive in", async () => {
    const X = 100221;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const { github, repo } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    // C holds the guest while A and B, branched after it, queue up behind it. A raises the memory;
    // B, merged right after A (its merge commit descends from A's), also sets the cores. GitHub gives both the
    // same second of merged_at, and B's webhook comes first.
    const headC: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { onboot: 1 }) };
    const headA: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { onboot: 1, memory: 3072 }) };
    const headB: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { onboot: 1, memory: 3072, cores: 4 }) };
    const [baseSha, shaC, shaA, shaB, mergeC, mergeA, mergeB] = [newSha(), newSha(), newSha(), newSha(), newSha(), newSha(), newSha()];
    // Numbered so that a tie left to the run ids would put B (#232) before A (#233).
    const [C, A, B] = [231, 233, 232];
    await world.storePlan({ baseSha, base, pr: C, headSha: shaC, head: headC });
    await world.storePlan({ baseSha, base, pr: A, headSha: shaA, head: headA });
    await world.storePlan({ baseSha, base, pr: B, headSha: shaB, head: headB });
    const compare = github.expect({
      method: 'GET',
      path: new RegExp(`^/repos/${repo.owner}/${repo.name}/compare/(${mergeA}\\.\\.\\.${mergeB}|${mergeB}\\.\\.\\.${mergeA})$`),
      reply: (request) => ({ json: { status: request.path.endsWith(`...${mergeB}`) ? 'ahead' : 'behind', ahead_by: 1, behind_by: 0 } }),
    });

    const backup = lockGuest(sim, X);
    const checkC = expectApplyCheckRun(github, repo, { mergeSha: mergeC, id: 8231 });
    const commentC = expectApplyComment(github, repo, { pr: C, id: 9231 });
    const checkA = expectApplyCheckRun(github, repo, { mergeSha: mergeA, id: 8233 });
    const commentA = expectApplyComment(github, repo, { pr: A, id: 9233 });
    const checkB = expectApplyCheckRun(github, repo, { mergeSha: mergeB, id: 8232 });
    const commentB = expectApplyComment(github, repo, { pr: B, id: 9232 });
    await world.merge({ number: C, headSha: shaC, baseSha, mergeSha: mergeC, mergedAt: at(1) });
    await commentC.until((body) => body.includes('locked (backup)'));
    await world.merge({ number: B, headSha: shaB, baseSha, mergeSha: mergeB, mergedAt: at(2) });
    await world.merge({ number: A, headSha: shaA, baseSha, mergeSha: mergeA, mergedAt: at(2) });
    await commentA.until((body) => body.includes('waiting for the apply of \\#231'));
    await commentB.until((body) => body.includes('waiting for the apply of'));

    backup.release();
    expect(await checkC.completed).toMatchObject({ conclusion: 'success' });
    expect(await checkA.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    expect(await checkB.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    // A first: it set the memory, and B found only the cores left to set.
    expect(await commentA.until(finishedComment)).toMatch(/\| `config` \| set memory \|/);
    expect(await commentB.until(finishedComment)).toMatch(/\| `config` \| set cores \|/);
    expect(rawConfig(sim, X)).toMatch(/cores: 4\n[\s\S]*memory: 3072/);
    // One question to GitHub, by the merge that came second.
    expect(compare.requests).toHaveLength(1);
    github.verify();
  }, 60_000);
});

describe('a merge whose job gives up', () => {
  it('before any guest was queued (GitHub failing the compare every time) tells the pull request that its apply did not start and that /pve apply starts it', async () => {
    const X = 100241;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const { github, repo } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const headA: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 3072 }) };
    const headB: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 3072, cores: 4 }) };
    const [baseSha, shaA, shaB, mergeA, mergeB] = [newSha(), newSha(), newSha(), newSha(), newSha()];
    const [A, B] = [241, 242];
    await world.storePlan({ baseSha, base, pr: A, headSha: shaA, head: headA });
    await world.storePlan({ baseSha, base, pr: B, headSha: shaB, head: headB });
    // Merged in one second: B asks GitHub which came first, and GitHub fails every time.
    const compare = github.expect({
      method: 'GET',
      path: new RegExp(`^/repos/${repo.owner}/${repo.name}/compare/${mergeA}\\.\\.\\.${mergeB}$`),
      times: 'any',
      reply: { status: 502, json: { message: 'Server Error' } },
    });
    const backup = lockGuest(sim, X);
    const checkA = expectApplyCheckRun(github, repo, { mergeSha: mergeA, id: 8241 });
    const commentA = expectApplyComment(github, repo, { pr: A, id: 9241 });
    const checkB = expectApplyCheckRun(github, repo, { mergeSha: mergeB, id: 8242, deployments: [] });
    const commentB = expectApplyComment(github, repo, { pr: B, id: 9242 });
    await world.merge({ number: A, headSha: shaA, baseSha, mergeSha: mergeA, mergedAt: at(2) });
    await commentA.until((body) => body.includes('locked (backup)'));
    await world.merge({ number: B, headSha: shaB, baseSha, mergeSha: mergeB, mergedAt: at(2) });

    // Every attempt of B's merge job failed: nothing was queued, and the pull request hears why.
    expect(await checkB.completed).toMatchObject({ conclusion: 'failure', output: { title: 'Not applied: the apply did not start' } });
    const notice = await commentB.until(() => true);
    expect(notice).toContain('did not start');
    expect(notice).toContain('after 5 attempts');
    expect(notice).toContain('comment `/pve apply` to start it');
    expect(compare.requests.length).toBeGreaterThanOrEqual(5);

    backup.release();
    expect(await checkA.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    await commentA.until(finishedComment);
    expect(rawConfig(sim, X)).toContain('memory: 3072');
    expect(rawConfig(sim, X)).not.toContain('cores: 4');
    github.verify();
  }, 240_000);
});

describe('plans while an apply runs', () => {
  it("another pull request's plan that touches a guest with an apply in progress says so", async () => {
    const X = 100251;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const { github, app, repo, installationId } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const [baseSha, shaA, mergeA, shaC] = [newSha(), newSha(), newSha(), newSha()];
    await world.storePlan({
      baseSha,
      base,
      pr: 41,
      headSha: shaA,
      head: { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 3072 }) },
    });
    const backup = lockGuest(sim, X);
    const checkA = expectApplyCheckRun(github, repo, { mergeSha: mergeA, id: 821 });
    const commentA = expectApplyComment(github, repo, { pr: 41, id: 921 });
    await world.merge({ number: 41, headSha: shaA, baseSha, mergeSha: mergeA });
    await commentA.until((body) => body.includes('locked (backup)'));

    // While A's apply of X waits, pull request #42 changes X too.
    await expectArchive(github, repo, baseSha, base);
    await expectArchive(github, repo, shaC, { ...base, 'vms/app.yaml': vmDoc('app-01', X, { cores: 3 }) });
    const planCheck = expectCheckRun(github, repo, { headSha: shaC, pr: 42, id: 822 });
    const planComment = expectNewComment(github, repo, 42, 922);
    const opened = await app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({ action: 'opened', installationId, repo, number: 42, headSha: shaC, baseSha }),
    });
    await app.jobDone('plan', opened.deliveryId);
    const body = await planComment.body();
    expect(body).toContain('### ⏳ Applies in progress for these guests');
    expect(body).toContain(`| **lab/app-01** (${X}) | \\#41 |`);
    expect((await planCheck.result()).output?.summary).toContain('an apply is in progress for 1 guest of this plan');

    backup.release();
    expect((await checkA.completed).conclusion).toBe('success');
    github.verify();
  });
});

/** Rewrites the plan stored for a pull request head (what someone with access to Redis could do). */
// biome-ignore lint/suspicious/noExplicitAny: the test reaches into the stored JSON
async function editStoredPlan(w: ApplyWorld, pr: number, headSha: string, edit: (plan: any) => void): Promise<void> {
  const redis = new Redis(w.redisUrl, { maxRetriesPerRequest: 3 });
  try {
    const key = `${w.app.prefix}:state:plan:${w.repo.id}:${pr}:${headSha}`;
    const envelope = JSON.parse((await redis.get(key)) ?? 'null');
    const plan = JSON.parse(envelope.plan);
    edit(plan);
    envelope.plan = JSON.stringify(plan);
    await redis.set(key, JSON.stringify(envelope), 'KEEPTTL');
  } finally {
    redis.disconnect();
  }
}

describe('conflicts and /pve apply', () => {
  it("an operator's edit after review is a conflict on the pull request and stays; /pve plan then /pve apply applies the new plan", async () => {
    const X = 100301;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const w = world;
    const { github, app, repo, installationId } = w;
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const head: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 51;
    await world.storePlan({ baseSha, base, pr, headSha, head });

    // Reviewed: 2048 → 4096. Then someone sets 3000 in the web UI.
    sim.sim.operatorEdit(X, { set: { memory: 3000 } });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 831 });
    const comment = expectApplyComment(github, repo, { pr, id: 931 });
    await world.merge({ number: pr, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'failure', output: { title: '1 conflict' } });
    const conflict = await comment.until(finishedComment);
    expect(conflict).toContain('⚠️ **conflict** · **lab/app-01**');
    expect(conflict).toContain('| `memory` | `2048` → `4096` | `3000` → `4096` |');
    expect(conflict).toContain('**Nothing was written for 1 guest in conflict:**');
    expect(rawConfig(sim, X)).toContain('memory: 3000');
    expect(sim.sim.stats().writes.total).toBe(0);
    github.verify();

    // `/pve plan` on the merged pull request plans its head again, against the cluster as it is.
    expectAcceptedCommand(w.github, w.repo, 'alice', 5101);
    github.expect(pullAnswer(w.repo, pr, { headSha, baseSha, mergeSha }));
    await expectArchive(github, repo, baseSha, base);
    await expectArchive(github, repo, headSha, head);
    const planCheck = expectCheckRun(github, repo, { headSha, pr, id: 832 });
    const planComment = expectNewComment(github, repo, pr, 932);
    const replan = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: pr, body: '/pve plan', author: 'alice', commentId: 5101 }),
    });
    await app.jobDone('command', replan.deliveryId);
    expect((await planCheck.result()).conclusion).toBe('success');
    expect(await planComment.body()).toContain('| `memory` | `3000` | `4096` | live |');
    github.verify();

    // `/pve apply` applies that plan, reviewed now.
    expectAcceptedCommand(w.github, w.repo, 'alice', 5102);
    github.expect(pullAnswer(w.repo, pr, { headSha, baseSha, mergeSha }));
    // `main` is still at the merge: it says what the pull request said.
    await expectDefaultBranch(github, repo, mergeSha, head);
    const again = expectApplyCheckRun(github, repo, { mergeSha, id: 833 });
    const apply = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: pr, body: '/pve apply', author: 'alice', commentId: 5102 }),
    });
    await app.jobDone('command', apply.deliveryId);
    expect(await again.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    // The same sticky comment, edited (its edits are all taken by the expectation declared above).
    const applied = await comment.until((body) => body.includes('by alice') && finishedComment(body));
    expect(applied).toContain('`/pve apply` by alice: applying the plan reviewed for');
    expect(applied).toContain('**1 applied**');
    expect(rawConfig(sim, X)).toContain('memory: 4096');
    github.verify();
  }, 90_000);

  it('/pve apply on an older merged pull request that would roll back a later merge is refused, saying why, and writes nothing', async () => {
    const X = 100321;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const w = world;
    const { github, app, repo, installationId } = w;
    const sim = w.clusters.sims.lab!;
    const queues = applyQueues(w.redisUrl, app.prefix);
    try {
      const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
      const one: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
      const two: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 8192 }) };
      const [baseSha, head1, merge1, head2, merge2] = [newSha(), newSha(), newSha(), newSha(), newSha()];
      // #1 merged (4096), then #2 (8192); both applied.
      for (const [pr, headSha, prBase, prBaseSha, files, mergeSha] of [
        [331, head1, base, baseSha, one, merge1],
        [332, head2, one, merge1, two, merge2],
      ] as const) {
        await w.storePlan({ pr, headSha, baseSha: prBaseSha, head: files, base: prBase });
        const check = expectApplyCheckRun(github, repo, { mergeSha, id: pr * 10 });
        const comment = expectApplyComment(github, repo, { pr, id: pr * 10 + 1 });
        await w.merge({ number: pr, headSha, baseSha: prBaseSha, mergeSha });
        expect(await check.completed).toMatchObject({ conclusion: 'success' });
        await comment.until(finishedComment);
      }
      expect(rawConfig(sim, X)).toContain('memory: 8192');
      // A writer re-plans #1 (`/pve plan` stores #1's head against the cluster as it is: 8192 → 4096), then applies it.
      await w.storePlan({ pr: 331, headSha: head1, baseSha, head: one, base });
      const jobsBefore = await queues.guestJobIds();
      expectAcceptedCommand(github, repo, 'mallory', 33101);
      github.expect(pullAnswer(repo, 331, { headSha: head1, baseSha, mergeSha: merge1 }));
      await expectDefaultBranch(github, repo, merge2, two);
      const reply = expectReply(github, repo, 331, /nothing was applied/);
      const apply = await app.deliver({
        event: 'issue_comment',
        payload: issueCommentEvent({ installationId, repo, number: 331, body: '/pve apply', author: 'mallory', commentId: 33101 }),
      });
      await app.jobDone('command', apply.deliveryId);
      expect(await queues.guestJobIds()).toEqual(jobsBefore);
      const said = await reply.body();
      expect(said).toMatch(
        new RegExp(
          `^@mallory nothing was applied: \`${EXAMPLE_DEFAULT_BRANCH}\` \\(now at \`[0-9a-f]{7}\`\\) no longer says what this pull request's head says for \\*\\*lab/app-01\\*\\*`,
        ),
      );
      expect(said).toContain(
        'applies its reviewed plan only where the default branch still describes every guest it changes as this pull request did',
      );
      expect(rawConfig(sim, X)).toContain('memory: 8192');
      github.verify();
    } finally {
      await queues.close();
    }
  }, 60_000);

  it("/pve apply when the posted plan is an earlier head's applies nothing and says to plan the merged head first", async () => {
    const X = 100341;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01'), ownedGuest(X + 1, 'db-01')] });
    const w = world;
    const { github, app, repo, installationId } = w;
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X), 'vms/db.yaml': vmDoc('db-01', X + 1) };
    const first: RepoFiles = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
    // Posted: head1's plan (app-01). The pull request was merged with head2, which also changes
    // db-01; head2's plan was never posted (its comment refused, the merge's job gave up), so
    // head1's plan, which the default branch agrees with for app-01, would leave db-01 out.
    const [baseSha, head1, head2, mergeSha] = [newSha(), newSha(), newSha(), newSha()];
    await w.storePlan({ pr: 334, headSha: head1, baseSha, head: first, base });
    expectAcceptedCommand(github, repo, 'alice', 33401);
    github.expect(pullAnswer(repo, 334, { headSha: head2, baseSha, mergeSha }));
    const reply = expectReply(github, repo, 334, /nothing is applied/);
    const apply = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 334, body: '/pve apply', author: 'alice', commentId: 33401 }),
    });
    await app.jobDone('command', apply.deliveryId);
    // Nothing else was asked of GitHub (no default branch read, no apply check run): the reply came.
    github.verify();
    expect(await reply.body()).toBe(
      `@alice the plan posted here is for \`${head1.slice(0, 7)}\`, not \`${head2.slice(0, 7)}\`, the head this pull request was merged with: ` +
        'nothing is applied, since that plan would leave out what the later commits change. Comment `/pve plan`, review the plan, then `/pve apply`.',
    );
    expect(sim.sim.stats().writes.total).toBe(0);
  });

  it('/pve apply on an open pull request says applies happen on merge, and applies nothing', async () => {
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [] });
    const w = world;
    expectAcceptedCommand(w.github, w.repo, 'bob', 5201);
    w.github.expect(pullAnswer(w.repo, 52, { headSha: newSha(), baseSha: newSha() }));
    const reply = expectReply(w.github, w.repo, 52, /applies a pull request when it is merged into the default branch/);
    const delivery = await w.app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({
        installationId: w.installationId,
        repo: w.repo,
        number: 52,
        body: '/pve apply',
        author: 'bob',
        commentId: 5201,
      }),
    });
    await w.app.jobDone('command', delivery.deliveryId);
    expect(await reply.body()).toMatch(/^@bob /);
    w.github.verify();
  });
});

describe('merges that apply nothing', () => {
  it('a merge without a stored plan plans it now, posts it, applies nothing and says how to apply', async () => {
    const X = 100401;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const { github, app, repo } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 61;
    await expectArchive(github, repo, baseSha, base);
    await expectArchive(github, repo, headSha, { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 8192 }) });
    const planCheck = expectCheckRun(github, repo, { headSha, pr, id: 841 });
    const planComment = expectNewComment(github, repo, pr, 941);
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 842, deployments: [] });
    const comment = expectApplyComment(github, repo, { pr, id: 942 });
    const merged = await world.merge({ number: pr, headSha, baseSha, mergeSha });
    await app.jobDone('closed', merged.deliveryId);
    expect(await check.completed).toMatchObject({ conclusion: 'neutral', output: { title: 'Not applied: no reviewed plan' } });
    expect((await planCheck.result()).output?.title).toBe('1 to update');
    expect(await planComment.body()).toContain('| `memory` | `2048` | `8192` | live |');
    const notice = await comment.until(() => true);
    expect(notice).toContain(`**Nothing was applied:** no reviewed plan was stored for \`${headSha.slice(0, 7)}\``);
    expect(notice).toContain('Review that plan, then comment `/pve apply` to apply it.');
    expect(sim.sim.stats().writes.total).toBe(0);
    expect(rawConfig(sim, X)).toContain('memory: 2048');
    github.verify();
  });

  it('a merge without a stored plan whose notice GitHub refused once applies nothing when retried, though its plan is posted by then', async () => {
    const X = 100402;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-02')] });
    const { github, app, repo } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-02', X) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 62;
    await expectArchive(github, repo, baseSha, base);
    await expectArchive(github, repo, headSha, { ...base, 'vms/app.yaml': vmDoc('app-02', X, { memory: 8192 }) });
    const planCheck = expectCheckRun(github, repo, { headSha, pr, id: 851 });
    const planComment = expectNewComment(github, repo, pr, 951);
    // The first attempt plans and posts, then GitHub refuses the notice's check run: the job is retried.
    const refusedNotice = github.expect({
      method: 'POST',
      path: `/repos/${repo.owner}/${repo.name}/check-runs`,
      body: { head_sha: mergeSha, name: 'pve-gitops/apply' },
      reply: { status: 422, json: { message: 'Validation Failed' } },
    });
    // The retry plans the merged head again (a new check run; the comment says the same) and posts the notice.
    const replanCheck = expectCheckRun(github, repo, { headSha, pr, id: 853 });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 852, deployments: [] });
    const comment = expectApplyComment(github, repo, { pr, id: 952 });
    const merged = await world.merge({ number: pr, headSha, baseSha, mergeSha });
    await refusedNotice.done;
    expect(await planComment.body()).toContain('| `memory` | `2048` | `8192` | live |');
    expect((await planCheck.result()).output?.title).toBe('1 to update');
    await app.jobDone('closed', merged.deliveryId);
    expect(await check.completed).toMatchObject({ conclusion: 'neutral', output: { title: 'Not applied: no reviewed plan' } });
    expect((await replanCheck.result()).output?.title).toBe('1 to update');
    expect(await comment.until(() => true)).toContain('Review that plan, then comment `/pve apply` to apply it.');
    expect(sim.sim.stats().writes.total).toBe(0);
    expect(rawConfig(sim, X)).toContain('memory: 2048');
    github.verify();
  });

  it('a stored plan whose specs do not pass validate is not applied', async () => {
    const X = 100460;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')] });
    const { github, repo } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const head = { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) };
    await world.storePlan({ baseSha, base, pr: 63, headSha, head });
    // Changed in storage after review: the spec the apply would recompute from is not a valid spec.
    await editStoredPlan(world, 63, headSha, (plan) => {
      plan.guests[0].target.spec.config.memory = 'lots';
    });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 856, deployments: [] });
    const comment = expectApplyComment(github, repo, { pr: 63, id: 956 });
    await world.merge({ number: 63, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'failure', output: { title: 'Not applied: the stored specs are invalid' } });
    const notice = await comment.until(() => true);
    expect(notice).toContain('do not pass validation');
    expect(notice).toContain('vms/app.yaml');
    expect(sim.sim.stats().writes.total).toBe(0);
    github.verify();
  });

  it('a plan with errors is never applied', async () => {
    // 100451 belongs to someone else (no owner tag): a spec claiming it is a collision.
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(100450, 'app-01'), { ...ownedGuest(100451, 'legacy'), config: { name: 'legacy', memory: 1024 } }],
    });
    const { github, repo } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', 100450) };
    const head: RepoFiles = {
      ...base,
      'vms/app.yaml': vmDoc('app-01', 100450, { memory: 4096 }),
      'vms/legacy.yaml': vmDoc('legacy', 100451),
    };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await world.storePlan({ baseSha, base, pr: 62, headSha, head });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 851, deployments: [] });
    const comment = expectApplyComment(github, repo, { pr: 62, id: 951 });
    await world.merge({ number: 62, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'failure', output: { title: 'Not applied: the plan has errors' } });
    const notice = await comment.until(() => true);
    expect(notice).toContain('has errors, and a plan with errors is never applied');
    expect(notice).toContain('lab/legacy');
    // Not even the guest without an error was touched.
    expect(sim.sim.stats().writes.total).toBe(0);
    github.verify();
  });
});

describe('a cluster that cannot be reached', () => {
  it('is retried with backoff, then reported on the pull request; /pve apply runs it again once the cluster is back', async () => {
    const X = 100701;
    // A backoff no test waits out: each retry is run by the test once it was seen waiting, so the
    // comment showing the wait is an event the test waits for, not a race with the next attempt.
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'app-01')], env: { APPLY_BACKOFF_MS: '600000' } });
    const { github, app, repo, installationId } = world;
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    await world.storePlan({ baseSha, base, pr: 91, headSha, head: { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) } });
    // Every connection to the cluster is reset, as when it is down behind a load balancer.
    sim.sim.setFailureRate(1, { mode: 'reset' });
    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 891 });
    const comment = expectApplyComment(github, repo, { pr: 91, id: 991 });
    const queues = applyQueues(world.redisUrl, app.prefix);
    const retries = await queues.watchDelayedGuests();
    try {
      await world.merge({ number: 91, headSha, baseSha, mergeSha });
      // Retried while it could succeed (3 attempts: 2 backoffs): the comment says so.
      for (let retry = 1; retry <= 2; retry++) {
        const job = await retries.next();
        await comment.until((body) => body.includes('retrying after:'));
        await retries.promote(job);
      }
    } finally {
      await queues.close();
    }
    expect(await check.completed).toMatchObject({ conclusion: 'failure', output: { title: '1 failed' } });
    const failed = await comment.until(finishedComment);
    expect(failed).toContain('gave up after 3 attempts; comment /pve apply to run it again');
    expect(failed).toContain('comment `/pve apply` to run the apply again');
    expect(sim.sim.stats().writes.total).toBe(0);

    sim.sim.setFailureRate(0);
    expectAcceptedCommand(world.github, world.repo, 'carol', 9101);
    github.expect(pullAnswer(world.repo, 91, { headSha, baseSha, mergeSha }));
    await expectDefaultBranch(github, repo, mergeSha, { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) });
    const again = expectApplyCheckRun(github, repo, { mergeSha, id: 892 });
    await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 91, body: '/pve apply', author: 'carol', commentId: 9101 }),
    });
    expect(await again.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    expect(await comment.until((body) => body.includes('by carol') && finishedComment(body))).toContain('**1 applied**');
    expect(rawConfig(sim, X)).toContain('memory: 4096');
    github.verify();
  }, 60_000);
});
