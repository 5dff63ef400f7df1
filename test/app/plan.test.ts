import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { startClusters, type TestClusters } from './clusters.js';
import { issueCommentEvent, pullRequestEvent, type TestRepo } from './deliveries.js';
import { GitHubDouble } from './github-double.js';
import { startTestApp, type TestApp } from './harness.js';
import { expectAcceptedCommand, expectArchive, expectCheckRun, expectCommentEdit, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';

let github: GitHubDouble;
let clusters: TestClusters;
let app: TestApp;
let repo: TestRepo;
let installationId: number;

beforeEach(async () => {
  github = await GitHubDouble.start();
  clusters = await startClusters({ lab: {} });
  app = await startTestApp({ github, redisUrl: inject('redisUrl'), env: { ...clusters.env, WORKER_CONCURRENCY: '1' } });
  repo = { id: 1_000_000 + randomBytes(3).readUIntBE(0, 3), owner: 'acme', name: 'estate' };
  // Probot's throttling groups requests by installation across the process: one per test.
  installationId = 1 + randomBytes(3).readUIntBE(0, 3);
});

afterEach(async () => {
  await app.close();
  await clusters.close();
  await github.close();
});

/** `updated_at` of the n-th push of a test: increasing seconds. */
function at(n: number): string {
  return new Date(Date.UTC(2030, 0, 1, 0, 0, n)).toISOString().replace('.000Z', 'Z');
}

const base: RepoFiles = { 'cluster.yaml': clusterDoc() };

describe('the plan of a pull request', () => {
  it('a first push creates the comment and the check run; a second push edits the same comment; an unchanged re-plan edits nothing', async () => {
    const baseSha = newSha();
    const head1 = newSha();
    const head2 = newSha();
    const pr = 3;

    // First push: both archives, a check run, a new comment.
    await expectArchive(github, repo, baseSha, base);
    await expectArchive(github, repo, head1, { ...base, 'vms/web.yaml': vmDoc('web-01', 100101) });
    const check1 = expectCheckRun(github, repo, { headSha: head1, pr, id: 501 });
    const comment = expectNewComment(github, repo, pr, 777);
    const first = await app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({ action: 'opened', installationId, repo, number: pr, headSha: head1, baseSha, updatedAt: at(1) }),
    });
    expect(first.status).toBe(200);
    await app.jobDone('plan', first.deliveryId);
    github.verify();
    const body1 = await comment.body();
    expect(body1).toMatch(/^<!-- pve-gitops:plan -->\n### pve-gitops plan\n/);
    expect(body1).toContain('**1 to create**');
    expect(body1).toContain('**lab/web-01** (100101)');
    expect(body1).toContain(`planned for ${head1.slice(0, 7)} against base ${baseSha.slice(0, 7)}`);
    const result1 = await check1.result();
    expect(result1).toMatchObject({ status: 'completed', conclusion: 'success', output: { title: '1 to create' } });

    // Second push: only the head's archive (the base was read already), the same comment edited.
    await expectArchive(github, repo, head2, { ...base, 'vms/web.yaml': vmDoc('web-01', 100101, { memory: 4096 }) });
    const check2 = expectCheckRun(github, repo, { headSha: head2, pr, id: 502 });
    const edit = expectCommentEdit(github, repo, 777);
    const second = await app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({ action: 'synchronize', installationId, repo, number: pr, headSha: head2, baseSha, updatedAt: at(2) }),
    });
    await app.jobDone('plan', second.deliveryId);
    github.verify();
    expect(await edit.body()).toContain('`4096`');
    expect((await check2.result()).conclusion).toBe('success');

    // `/pve plan` on the same head: a new check run, no archive, and no comment request at all.
    expectAcceptedCommand(github, repo, 'alice', 4242);
    github.expect({
      method: 'GET',
      path: `/repos/acme/estate/pulls/${pr}`,
      reply: { json: { number: pr, state: 'open', draft: false, updated_at: at(3), head: { sha: head2 }, base: { sha: baseSha } } },
    });
    const check3 = expectCheckRun(github, repo, { headSha: head2, pr, id: 503 });
    const replan = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: pr, body: '/pve plan', author: 'alice', commentId: 4242 }),
    });
    await app.jobDone('command', replan.deliveryId);
    github.verify();
    expect((await check3.result()).conclusion).toBe('success');
  });
});
