/**
 * `/pve adopt` through the App: signed `issue_comment` deliveries on the drift report issue, the
 * GitHub double (which refuses calls beyond app.yml's permissions), real Redis and a real
 * simulator. A writer's command on a repository that turned it on opens a pull request whose one
 * commit writes the live values into the spec file with its comments kept; a reader is refused;
 * a repository that has not turned it on is told how.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { startClusters, type TestClusters } from './clusters.js';
import { issueCommentEvent, type TestRepo } from './deliveries.js';
import { RATE_LIMIT_HEADERS, seedGuests } from './drift-flow.js';
import { GitHubDouble, grants, type InstallationPermissions, manifestPermissions, type RecordedRequest } from './github-double.js';
import { startTestApp, type TestApp } from './harness.js';
import { expectAcceptedCommand, expectArchive, expectReply } from './plan-flow.js';
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

/** web-01's spec, with the comments a person wrote. */
const WEB = [
  '# The shop front. Sized with the web team: ask them before changing it.',
  'kind: VM',
  'name: web-01',
  'cluster: lab',
  'node: pve-01',
  'vmid: 100101',
  'config:',
  '  memory: 2048   # the team raises this in the GUI during sales',
  '  cores: 2',
  '  net0: virtio,bridge=vmbr0',
  '',
].join('\n');

function specs(config: string): RepoFiles {
  return {
    '.github/pve-gitops.yml': config,
    'cluster.yaml': clusterDoc('lab'),
    'vms/web.yaml': WEB,
    'vms/db.yaml': vmDoc('db-01', 100102),
  };
}

/** The default branch as the worker asks for it: the repository, then its newest commit. */
function expectDefaultBranch(sha: string): void {
  github.expect({ method: 'GET', path: '/repos/acme/estate', reply: { json: { id: repo.id, default_branch: 'main' } } });
  github.expect({
    method: 'GET',
    path: '/repos/acme/estate/commits',
    query: { sha: 'main', per_page: '1' },
    reply: { json: [{ sha }], headers: RATE_LIMIT_HEADERS },
  });
}

/** The first request an expectation took, by its handle's `done`. */
async function first(handle: { done: Promise<RecordedRequest[]> }): Promise<RecordedRequest> {
  const [request] = await handle.done;
  if (!request) throw new Error('no request');
  return request;
}

function lowered(permissions: InstallationPermissions, name: string): InstallationPermissions {
  return { ...permissions, [name]: 'read' };
}

