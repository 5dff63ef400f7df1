/**
 * What planning costs: a head already planned and posted against its base is not planned again
 * by the next delivery that names it, and pull requests racing for one guest cost refreshes of
 * their comments in proportion to their number, not to its square. Through the App: signed
 * deliveries, the GitHub test double, the real Redis, the simulator counting its requests.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { startTestApp, type TestApp } from './harness.js';
import { pullRequestEvent } from './deliveries.js';
import { expectArchive, expectCheckRun, expectCommentEdit, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, tarball, vmDoc } from './spec-repo.js';
import { at, startWorld, type World } from './world.js';

let world: World | undefined;
let worker: TestApp | undefined;

afterEach(async (context) => {
  if (context.task.result?.state === 'fail' && worker) {
    console.error(
      worker
        .logs()
        .split('\n')
        .filter((line) => /"level":(40|50|60)/.test(line))
        .slice(-10)
        .join('\n'),
    );
  }
  await worker?.close();
  await world?.close();
  world = undefined;
  worker = undefined;
});

const base: RepoFiles = { 'cluster.yaml': clusterDoc() };

type Action = 'opened' | 'reopened' | 'ready_for_review' | 'synchronize';

async function deliver(w: World, pr: number, action: Action, shas: { headSha: string; baseSha: string }, n: number, draft = false) {
  const result = await w.app.deliver({
    event: 'pull_request',
    payload: pullRequestEvent({ action, installationId: w.installationId, repo: w.repo, number: pr, ...shas, draft, updatedAt: at(n) }),
  });
  expect(result.status).toBe(200);
  return result.deliveryId;
}

describe('planning once', () => {
  it('opened, reopened, ready_for_review and synchronize of one head plan it once: one check run, one cluster read; ready only edits the draft label away', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const sim = w.clusters.sims.lab!;
    const shas = { headSha: newSha(), baseSha: newSha() };
    await expectArchive(w.github, w.repo, shas.baseSha, base);
    await expectArchive(w.github, w.repo, shas.headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
    expectCheckRun(w.github, w.repo, { headSha: shas.headSha, pr: 5, id: 1501 });
    const comment = expectNewComment(w.github, w.repo, 5, 1601);
    await w.app.jobDone('plan', await deliver(w, 5, 'opened', shas, 1, true));
    expect(await comment.body()).toContain('**Draft pull request**');
    await w.app.jobDone('plan', await deliver(w, 5, 'reopened', shas, 2, true));
    w.github.verify();

    // Marked ready: the comment loses its draft label, from the posted plan; nothing is planned.
    const ready = expectCommentEdit(w.github, w.repo, 1601);
    await w.app.jobDone('plan', await deliver(w, 5, 'ready_for_review', shas, 3));
    const body = await ready.body();
    expect(body).not.toContain('Draft pull request');
    expect(body).toContain('**1 to create**');
    await w.app.jobDone('plan', await deliver(w, 5, 'synchronize', shas, 4));
    w.github.verify();
    // One listing of the guests; the rehearsal's storage facts are a `type=storage` read of their own.
    const listings = sim.sim.statsCollector.requests().filter((r) => r.route === 'GET /cluster/resources' && r.params.type !== 'storage');
    expect(listings).toHaveLength(1);
    expect(w.app.logs().match(/not planned again/g)).toHaveLength(3);
  });

  it('60 pull requests racing for one guest cost refreshes of their comments linear in their number, not 1,770', async () => {
    const N = 60;
    // Webhooks first, then workers: every plan job is queued before any runs. Each pull request
    // comes from an installation of its own, so GitHub's per-installation write pacing (Probot's
    // throttling) does not serialise sixty plans.
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), role: 'web' }));
    const baseSha = newSha();
    // The worker keeps a few commits' specs: sixty heads push the base out, and it is read again.
    const baseArchive = await tarball(base, { owner: w.repo.owner, name: w.repo.name, sha: baseSha });
    w.github.expect({
      method: 'GET',
      path: `/repos/acme/estate/tarball/${baseSha}`,
      times: 'any',
      reply: { raw: baseArchive, contentType: 'application/x-gzip' },
    });
    const created = new Map<number, ReturnType<typeof expectNewComment>>();
    const edits = new Map<number, ReturnType<typeof w.github.expect>>();
    const deliveries: string[] = [];
    for (let pr = 1; pr <= N; pr++) {
      const headSha = newSha();
      await expectArchive(w.github, w.repo, headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101, { memory: 1024 + pr }) });
      expectCheckRun(w.github, w.repo, { headSha, pr, id: 20_000 + pr });
      created.set(pr, expectNewComment(w.github, w.repo, pr, 30_000 + pr));
      edits.set(
        pr,
        w.github.expect({ method: 'PATCH', path: `/repos/acme/estate/issues/comments/${30_000 + pr}`, times: 'any', reply: { json: {} } }),
      );
      const result = await w.app.deliver({
        event: 'pull_request',
        payload: pullRequestEvent({
          action: 'opened',
          installationId: w.installationId + pr,
          repo: w.repo,
          number: pr,
          headSha,
          baseSha,
          updatedAt: at(pr),
        }),
      });
      expect(result.status).toBe(200);
      deliveries.push(result.deliveryId);
    }
    const concurrency = 6;
    worker = await startTestApp({
      github: w.github,
      redisUrl: inject('redisUrl'),
      role: 'worker',
      env: { ...w.clusters.env, REDIS_PREFIX: w.app.prefix, WORKER_CONCURRENCY: String(concurrency) },
      logLevel: 'info',
    });
    for (const id of deliveries) await worker.jobDone('plan', id);
    // Every refresh was asked for by a posting, so all are queued now.
    const refreshes = (await worker.jobs()).filter((job) => job.name === 'refresh');
    for (const job of refreshes) await worker.jobIdDone(String(job.id));
    console.info(`refresh jobs added for ${N} racing pull requests: ${refreshes.length}`);

    // A refresh starts only once every plan job was taken, and then at most `concurrency` − 1
    // plans post after it: no comment is refreshed more than `concurrency` times.
    expect(refreshes.length).toBeLessThanOrEqual(N * concurrency);
    // And every comment names the other pull requests in the end.
    const final = async (pr: number): Promise<string> => {
      const edited = edits.get(pr)?.requests.at(-1)?.body as { body?: string } | undefined;
      return edited?.body ?? (await created.get(pr)!.body());
    };
    for (let pr = 1; pr <= N; pr++) {
      const body = await final(pr);
      expect(body).toMatch(new RegExp(`#${pr === N ? N - 1 : N}\\b`));
      expect(body).toMatch(pr === 1 ? /#2\b/ : /#1\b/);
    }
    w.github.verify();
  }, 180_000);
});
