/**
 * One `pve-gitops/plan` check run per head and attempt chain, completed whatever happens: a retry
 * takes over the run of the attempt before it — whose worker was killed, or which met a GitHub
 * error — instead of leaving it "in progress" or failed beside a new one. Worker processes are
 * started for real (what the image runs) and killed with SIGKILL; GitHub is the test double.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { pullRequestEvent } from './deliveries.js';
import type { ExpectationHandle, RecordedRequest } from './github-double.js';
import { type CheckRunBody, expectArchive, expectCheckRun, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { type LogLine, startWorkerProcess, type WorkerProcess } from './worker-process.js';
import { at, startWorld, type World } from './world.js';

let world: World | undefined;
let workers: WorkerProcess[] = [];

afterEach(async (context) => {
  if (context.task.result?.state === 'fail') {
    const warn = (line: LogLine): boolean => typeof line.level === 'number' && line.level >= 40;
    for (const [i, w] of workers.entries())
      console.error(
        `worker ${i}:\n${w.lines
          .filter(warn)
          .slice(-20)
          .map((l) => JSON.stringify(l))
          .join('\n')}`,
      );
  }
  await Promise.all(workers.map((w) => w.signal('SIGKILL')));
  workers = [];
  await world?.close();
  world = undefined;
});

/** Stalled jobs found within seconds, retries two seconds apart (the default backoff). */
const FAST_STALL_ENV = { JOB_LOCK_MS: '2000', JOB_STALLED_INTERVAL_MS: '1000' };

const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
const head: RepoFiles = { ...base, 'web.yaml': vmDoc('web-01', 100101) };

/** The plan check run of `headSha`: created once (answered `id`), then updated any number of times. */
function expectOneCheckRun(w: World, headSha: string, id: number): { created: ExpectationHandle; updates: ExpectationHandle } {
  const created = w.github.expect({
    method: 'POST',
    path: `/repos/${w.repo.owner}/${w.repo.name}/check-runs`,
    body: { head_sha: headSha, name: 'pve-gitops/plan', status: 'in_progress' },
    reply: { status: 201, json: { id, html_url: `https://github.example/runs/${id}` } },
  });
  const updates = w.github.expect({
    method: 'PATCH',
    path: `/repos/${w.repo.owner}/${w.repo.name}/check-runs/${id}`,
    times: 'any',
    reply: { json: { id } },
  });
  return { created, updates };
}

const bodies = (handle: ExpectationHandle): CheckRunBody[] => handle.requests.map((r: RecordedRequest) => r.body as CheckRunBody);

async function open(w: World, pr: number, headSha: string, baseSha: string): Promise<string> {
  const result = await w.app.deliver({
    event: 'pull_request',
    payload: pullRequestEvent({
      action: 'opened',
      installationId: w.installationId,
      repo: w.repo,
      number: pr,
      headSha,
      baseSha,
      updatedAt: at(1),
    }),
  });
  expect(result.status).toBe(200);
  return result.deliveryId;
}