describe('/pve adopt on the drift report issue', () => {
  it('from a writer, turned on: one commit on a branch named after the report, comments kept, and a pull request', async () => {
    const lab = clusters.sims.lab!;
    seedGuests(lab);
    lab.sim.operatorEdit(100101, { set: { memory: 4096, cores: 4 } });
    const sha = newSha();
    const tree = newSha();

    expectAcceptedCommand(github, repo, 'alice', 7101);
    expectDefaultBranch(sha);
    await expectArchive(github, repo, sha, specs('adopt: on\n'));
    github.expect({
      method: 'GET',
      path: '/repos/acme/estate/issues/40',
      reply: {
        json: {
          number: 40,
          user: { login: 'pve-gitops[bot]', type: 'Bot' },
          body: '<!-- pve-gitops:drift-report content=ab12 -->\n### pve-gitops drift report',
        },
      },
    });
    github.expect({ method: 'GET', path: `/repos/acme/estate/git/commits/${sha}`, reply: { json: { sha, tree: { sha: tree } } } });
    const blob = github.expect({
      method: 'POST',
      path: '/repos/acme/estate/git/blobs',
      reply: { status: 201, json: { sha: 'b'.repeat(40) } },
    });
    const newTree = github.expect({
      method: 'POST',
      path: '/repos/acme/estate/git/trees',
      reply: { status: 201, json: { sha: 'c'.repeat(40) } },
    });
    const commit = github.expect({
      method: 'POST',
      path: '/repos/acme/estate/git/commits',
      reply: { status: 201, json: { sha: 'd'.repeat(40) } },
    });
    const ref = github.expect({ method: 'POST', path: '/repos/acme/estate/git/refs', reply: { status: 201, json: { ref: 'x' } } });
    const pull = github.expect({
      method: 'POST',
      path: '/repos/acme/estate/pulls',
      reply: { status: 201, json: { number: 77, html_url: 'https://github.example/acme/estate/pull/77' } },
    });
    const answer = expectReply(github, repo, 40, /^@alice opened #77: it takes 1 live value into 1 spec file\./);

    const asked = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({
        installationId,
        repo,
        number: 40,
        onIssue: true,
        body: '/pve adopt lab/web-01 memory',
        author: 'alice',
        commentId: 7101,
      }),
    });
    expect(asked.status).toBe(200);
    await app.jobDone('command', asked.deliveryId);
    await answer.created.done;
    github.verify();

    // The file, edited in place: only memory's value changed (cores was not asked for).
    const content = ((await first(blob)).body as { content: string; encoding: string }).content;
    expect(content).toBe(WEB.replace('  memory: 2048   #', '  memory: 4096   #'));
    expect((await first(newTree)).body).toEqual({
      base_tree: tree,
      tree: [{ path: 'vms/web.yaml', mode: '100644', type: 'blob', sha: 'b'.repeat(40) }],
    });
    // ONE commit, on the default branch's head, on the report's branch.
    expect(commit.requests).toHaveLength(1);
    expect((await first(commit)).body).toMatchObject({ tree: 'c'.repeat(40), parents: [sha] });
    expect(String(((await first(commit)).body as { message: string }).message)).toMatch(
      /^Adopt drift from the drift report #40\n\nlab\/web-01 \(vms\/web\.yaml\)\n {2}memory: 2048 → 4096\n/,
    );
    expect((await first(ref)).body).toEqual({ ref: 'refs/heads/pve-gitops/drift-report-40-adopt-7101', sha: 'd'.repeat(40) });
    const pr = (await first(pull)).body as { head: string; base: string; title: string; body: string };
    expect(pr).toMatchObject({
      head: 'pve-gitops/drift-report-40-adopt-7101',
      base: 'main',
      title: 'Adopt drift from the drift report (#40): lab/web-01',
    });
    expect(pr.body).toContain('**lab/web-01 (vms/web.yaml)**');
    expect(pr.body).toContain('- `memory`: `2048` → `4096`');
    expect(pr.body).not.toContain('cores');

    // What app.yml grants is what these calls need: at read, contents and pull requests would refuse them.
    const granted = manifestPermissions();
    const refusedWith = (name: string): string[] =>
      github.checked
        .filter((call) => !call.anyOf.some((grant) => grants(lowered(granted, name), grant)))
        .map((call) => `${call.method} ${call.path}`);
    expect(refusedWith('contents')).toEqual([
      'POST /repos/acme/estate/git/blobs',
      'POST /repos/acme/estate/git/trees',
      'POST /repos/acme/estate/git/commits',
      'POST /repos/acme/estate/git/refs',
    ]);
    expect(refusedWith('pull_requests')).toEqual(['POST /repos/acme/estate/pulls']);
  });

  it('after an attempt that made the branch and the pull request: moves its own branch and answers with that pull request', async () => {
    const lab = clusters.sims.lab!;
    seedGuests(lab);
    lab.sim.operatorEdit(100101, { set: { memory: 4096 } });
    const sha = newSha();
    expectAcceptedCommand(github, repo, 'alice', 7103);
    expectDefaultBranch(sha);
    await expectArchive(github, repo, sha, specs('adopt: true\n'));
    github.expect({
      method: 'GET',
      path: '/repos/acme/estate/issues/40',
      reply: { json: { number: 40, user: { type: 'Bot' }, body: '<!-- pve-gitops:drift-report content=ab12 -->' } },
    });
    github.expect({ method: 'GET', path: `/repos/acme/estate/git/commits/${sha}`, reply: { json: { sha, tree: { sha: newSha() } } } });
    github.expect({ method: 'POST', path: '/repos/acme/estate/git/blobs', reply: { status: 201, json: { sha: 'b'.repeat(40) } } });
    github.expect({ method: 'POST', path: '/repos/acme/estate/git/trees', reply: { status: 201, json: { sha: 'c'.repeat(40) } } });
    github.expect({ method: 'POST', path: '/repos/acme/estate/git/commits', reply: { status: 201, json: { sha: 'e'.repeat(40) } } });
    github.expect({
      method: 'POST',
      path: '/repos/acme/estate/git/refs',
      reply: { status: 422, json: { message: 'Reference already exists' } },
    });
    const moved = github.expect({
      method: 'PATCH',
      // Octokit sends the ref with its slashes encoded; GitHub reads them as slashes.
      path: /^\/repos\/acme\/estate\/git\/refs\/heads(\/|%2F)pve-gitops(\/|%2F)drift-report-40-adopt-7103$/,
      reply: { json: { ref: 'refs/heads/pve-gitops/drift-report-40-adopt-7103' } },
    });
    github.expect({
      method: 'POST',
      path: '/repos/acme/estate/pulls',
      reply: {
        status: 422,
        json: {
          message: 'Validation Failed',
          errors: [{ message: 'A pull request already exists for acme:pve-gitops/drift-report-40-adopt-7103.' }],
        },
      },
    });
    github.expect({
      method: 'GET',
      path: '/repos/acme/estate/pulls',
      query: { head: 'acme:pve-gitops/drift-report-40-adopt-7103', state: 'open' },
      reply: { json: [{ number: 78, html_url: 'https://github.example/acme/estate/pull/78' }] },
    });
    const answer = expectReply(github, repo, 40, /^@alice opened #78: it takes 1 live value into 1 spec file\./);
    const asked = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 40, onIssue: true, body: '/pve adopt', author: 'alice', commentId: 7103 }),
    });
    await app.jobDone('command', asked.deliveryId);
    await answer.created.done;
    github.verify();
    expect((await first(moved)).body).toEqual({ sha: 'e'.repeat(40), force: true });
  });

  it('from a reader: refused, and nothing is read or written', async () => {
    github.expect({
      method: 'GET',
      path: '/repos/acme/estate/collaborators/mallory/permission',
      reply: { json: { permission: 'read', role_name: 'read' } },
    });
    const refusal = expectReply(
      github,
      repo,
      40,
      /`\/pve adopt` was not run: pve-gitops commands need write, maintain or admin permission/,
    );
    const asked = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 40, onIssue: true, body: '/pve adopt', author: 'mallory' }),
    });
    await app.jobDone('command', asked.deliveryId);
    await refusal.created.done;
    github.verify();
    expect(github.calls().filter((call) => call.includes('/git/') || call.endsWith('/pulls'))).toEqual([]);
  });

  it('when the repository has not turned it on: says how, and opens nothing', async () => {
    const lab = clusters.sims.lab!;
    seedGuests(lab);
    lab.sim.operatorEdit(100101, { set: { memory: 4096 } });
    const sha = newSha();
    expectAcceptedCommand(github, repo, 'alice', 7102);
    expectDefaultBranch(sha);
    await expectArchive(github, repo, sha, specs('forks: plan\n'));
    const off = expectReply(
      github,
      repo,
      40,
      /^@alice `\/pve adopt` is off for this repository: .*Add `adopt: on` to `\.github\/pve-gitops\.yml`/,
    );
    const asked = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 40, onIssue: true, body: '/pve adopt', author: 'alice', commentId: 7102 }),
    });
    await app.jobDone('command', asked.deliveryId);
    await off.created.done;
    github.verify();
    expect(github.calls().filter((call) => call.includes('/git/') || call.endsWith('/pulls'))).toEqual([]);
  });
});
