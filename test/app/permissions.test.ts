/**
 * Least privilege: the App's installation is granted exactly app.yml's permissions (the GitHub
 * double refuses, as GitHub does, any call they do not cover), and no permission of app.yml is
 * wider than what a pull request's plan and a `/pve plan` command use — lowering any one of them
 * refuses one of the calls made — once the two writes only `/pve adopt` needs are taken back to read and the deployments only an
 * apply writes (and an installation may leave out: test/app/deployments.test.ts) are left out.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { startClusters, type TestClusters } from './clusters.js';
import { issueCommentEvent, pullRequestEvent, type TestRepo } from './deliveries.js';
import { GitHubDouble, grants, type InstallationPermissions, manifestPermissions } from './github-double.js';
import { startTestApp, type TestApp } from './harness.js';
import { expectAcceptedCommand, expectArchive, expectCheckRun, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, vmDoc } from './spec-repo.js';

let github: GitHubDouble;
let clusters: TestClusters;
let app: TestApp;

beforeEach(async () => {
  github = await GitHubDouble.start();
  clusters = await startClusters({ lab: {} });
  app = await startTestApp({ github, redisUrl: inject('redisUrl'), env: { ...clusters.env, WORKER_CONCURRENCY: '1' } });
});

afterEach(async () => {
  await app.close();
  await clusters.close();
  await github.close();
});

/** `permissions` with one permission a level lower: write → read, read → none. */
function lowered(permissions: InstallationPermissions, name: string): InstallationPermissions {
  const { [name]: level, ...rest } = permissions;
  return level === 'write' ? { ...rest, [name]: 'read' } : rest;
}

describe('the permissions of app.yml', () => {
  it('cover every call of a plan and a command, and none is wider than those calls need', async () => {
    const repo: TestRepo = { id: 1_000_000 + randomBytes(3).readUIntBE(0, 3), owner: 'acme', name: 'estate' };
    const installationId = 1 + randomBytes(3).readUIntBE(0, 3);
    const baseSha = newSha();
    const headSha = newSha();
    const pr = 5;
    const updatedAt = '2030-01-01T00:00:01Z';

    await expectArchive(github, repo, baseSha, { 'cluster.yaml': clusterDoc() });
    await expectArchive(github, repo, headSha, { 'cluster.yaml': clusterDoc(), 'vms/web.yaml': vmDoc('web-01', 100101) });
    const check = expectCheckRun(github, repo, { headSha, pr, id: 601 });
    const comment = expectNewComment(github, repo, pr, 801);
    const push = await app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({ action: 'opened', installationId, repo, number: pr, headSha, baseSha, updatedAt }),
    });
    await app.jobDone('plan', push.deliveryId);
    expect(await comment.body()).toContain('**1 to create**');
    expect((await check.result()).conclusion).toBe('success');

    expectAcceptedCommand(github, repo, 'alice', 4343);
    github.expect({
      method: 'GET',
      path: `/repos/acme/estate/pulls/${pr}`,
      reply: { json: { number: pr, state: 'open', draft: false, updated_at: updatedAt, head: { sha: headSha }, base: { sha: baseSha } } },
    });
    const replan = expectCheckRun(github, repo, { headSha, pr, id: 602 });
    const command = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: pr, body: '/pve plan', author: 'alice', commentId: 4343 }),
    });
    await app.jobDone('command', command.deliveryId);
    expect((await replan.result()).conclusion).toBe('success');
    github.verify();

    const granted = manifestPermissions();
    const calls = github.checked;
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual(
      expect.arrayContaining([
        `GET /repos/acme/estate/tarball/${headSha}`,
        'POST /repos/acme/estate/check-runs',
        `POST /repos/acme/estate/issues/${pr}/comments`,
        'POST /repos/acme/estate/issues/comments/4343/reactions',
        `GET /repos/acme/estate/pulls/${pr}`,
        'GET /repos/acme/estate/collaborators/alice/permission',
      ]),
    );
    // app.yml grants write on contents and pull requests for `/pve adopt` only (off unless a
    // repository turns it on; test/app/adopt.test.ts shows its calls refused at read). Without it,
    // an installation granted them at read runs every plan and command, and nothing is wider.
    // Deployments likewise are written only by the apply, and an installation without them is
    // told once and its applies go on (test/app/deployments.test.ts): the permission is not needed here.
    expect(granted).toMatchObject({ contents: 'write', pull_requests: 'write', deployments: 'write' });
    const { deployments: _deployments, ...withoutDeployments } = granted;
    const readOnly: InstallationPermissions = { ...withoutDeployments, contents: 'read', pull_requests: 'read' };
    expect(calls.filter((call) => !call.anyOf.some((grant) => grants(readOnly, grant)))).toEqual([]);
    const wider = Object.keys(readOnly).filter((name) => {
      const less = lowered(readOnly, name);
      return calls.every((call) => call.anyOf.some((grant) => grants(less, grant)));
    });
    expect(wider.map((name) => `${name}: ${readOnly[name]}`)).toEqual([]);
  });
});
