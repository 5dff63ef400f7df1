import { afterEach, describe, expect, inject, it } from 'vitest';
import { issueCommentEvent, pullRequestEvent } from './deliveries.js';
import { expectAcceptedCommand, expectArchive, expectCheckRun, expectCommentEdit, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { at, openPullRequest, startWorld, type World } from './world.js';

let world: World | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

const SECRET = 'vault-token-7f3a9c';
const HIDDEN_IP = '10.9.8.7';

/** Two guests nobody's specs own (no owner tag, outside the base range) and one the base owns. */
const guests = [
  {
    vmid: 200001,
    type: 'qemu' as const,
    node: 'pve-01',
    config: `description: ${SECRET}\nname: db-01\nmemory: 8192\ncores: 4\nipconfig0: ip=${HIDDEN_IP}/24,gw=10.9.8.1\nnet0: virtio=BC:24:11:00:00:01,bridge=vmbr0\n`,
  },
  {
    vmid: 200002,
    type: 'qemu' as const,
    node: 'pve-02',
    config: `description: ${SECRET}-2\nname: db-02\nmemory: 6144\ncores: 2\nnet0: virtio=BC:24:11:00:00:02,bridge=vmbr0\n`,
  },
  {
    vmid: 100101,
    type: 'qemu' as const,
    node: 'pve-01',
    config: 'name: web-01\nmemory: 1536\ncores: 2\nnet0: virtio=BC:24:11:00:00:03,bridge=vmbr0\ntags: pve-gitops\n',
  },
];

function adopting(name: string, vmid: number): string {
  return vmDoc(name, vmid).replace('config:', 'adopt: true\nconfig:');
}

describe('a pull request that claims guests the base branch does not own', () => {
  it('shows which keys an adoption would change but none of their live values, in the comment, the check run and its annotations', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: { fixture: { guests } } } }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'web.yaml': vmDoc('web-01', 100101) };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, {
      // The head widens its own range to reach the two guests, and adopts them.
      'cluster.yaml': clusterDoc().replace('upper: 199999', 'upper: 299999'),
      'web.yaml': vmDoc('web-01', 100101, { memory: 4096 }),
      'db.yaml': `${adopting('db-01', 200001)}---\n${adopting('db-02', 200002)}`,
    });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 21, id: 2101 });
    const comment = expectNewComment(w.github, w.repo, 21, 2201);
    await w.app.jobDone('plan', await openPullRequest(w, 21, headSha, baseSha, { fork: { owner: 'mallory', name: 'estate' } }));
    w.github.verify();

    const body = await comment.body();
    const result = await check.result();
    const shown = [body, JSON.stringify(result)];
    for (const text of shown) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(HIDDEN_IP);
      expect(text).not.toContain('8192');
      expect(text).not.toContain('BC:24:11:00:00:01');
    }
    // What would happen is still there: both adoptions, the keys they change, the values the spec sets.
    expect(body).toContain('**lab/db-01** (200001)');
    expect(body).toContain('**lab/db-02** (200002)');
    expect(body).toMatch(/\| `description` \| \*\(live value withheld: not owned by the base branch\)\* \| \*\(deleted\)\* \|/);
    expect(body).toMatch(/\| `memory` \| \*\(live value withheld: not owned by the base branch\)\* \| `2048` \|/);
    expect(body).toContain('the base branch does not own this guest');
    // The guest the base branch owns is planned with its live values, as always.
    expect(body).toMatch(/\| `memory` \| `1536` \| `4096` \|/);
  });

  it('keeps them withheld when the comment is rendered again from the stored plan (another pull request races for the guest)', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: { fixture: { guests } } } }));
    const baseSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'web.yaml': vmDoc('web-01', 100101) };
    await expectArchive(w.github, w.repo, baseSha, base);
    const claims = (memory: number): RepoFiles => ({
      ...base,
      'cluster.yaml': clusterDoc().replace('upper: 199999', 'upper: 299999'),
      'db.yaml': adopting('db-01', 200001).replace('memory: 2048', `memory: ${memory}`),
    });
    const [first, second] = [newSha(), newSha()];
    await expectArchive(w.github, w.repo, first, claims(2048));
    expectCheckRun(w.github, w.repo, { headSha: first, pr: 22, id: 2102 });
    const comment22 = expectNewComment(w.github, w.repo, 22, 2202);
    await w.app.jobDone('plan', await openPullRequest(w, 22, first, baseSha, { fork: { owner: 'mallory', name: 'estate' } }));
    expect(await comment22.body()).not.toContain(SECRET);

    // #23 claims db-01 too: #22's comment is rendered again, from its stored plan, to name #23.
    await expectArchive(w.github, w.repo, second, claims(3072));
    expectCheckRun(w.github, w.repo, { headSha: second, pr: 23, id: 2103 });
    expectNewComment(w.github, w.repo, 23, 2203);
    const refreshed = expectCommentEdit(w.github, w.repo, 2202);
    await w.app.jobDone('plan', await openPullRequest(w, 23, second, baseSha));
    const body = await refreshed.body();
    w.github.verify();
    expect(body).toContain('| **lab/db-01** (200001) | #23 |');
    expect(body).not.toContain(SECRET);
    expect(body).not.toContain(HIDDEN_IP);
    expect(body).toContain('*(live value withheld: not owned by the base branch)*');
  });

  it('keeps them withheld when an unchanged head is posted again from the stored plan (a draft marked ready)', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), clusters: { lab: { fixture: { guests } } } }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'web.yaml': vmDoc('web-01', 100101) };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, {
      ...base,
      'cluster.yaml': clusterDoc().replace('upper: 199999', 'upper: 299999'),
      'db.yaml': adopting('db-01', 200001),
    });
    const fork = { owner: 'mallory', name: 'estate' };
    expectCheckRun(w.github, w.repo, { headSha, pr: 24, id: 2104 });
    const comment = expectNewComment(w.github, w.repo, 24, 2205);
    await w.app.jobDone('plan', await openPullRequest(w, 24, headSha, baseSha, { fork, draft: true }));
    expect(await comment.body()).not.toContain(SECRET);

    // Marked ready: nothing is planned, the comment is rendered again from the stored plan.
    const ready = expectCommentEdit(w.github, w.repo, 2205);
    const result = await w.app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({
        action: 'ready_for_review',
        installationId: w.installationId,
        repo: w.repo,
        number: 24,
        headSha,
        baseSha,
        fork,
        updatedAt: at(25),
      }),
    });
    expect(result.status).toBe(200);
    await w.app.jobDone('plan', result.deliveryId);
    const body = await ready.body();
    w.github.verify();
    expect(body).not.toContain('Draft pull request');
    expect(body).not.toContain(SECRET);
    expect(body).not.toContain(HIDDEN_IP);
    expect(body).not.toContain('8192');
    expect(body).toContain('*(live value withheld: not owned by the base branch)*');
  });
});

