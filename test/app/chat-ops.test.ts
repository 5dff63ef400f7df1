import { afterEach, describe, expect, inject, it } from 'vitest';
import { checkRunRerequestedEvent, issueCommentEvent } from './deliveries.js';
import { expectArchive, expectCheckRun, expectNewComment, expectReply } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { at, startWorld, type World } from './world.js';

let world: World | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

const base: RepoFiles = { 'cluster.yaml': clusterDoc() };

function comment(w: World, body: string, options: Partial<Parameters<typeof issueCommentEvent>[0]> = {}) {
  return w.app.deliver({
    event: 'issue_comment',
    payload: issueCommentEvent({
      installationId: w.installationId,
      repo: w.repo,
      number: 2,
      body,
      author: 'alice',
      commentId: 555,
      ...options,
    }),
  });
}

function expectPermission(w: World, user: string, reply: { status?: number; json: unknown }): void {
  w.github.expect({ method: 'GET', path: `/repos/acme/estate/collaborators/${user}/permission`, reply });
}

/** GitHub's answer for the pull request, as the worker asks for it. */
function expectPull(w: World, pr: number, head: string, baseSha: string, state = 'open'): void {
  w.github.expect({
    method: 'GET',
    path: `/repos/acme/estate/pulls/${pr}`,
    reply: { json: { number: pr, state, draft: false, updated_at: at(9), head: { sha: head }, base: { sha: baseSha } } },
  });
}

