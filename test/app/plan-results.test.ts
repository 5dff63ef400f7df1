import { afterEach, describe, expect, inject, it } from 'vitest';
import { pullRequestEvent } from './deliveries.js';
import { expectArchive, expectCheckRun, expectCommentEdit, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { at, openPullRequest, startWorld, type World } from './world.js';

let world: World | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

const open = openPullRequest;

describe('what a plan posts', () => {
  it('an invalid spec fails the check run with annotations on its lines, under the spec root the base config names', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = {
      '.github/pve-gitops.yml': 'specs: specs/\n',
      'specs/cluster.yaml': clusterDoc(),
      'other/ci.yaml': 'not: a spec\n',
    };
    await expectArchive(w.github, w.repo, baseSha, base);
    const broken = [
      'kind: VM',
      'name: web-01',
      'cluster: lab',
      'node: pve-01',
      'vmid: 100101',
      'colour: blue',
      'config:',
      '  memory: 2048',
      '',
    ].join('\n');
    await expectArchive(w.github, w.repo, headSha, {
      ...base,
      'specs/vms/web.yaml': broken,
      'specs/vms/db.yaml': vmDoc('db-01', 100102, {}, 'nowhere'),
    });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 4, id: 601 });
    const comment = expectNewComment(w.github, w.repo, 4, 701);
    await w.app.jobDone('plan', await open(w, 4, headSha, baseSha));
    w.github.verify();

    const result = await check.result();
    expect(result.conclusion).toBe('failure');
    expect(result.output?.title).toBe('The specs are invalid: 2 problems');
    expect(result.output?.annotations?.map((a) => [a.path, a.start_line, a.annotation_level])).toEqual([
      ['specs/vms/db.yaml', 3, 'failure'],
      ['specs/vms/web.yaml', 6, 'failure'],
    ]);
    expect(result.output?.annotations?.[1]?.message).toBe('unknown key "colour" in VM');
    const body = await comment.body();
    expect(body).toContain('**❌ The specs are invalid: nothing was planned**');
    expect(body).toContain('`specs/vms/web.yaml:6:1`: unknown key "colour" in VM');
  });

  it('sends annotations in batches of 50, the last batch with the conclusion', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    const many = Array.from(
      { length: 60 },
      (_, i) => `kind: VM\nname: vm-${i}\ncluster: lab\nnode: pve-01\nvmid: ${100100 + i}\nbogus: ${i}\n`,
    ).join('---\n');
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'many.yaml': many });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 5, id: 602, updates: 2 });
    expectNewComment(w.github, w.repo, 5, 702);
    await w.app.jobDone('plan', await open(w, 5, headSha, baseSha));
    w.github.verify();
    const [first, last] = (await check.completed.done).map(
      (r) => r.body as { status?: string; output: { annotations: { start_line: number }[] } },
    );
    expect(first?.status).toBeUndefined();
    expect(first?.output.annotations).toHaveLength(50);
    expect(last?.status).toBe('completed');
    expect(last?.output.annotations).toHaveLength(10);
    expect(last?.output.annotations.at(-1)?.start_line).toBe(59 * 7 + 6);
  });

  it('names the clusters that could not be read, and why, in the comment and the check run', async () => {
    // lab points at a closed port; prod has no connection on the server at all.
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), env: { PVE_CLUSTER_LAB_URL: 'http://127.0.0.1:9' } }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = {
      'cluster.yaml': `${clusterDoc()}---\n${clusterDoc('prod').replace('100000, upper: 199999', '200000, upper: 299999')}`,
    };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, {
      ...base,
      'web.yaml': `${vmDoc('web-01', 100101)}---\n${vmDoc('web-02', 200101, {}, 'prod')}`,
    });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 6, id: 603 });
    const comment = expectNewComment(w.github, w.repo, 6, 703);
    await w.app.jobDone('plan', await open(w, 6, headSha, baseSha));
    w.github.verify();
    const body = await comment.body();
    expect(body).toMatch(/\*\*lab\*\*: cluster 'lab' could not be read: .*(ECONNREFUSED|connect)/);
    expect(body).toContain("**prod**: cluster 'prod' could not be read: no connection is configured for it");
    const result = await check.result();
    expect(result.conclusion).toBe('failure');
    expect(result.output?.summary).toMatch(/⚠️ cluster 'lab' could not be read: /);
    expect(result.output?.summary).toContain("⚠️ cluster 'prod' could not be read: no connection is configured for it");
    expect(result.output?.annotations?.map((a) => [a.path, a.start_line])).toEqual([
      ['cluster.yaml', 1],
      ['cluster.yaml', 7],
    ]);
  });

  it('plans a draft like any other pull request, labelled as a draft', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 7, id: 604 });
    const comment = expectNewComment(w.github, w.repo, 7, 704);
    await w.app.jobDone('plan', await open(w, 7, headSha, baseSha, { draft: true }));
    w.github.verify();
    const body = await comment.body();
    expect(body).toMatch(/^<!-- pve-gitops:plan -->\n### pve-gitops plan · draft pull request\n\n> 📝 \*\*Draft pull request\*\*/);
    expect(body).toContain('**1 to create**');
    expect((await check.result()).output?.summary).toContain('**1 to create** · draft pull request');
  });

  it('plans a pull request from a fork like any other, from the base repository at the head commit', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 8, id: 605 });
    expectNewComment(w.github, w.repo, 8, 705);
    await w.app.jobDone('plan', await open(w, 8, headSha, baseSha, { fork: { owner: 'mallory', name: 'estate' } }));
    w.github.verify();
    expect((await check.result()).conclusion).toBe('success');
  });

  it('names, for every guest a plan touches, the other open pull requests whose latest plan touches it, in every racing comment; a closed one no longer', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    await expectArchive(w.github, w.repo, baseSha, base);
    const heads = { 11: newSha(), 12: newSha(), 13: newSha() } as const;
    const files = (memory: number): RepoFiles => ({
      ...base,
      'web.yaml': vmDoc('web-01', 100101, { memory }),
      'db.yaml': vmDoc('db-01', 100102),
    });

    // #11 changes web-01 and db-01: nobody races with it yet.
    await expectArchive(w.github, w.repo, heads[11], files(1024));
    expectCheckRun(w.github, w.repo, { headSha: heads[11], pr: 11, id: 611 });
    const comment11 = expectNewComment(w.github, w.repo, 11, 711);
    await w.app.jobDone('plan', await open(w, 11, heads[11], baseSha));
    expect(await comment11.body()).not.toContain('Other open pull requests');

    // #12 changes web-01 too: its comment names #11, and #11's comment is edited to name #12.
    await expectArchive(w.github, w.repo, heads[12], { ...base, 'web.yaml': vmDoc('web-01', 100101, { memory: 3072 }) });
    expectCheckRun(w.github, w.repo, { headSha: heads[12], pr: 12, id: 612 });
    const comment12 = expectNewComment(w.github, w.repo, 12, 712);
    const refreshed11 = expectCommentEdit(w.github, w.repo, 711);
    await w.app.jobDone('plan', await open(w, 12, heads[12], baseSha));
    const body12 = await comment12.body();
    expect(body12).toContain('### 🔀 Other open pull requests touch these guests');
    expect(body12).toContain('| **lab/web-01** (100101) | #11 |');
    expect(body12).not.toContain('lab/db-01');
    const body11 = await refreshed11.body();
    expect(body11).toContain('| **lab/web-01** (100101) | #12 |');
    expect(body11).not.toContain('lab/db-01** (100102) |');

    // #11 closes: #12's comment no longer names it.
    const refreshed12 = expectCommentEdit(w.github, w.repo, 712);
    const closed = await w.app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({
        action: 'closed',
        installationId: w.installationId,
        repo: w.repo,
        number: 11,
        headSha: heads[11],
        baseSha,
        updatedAt: at(20),
      }),
    });
    await w.app.jobDone('closed', closed.deliveryId);
    await refreshed12.edited.done;
    expect(await refreshed12.body()).not.toContain('Other open pull requests');

    // #13 touching web-01 hears only of #12, and #12 hears of #13.
    await expectArchive(w.github, w.repo, heads[13], files(512));
    expectCheckRun(w.github, w.repo, { headSha: heads[13], pr: 13, id: 613 });
    const comment13 = expectNewComment(w.github, w.repo, 13, 713);
    const refreshedAgain12 = expectCommentEdit(w.github, w.repo, 712);
    await w.app.jobDone('plan', await open(w, 13, heads[13], baseSha));
    const body13 = await comment13.body();
    expect(body13).toContain('| **lab/web-01** (100101) | #12 |');
    expect(body13).not.toContain('#11');
    expect(await refreshedAgain12.body()).toContain('| **lab/web-01** (100101) | #13 |');
    w.github.verify();
  });

  it("retries GitHub's 5xx answers with backoff (Probot's Octokit) and posts the plan", async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    const unavailable = w.github.expect({
      method: 'POST',
      path: '/repos/acme/estate/check-runs',
      reply: { status: 502, json: { message: 'Server Error' } },
    });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 10, id: 607 });
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
    expectNewComment(w.github, w.repo, 10, 707);
    await w.app.jobDone('plan', await open(w, 10, headSha, baseSha));
    w.github.verify();
    expect((await unavailable.done).length).toBe(1);
    expect((await check.result()).conclusion).toBe('success');
  });

  it('edits the comment a lost Redis entry forgot, found by its marker among the comments', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
    expectCheckRun(w.github, w.repo, { headSha, pr: 9, id: 606 });
    // A person quoting the marker is not the App: only the bot's comment is edited.
    w.github.expect({
      method: 'GET',
      path: `/repos/acme/estate/issues/9/comments`,
      reply: {
        json: [
          { id: 81, user: { login: 'alice', type: 'User' }, body: '<!-- pve-gitops:plan --> quoted' },
          { id: 82, user: { login: 'pve-gitops[bot]', type: 'Bot' }, body: '<!-- pve-gitops:plan -->\nold plan' },
        ],
      },
    });
    const edit = expectCommentEdit(w.github, w.repo, 82);
    await w.app.jobDone('plan', await open(w, 9, headSha, baseSha));
    w.github.verify();
    expect(await edit.body()).toContain('**1 to create**');
  });
});
