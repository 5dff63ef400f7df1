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
import { api } from '../sim/helpers.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';

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

/** The writes of one pull request of `files` new blobs: blobs, tree, one commit, the branch, the pull request numbered `number`. */
function expectPullRequest(files: number, number: number) {
  const created = (path: string, json: unknown, times = 1) =>
    github.expect({ method: 'POST', path: `/repos/acme/estate/${path}`, times, reply: { status: 201, json } });
  return {
    blobs: created('git/blobs', { sha: 'b'.repeat(40) }, files),
    newTree: created('git/trees', { sha: 'c'.repeat(40) }),
    commit: created('git/commits', { sha: 'd'.repeat(40) }),
    ref: created('git/refs', { ref: 'x' }),
    pull: created('pulls', { number, html_url: `https://github.example/acme/estate/pull/${number}` }),
  };
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
    const { blobs: blob, newTree, commit, ref, pull } = expectPullRequest(1, 77);
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

  it('imports an unowned guest in range into a new spec file and takes firewall drift, in the same one-commit pull request', async () => {
    const lab = clusters.sims.lab!;
    seedGuests(lab);
    // Made by hand in the Proxmox UI: no owner tag, no spec, a firewall rule of its own.
    lab.sim.addGuest({
      vmid: 100150,
      type: 'qemu',
      node: 'pve-02',
      config: { name: 'app-07', memory: 1024, cores: 1, net0: 'virtio=BC:24:11:00:50:0A,bridge=vmbr0,firewall=1', tags: 'team-a' },
    });
    const rule = { type: 'in', action: 'ACCEPT', enable: '1', proto: 'tcp', dport: '8080', comment: 'the app' };
    expect((await api(lab, 'POST', '/nodes/pve-02/qemu/100150/firewall/rules', { form: rule })).status).toBe(200);
    // web-01's spec manages its firewall options; someone closed its inbound policy by hand.
    expect((await api(lab, 'PUT', '/nodes/pve-01/qemu/100101/firewall/options', { form: { enable: '1', policy_in: 'DROP' } })).status).toBe(
      200,
    );
    const web = WEB.replace('config:\n', 'firewall:\n  options: { enable: true }   # on since the audit\nconfig:\n');
    const files = { ...specs('adopt: on\n'), 'vms/web.yaml': web };
    const sha = newSha();
    const tree = newSha();
    expectAcceptedCommand(github, repo, 'alice', 7105);
    expectDefaultBranch(sha);
    await expectArchive(github, repo, sha, files);
    github.expect({
      method: 'GET',
      path: '/repos/acme/estate/issues/40',
      reply: { json: { number: 40, user: { type: 'Bot' }, body: '<!-- pve-gitops:drift-report content=ab12 -->' } },
    });
    github.expect({ method: 'GET', path: `/repos/acme/estate/git/commits/${sha}`, reply: { json: { sha, tree: { sha: tree } } } });
    const { blobs, newTree, commit, pull } = expectPullRequest(2, 78);
    const answer = expectReply(
      github,
      repo,
      40,
      /^@alice opened #78: it takes 1 live value into 1 spec file and imports 1 unowned guest into new spec files\./,
    );

    const asked = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 40, onIssue: true, body: '/pve adopt', author: 'alice', commentId: 7105 }),
    });
    expect(asked.status).toBe(200);
    await app.jobDone('command', asked.deliveryId);
    await answer.created.done;
    github.verify();

    const written = (await blobs.done).map((r) => (r.body as { content: string }).content);
    const paths = ((await first(newTree)).body as { tree: { path: string }[] }).tree.map((t) => t.path);
    expect(paths).toEqual(['lab/app-07.yaml', 'vms/web.yaml']);
    const byPath = Object.fromEntries(paths.map((path, i) => [path, written[i] ?? '']));
    // web-01: the option taken in place, the comment kept.
    expect(byPath['vms/web.yaml']).toBe(web.replace('{ enable: true }   #', '{ enable: true, policy_in: DROP }   #'));
    // app-07: the import's own document, its firewall rule and all.
    const imported = byPath['lab/app-07.yaml'] ?? '';
    expect(imported).toMatch(/^kind: VM\nname: app-07\ncluster: lab\nnode: pve-02\nvmid: 100150\nadopt: true\nfirewall:\n/m);
    expect(imported).toContain('  rules:\n    - {type: in, action: ACCEPT, proto: tcp, dport: 8080, comment: the app}\n');
    expect(imported).toContain('  tags: [team-a]');
    expect(imported).toMatch(/^# Imported by `\/pve adopt` \(as `pve-gitops import` writes it\) from cluster lab, VM 100150 on pve-02\.$/m);
    const merged = Object.entries({ ...files, ...byPath }).filter(([path]) => path.endsWith('.yaml'));
    expect(loadSpecs(merged.map(([path, text]) => ({ path, text }))).errors).toEqual([]);
    expect(String(((await first(commit)).body as { message: string }).message)).toMatch(
      /\nNew spec files \(imported, as `pve-gitops import` writes them\):\n {2}lab\/app-07 \(lab\/app-07\.yaml\)/,
    );
    const pr = (await first(pull)).body as { title: string; body: string };
    expect(pr.title).toBe('Adopt drift from the drift report (#40): 2 guests and objects');
    expect(pr.body).toContain('- `lab/app-07` in `lab/app-07.yaml`');
    expect(pr.body).toContain('**lab/firewall web-01 (vms/web.yaml)**\n\n- `firewall.options.policy_in`: (not set) → `DROP`');
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