async function expectPlan(w: World, head: string, baseSha: string, id: number) {
  await expectArchive(w.github, w.repo, baseSha, base);
  await expectArchive(w.github, w.repo, head, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
  const check = expectCheckRun(w.github, w.repo, { headSha: head, pr: 2, id });
  const posted = expectNewComment(w.github, w.repo, 2, id + 1000);
  return { check, posted };
}

describe('chat-ops', () => {
  it('refuses `/pve plan` from a reader with a reply saying why, and plans nothing', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    expectPermission(w, 'alice', { json: { permission: 'read', role_name: 'read' } });
    const reply = expectReply(w.github, w.repo, 2, /was not run/);
    const result = await comment(w, 'Looks good.\n/pve plan');
    expect(result.status).toBe(200);
    await w.app.jobDone('command', result.deliveryId);
    w.github.verify();
    expect(await reply.body()).toBe(
      '@alice `/pve plan` was not run: pve-gitops commands need write, maintain or admin permission on this repository, and GitHub reports **read** for you.',
    );
  });

  it('refuses someone who is no collaborator at all (GitHub answers 404)', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    expectPermission(w, 'mallory', { status: 404, json: { message: 'Not Found' } });
    const reply = expectReply(w.github, w.repo, 2, /was not run/);
    const result = await comment(w, '/pve plan', { author: 'mallory' });
    await w.app.jobDone('command', result.deliveryId);
    w.github.verify();
    expect(await reply.body()).toContain('GitHub reports **none** for you');
  });

  it('runs `/pve plan` from a maintainer: a reaction at once, then the current head planned', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const head = newSha();
    // `permission` folds maintain into write; the role name says maintain.
    expectPermission(w, 'alice', { json: { permission: 'write', role_name: 'maintain' } });
    const reaction = w.github.expect({
      method: 'POST',
      path: '/repos/acme/estate/issues/comments/555/reactions',
      body: { content: 'eyes' },
      reply: { status: 201, json: {} },
    });
    expectPull(w, 2, head, baseSha);
    const { check } = await expectPlan(w, head, baseSha, 1201);
    const result = await comment(w, '```\n/pve help\n```\n> /pve apply\n/pve plan');
    await w.app.jobDone('command', result.deliveryId);
    w.github.verify();
    // The reaction came before anything of the plan.
    const calls = w.github.calls();
    expect(calls.indexOf('POST /repos/acme/estate/issues/comments/555/reactions')).toBeLessThan(
      calls.indexOf('GET /repos/acme/estate/pulls/2'),
    );
    expect((await reaction.done).length).toBe(1);
    expect((await check.result()).conclusion).toBe('success');
  });

  it('answers `/pve help` with the commands, to anyone', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const reply = expectReply(w.github, w.repo, 2, /pve-gitops commands/);
    const result = await comment(w, '/pve help', { author: 'reader' });
    await w.app.jobDone('command', result.deliveryId);
    w.github.verify();
    const body = await reply.body();
    expect(body).toContain('- `/pve plan` — plan the pull request again');
    expect(body).toContain('- `/pve help` — this list');
  });

  it('answers an unknown command from a writer with the help, naming it without markup', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    expectPermission(w, 'alice', { json: { permission: 'admin', role_name: 'admin' } });
    const reply = expectReply(w.github, w.repo, 2, /is not a pve-gitops command/);
    const result = await comment(w, '/pve deploy`@everyone`');
    await w.app.jobDone('command', result.deliveryId);
    w.github.verify();
    expect((await reply.body()).split('\n')[0]).toBe('`/pve deployeveryone` is not a pve-gitops command.');
  });

  it('says so when `/pve plan` comes on a closed pull request', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    expectPermission(w, 'alice', { json: { permission: 'write', role_name: 'write' } });
    w.github.expect({ method: 'POST', path: '/repos/acme/estate/issues/comments/555/reactions', reply: { status: 201, json: {} } });
    expectPull(w, 2, newSha(), newSha(), 'closed');
    const reply = expectReply(w.github, w.repo, 2, /closed/);
    const result = await comment(w, '/pve plan');
    await w.app.jobDone('command', result.deliveryId);
    w.github.verify();
    expect(await reply.body()).toBe('This pull request is closed: it is not planned any more.');
  });

  it.each([
    ['an edited comment', { action: 'edited' as const }, '/pve plan'],
    ['a bot', { authorType: 'Bot' as const }, '/pve plan'],
    ['a comment on an issue', { onIssue: true }, '/pve plan'],
    ['a command in a code block', {}, '```\n/pve plan\n```'],
    ['a quoted command', {}, '> /pve plan'],
    ['a command not at the start of a line', {}, 'please run /pve plan'],
    // Invisible in the thread: nobody reading it would know a command ran.
    ['a command inside an HTML comment', {}, 'Merging now.\n<!--\n/pve apply\n-->'],
    ['a command inside a folded <details>', {}, '<details><summary>notes</summary>\n\n/pve apply\n\n</details>'],
  ])('ignores %s: answered 200, nothing enqueued', async (_, options, body) => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), role: 'web' }));
    const result = await comment(w, body, options);
    expect(result.status).toBe(200);
    expect(await w.app.jobs()).toEqual([]);
  });

  it("re-plans on GitHub's Re-run button, for the pull request the check run names in external_id", async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const head = newSha();
    expectPull(w, 2, head, baseSha);
    const { check } = await expectPlan(w, head, baseSha, 1301);
    const result = await w.app.deliver({
      event: 'check_run',
      payload: checkRunRerequestedEvent({
        installationId: w.installationId,
        repo: w.repo,
        appId: w.github.app.id,
        checkRunId: 1300,
        headSha: head,
        externalId: '2',
      }),
    });
    expect(result.status).toBe(200);
    await w.app.jobDone('rerun', result.deliveryId);
    w.github.verify();
    expect((await check.result()).conclusion).toBe('success');
  });

  it("ignores a re-run of another app's check run, or of another check", async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), role: 'web' }));
    for (const event of [
      checkRunRerequestedEvent({
        installationId: w.installationId,
        repo: w.repo,
        appId: 1,
        checkRunId: 1,
        headSha: newSha(),
        externalId: '2',
      }),
      checkRunRerequestedEvent({
        installationId: w.installationId,
        repo: w.repo,
        appId: w.github.app.id,
        checkRunId: 1,
        headSha: newSha(),
        externalId: '2',
        name: 'lint',
      }),
    ]) {
      expect((await w.app.deliver({ event: 'check_run', payload: event })).status).toBe(200);
    }
    expect(await w.app.jobs()).toEqual([]);
  });
});