describe('a repository whose config says `forks: on-command`', () => {
  const base: RepoFiles = { '.github/pve-gitops.yml': 'forks: on-command\n', 'cluster.yaml': clusterDoc() };
  const head: RepoFiles = { ...base, 'web.yaml': vmDoc('web-01', 100101) };

  it("does not plan a fork's push until a writer's /pve plan: the head is not read, no cluster is asked, the comment says why", async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const sim = w.clusters.sims.lab!;
    const [baseSha, headSha] = [newSha(), newSha()];
    await expectArchive(w.github, w.repo, baseSha, base);
    const waiting = expectNewComment(w.github, w.repo, 24, 2204);
    await w.app.jobDone('plan', await openPullRequest(w, 24, headSha, baseSha, { fork: { owner: 'mallory', name: 'estate' } }));
    w.github.verify();
    expect(await waiting.body()).toContain('**⏸️ Not planned yet: this pull request comes from a fork**');
    expect(sim.sim.stats().requests.total).toBe(0);

    // A writer read the change and asks: now it is planned, and the comment becomes the plan.
    expectAcceptedCommand(w.github, w.repo, 'alice', 777);
    w.github.expect({
      method: 'GET',
      path: `/repos/acme/estate/pulls/24`,
      reply: { json: { number: 24, state: 'open', draft: false, updated_at: at(30), head: { sha: headSha }, base: { sha: baseSha } } },
    });
    await expectArchive(w.github, w.repo, headSha, head);
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 24, id: 2104 });
    const planned = expectCommentEdit(w.github, w.repo, 2204);
    const command = await w.app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({
        installationId: w.installationId,
        repo: w.repo,
        number: 24,
        body: '/pve plan',
        author: 'alice',
        commentId: 777,
      }),
    });
    await w.app.jobDone('command', command.deliveryId);
    w.github.verify();
    expect((await check.result()).output?.title).toBe('1 to create');
    expect(await planned.body()).toContain('**1 to create**');
  });

  it('plans a push of a branch of the repository itself as usual', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const [baseSha, headSha] = [newSha(), newSha()];
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, head);
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 25, id: 2105 });
    expectNewComment(w.github, w.repo, 25, 2205);
    await w.app.jobDone('plan', await openPullRequest(w, 25, headSha, baseSha));
    w.github.verify();
    expect((await check.result()).output?.title).toBe('1 to create');
  });
});
