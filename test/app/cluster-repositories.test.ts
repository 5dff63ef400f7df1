import { afterEach, describe, expect, inject, it } from 'vitest';
import { expectApplyCheckRun, expectApplyComment, finishedComment } from './apply-flow.js';
import { type ApplyWorld, ownedGuest, startApplyWorld } from './apply-world.js';
import { expectArchive, expectCheckRun, expectNewComment } from './plan-flow.js';
import { rawConfig } from './sim-writes.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { openPullRequest, startWorld, type World } from './world.js';

let world: World | ApplyWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

const REFUSAL =
  "repository acme/estate may not use cluster 'lab': the server's PVE_CLUSTER_LAB_REPOSITORIES (or repositories: in the connections file) does not name it";
/** As markdown shows it: underscores escaped. */
const REFUSAL_MD = REFUSAL.replaceAll('_', '\\_');

describe('which repositories may use which clusters', () => {
  it("a pull request of a repository the cluster's mapping does not name cannot plan there: the plan error names the cluster and the setting, and the cluster is not read", async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), env: { PVE_CLUSTER_LAB_REPOSITORIES: 'acme/platform,ops/*' } }));
    const sim = w.clusters.sims.lab!;
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 31, id: 3101 });
    const comment = expectNewComment(w.github, w.repo, 31, 3201);
    await w.app.jobDone('plan', await openPullRequest(w, 31, headSha, baseSha));
    w.github.verify();

    expect(await comment.body()).toContain(`**lab**: cluster 'lab' could not be read: ${REFUSAL_MD}`);
    const result = await check.result();
    expect(result.conclusion).toBe('failure');
    expect(result.output?.summary).toContain(`⚠️ cluster 'lab' could not be read: ${REFUSAL_MD}`);
    expect(sim.sim.stats().requests.total).toBe(0);
  });

  it('a repository the mapping names (case aside) plans as usual', async () => {
    const w = (world = await startWorld({
      redisUrl: inject('redisUrl'),
      env: { PVE_CLUSTER_LAB_REPOSITORIES: 'acme/platform, ACME/Estate' },
    }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 32, id: 3102 });
    expectNewComment(w.github, w.repo, 32, 3202);
    await w.app.jobDone('plan', await openPullRequest(w, 32, headSha, baseSha));
    w.github.verify();
    expect((await check.result()).output?.title).toBe('1 to create');
  });

  it('an apply for a repository the mapping does not name is refused: nothing is written, the guest fails saying why', async () => {
    const X = 100801;
    const w = (world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(X, 'app-01')],
      env: { PVE_CLUSTER_LAB_REPOSITORIES: 'acme/platform' },
    }));
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/app.yaml': vmDoc('app-01', X) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    // A plan stored before the server's mapping changed (or by anything else): the apply asks again.
    await w.storePlan({ baseSha, base, pr: 33, headSha, head: { ...base, 'vms/app.yaml': vmDoc('app-01', X, { memory: 4096 }) } });
    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 3103 });
    const comment = expectApplyComment(w.github, w.repo, { pr: 33, id: 3203 });
    await w.merge({ number: 33, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'failure' });
    const body = await comment.until(finishedComment);
    expect(body).toContain(REFUSAL_MD);
    expect(sim.sim.stats().writes.total).toBe(0);
    expect(rawConfig(sim, X)).toContain('memory: 2048');
    w.github.verify();
  });

  it.each([
    ['warns, naming the cluster and the setting, when no mapping limits it', {}, true],
    ['says nothing once the mapping names the repositories', { PVE_CLUSTER_LAB_REPOSITORIES: 'acme/a,acme/b' }, false],
  ])('with two repositories installed, the sync of the installations %s', async (_, env, warned) => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), env: { DRIFT_INTERVAL: '1h', ...env }, role: 'all' }));
    w.github.expect({
      method: 'GET',
      path: '/app/installations',
      reply: { json: [{ id: w.installationId, account: { login: 'acme' }, suspended_at: null }] },
    });
    const repos = [
      { id: w.repo.id, name: 'a', owner: { login: 'acme' }, archived: false },
      { id: w.repo.id + 1, name: 'b', owner: { login: 'acme' }, archived: false },
    ];
    w.github.expect({ method: 'GET', path: '/installation/repositories', reply: { json: { total_count: 2, repositories: repos } } });
    // Each new schedule runs at once; both repositories are empty.
    for (const name of ['a', 'b']) {
      w.github.expect({
        method: 'GET',
        path: `/repos/acme/${name}/commits`,
        reply: { status: 409, json: { message: 'Git Repository is empty.' } },
      });
    }
    await w.app.driftCompleted((job) => job.name === 'sync');
    for (const repo of repos) await w.app.driftCompleted((job) => job.name === 'drift' && job.data.repo?.id === repo.id);
    w.github.verify();
    const warnings = w.app
      .logs()
      .split('\n')
      .filter((line) => line.includes('every installed repository may plan and apply on this cluster'));
    expect(warnings.length).toBe(warned ? 1 : 0);
    if (warned)
      expect(JSON.parse(warnings[0]!)).toMatchObject({ cluster: 'lab', repositories: 2, setting: 'PVE_CLUSTER_LAB_REPOSITORIES' });
  });
});