describe('the check run of a plan', () => {
  it('a worker killed mid-plan leaves no run in progress: the retry on another worker takes over its run and completes it', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), role: 'web', env: FAST_STALL_ENV }));
    const [baseSha, headSha] = [newSha(), newSha()];
    // The first worker reads both archives; the head's is never answered before it is killed.
    let release: () => void = () => {};
    const never = new Promise<void>((resolve) => (release = resolve));
    await expectArchive(w.github, w.repo, baseSha, base);
    const held = await expectArchive(w.github, w.repo, headSha, head, never);
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, head);
    const run = expectOneCheckRun(w, headSha, 1201);
    expectNewComment(w.github, w.repo, 1, 1301);

    const first = await startWorkerProcess(w.app.env);
    workers.push(first);
    const delivery = await open(w, 1, headSha, baseSha);
    await run.created.done;
    await held.requested;
    await first.signal('SIGKILL');
    release();
    workers.push(await startWorkerProcess(w.app.env));
    await w.app.jobDone('plan', delivery);

    const sent = bodies(run.updates);
    expect(sent[0]).toMatchObject({ status: 'in_progress', output: { title: 'Planning…' } });
    expect(sent[0]?.output?.summary).toContain('the one before it did not finish');
    expect(sent.at(-1)).toMatchObject({ status: 'completed', conclusion: 'success', output: { title: '1 to create' } });
    w.github.verify();
  }, 60_000);

  it('a GitHub error that outlasts Octokit’s retries fails the attempt, not the run: the retry completes the same run', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const [baseSha, headSha] = [newSha(), newSha()];
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, head);
    const run = expectOneCheckRun(w, headSha, 1202);
    // Four 502s: the request and Octokit's three retries of it. The job's next attempt succeeds.
    const unavailable = w.github.expect({
      method: 'POST',
      path: `/repos/${w.repo.owner}/${w.repo.name}/issues/2/comments`,
      times: 4,
      reply: { status: 502, json: { message: 'Server Error' } },
    });
    w.github.expect({ method: 'GET', path: `/repos/${w.repo.owner}/${w.repo.name}/issues/2/comments`, times: 2, reply: { json: [] } });
    w.github.expect({
      method: 'POST',
      path: `/repos/${w.repo.owner}/${w.repo.name}/issues/2/comments`,
      reply: { status: 201, json: { id: 1302 } },
    });
    await w.app.jobDone('plan', await open(w, 2, headSha, baseSha));
    await unavailable.done;

    const sent = bodies(run.updates);
    expect(sent.filter((body) => body.status === 'completed')).toHaveLength(1);
    expect(sent.some((body) => body.output?.title === 'Planning… (retrying)')).toBe(true);
    expect(sent.at(-1)).toMatchObject({ status: 'completed', conclusion: 'success', output: { title: '1 to create' } });
    w.github.verify();
  }, 60_000);

  it('a plan whose workers die until BullMQ gives it up still completes its check run, as a failure saying why', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), role: 'web', env: FAST_STALL_ENV }));
    const [baseSha, headSha] = [newSha(), newSha()];
    let release: () => void = () => {};
    const never = new Promise<void>((resolve) => (release = resolve));
    // Two workers each read the base and wait for the head's archive, and are killed there.
    await expectArchive(w.github, w.repo, baseSha, base);
    const held1 = await expectArchive(w.github, w.repo, headSha, head, never);
    await expectArchive(w.github, w.repo, baseSha, base);
    const held2 = await expectArchive(w.github, w.repo, headSha, head, never);
    const completed = w.github.expect({
      method: 'PATCH',
      path: `/repos/${w.repo.owner}/${w.repo.name}/check-runs/1203`,
      body: { status: 'completed' },
      reply: { json: { id: 1203 } },
    });
    const run = expectOneCheckRun(w, headSha, 1203);

    workers.push(await startWorkerProcess(w.app.env));
    const delivery = await open(w, 3, headSha, baseSha);
    await held1.requested;
    await workers[0]!.signal('SIGKILL');
    workers.push(await startWorkerProcess(w.app.env));
    await held2.requested;
    await workers[1]!.signal('SIGKILL');
    // Stalled twice, the job is failed by the next worker without running it again.
    workers.push(await startWorkerProcess(w.app.env));
    await expect(w.app.jobDone('plan', delivery)).rejects.toThrow(/stalled more than allowable limit/);
    const [last] = await completed.done;
    release();
    expect(last?.body).toMatchObject({
      conclusion: 'failure',
      output: { title: 'pve-gitops could not finish the plan', summary: expect.stringContaining('stalled more than allowable limit') },
    });
    expect(bodies(run.updates).map((body) => body.status)).toEqual(['in_progress']);
    w.github.verify();
  }, 90_000);

  it('a killed attempt whose head was superseded before its retry completes its run as superseded', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), role: 'web', env: FAST_STALL_ENV }));
    const [baseSha, older, newer] = [newSha(), newSha(), newSha()];
    let release: () => void = () => {};
    const never = new Promise<void>((resolve) => (release = resolve));
    await expectArchive(w.github, w.repo, baseSha, base);
    const held = await expectArchive(w.github, w.repo, older, head, never);
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, newer, { ...base, 'web.yaml': vmDoc('web-01', 100101, { memory: 4096 }) });
    const olderRun = expectOneCheckRun(w, older, 1204);
    const newerRun = expectCheckRun(w.github, w.repo, { headSha: newer, pr: 4, id: 1205 });
    expectNewComment(w.github, w.repo, 4, 1304);

    workers.push(await startWorkerProcess(w.app.env));
    const first = await open(w, 4, older, baseSha);
    await held.requested;
    await workers[0]!.signal('SIGKILL');
    const pushed = await w.app.deliver({
      event: 'pull_request',
      payload: pullRequestEvent({
        action: 'synchronize',
        installationId: w.installationId,
        repo: w.repo,
        number: 4,
        headSha: newer,
        baseSha,
        updatedAt: at(2),
      }),
    });
    workers.push(await startWorkerProcess(w.app.env));
    await w.app.jobDone('plan', pushed.deliveryId);
    await w.app.jobDone('plan', first);
    release();
    expect(bodies(olderRun.updates)).toEqual([
      expect.objectContaining({
        status: 'completed',
        conclusion: 'skipped',
        output: expect.objectContaining({ title: `Superseded by ${newer.slice(0, 7)}` }),
      }),
    ]);
    expect((await newerRun.result()).conclusion).toBe('success');
    w.github.verify();
  }, 60_000);
});
