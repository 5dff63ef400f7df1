/**
 * Issue 21's apply windows through the App, with an injected clock (never the wall clock): a merge
 * outside its window is queued — the apply comment and the check run say when it will run — and
 * runs when the clock reaches the window, restarting a `restart: in-window` guest inside it; a
 * window that closes mid-run finishes the guest in flight and holds the rest until the next one;
 * `/pve apply --now` is an admin's alone, applies outside the window, and leaves an in-window
 * restart undone. A cluster's windows gate its objects of other kinds too: a pool's plan comment
 * says it waits for the window, and a merge outside it parks the pool until the clock reaches it.
 * Real webhook deliveries, Redis, the queue, GitHub's double and the simulator over HTTP.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { expectApplyCheckRun, expectApplyComment, finishedComment } from './apply-flow.js';
import { type ApplyWorld, ownedGuest, planOpened, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { issueCommentEvent } from './deliveries.js';
import { expectAcceptedCommand, expectReply } from './plan-flow.js';
import { rawConfig } from './sim-writes.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';

let world: ApplyWorld | undefined;

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
});

const WEB = 100101;
const DB = 100102;
/** Saturday 2026-12-05, Berlin on winter time (UTC+1): the window below is 01:00–04:00 UTC. */
const WINDOW = "windows: ['Sat 02:00-05:00 Europe/Berlin']";
const BEFORE = Date.parse('2026-12-05T00:30:00Z');
const INSIDE = Date.parse('2026-12-05T01:30:00Z');
const AFTER = Date.parse('2026-12-05T04:30:00Z');
const NEXT_WEEK = Date.parse('2026-12-12T01:15:00Z');

/** A clock the test moves by hand. */
function handClock(start: number): { now(): number; set(ms: number): void } {
  let now = start;
  return { now: () => now, set: (ms) => void (now = ms) };
}

const waitingFor = (body: string): boolean => body.includes('outside its apply window');

describe('apply windows through the App', () => {
  it('a merge outside its window is queued, says when it runs, and runs when the window opens — restarting an in-window guest there', async () => {
    const clock = handClock(BEFORE);
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [{ ...ownedGuest(WEB, 'web-01'), running: true }],
      applyWindows: { clock, recheckMs: 100 },
    });
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc('lab', `${WINDOW}\nrestart: in-window`), 'vms/web.yaml': vmDoc('web-01', WEB) };
    const head: RepoFiles = { ...base, 'vms/web.yaml': vmDoc('web-01', WEB, { memory: 4096 }) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 211;
    await world.storePlan({ baseSha, base, pr, headSha, head });

    const check = expectApplyCheckRun(world.github, world.repo, { mergeSha, id: 2101 });
    const comment = expectApplyComment(world.github, world.repo, { pr, id: 2201 });
    await world.merge({ number: pr, headSha, baseSha, mergeSha });

    const queued = await comment.until(waitingFor);
    expect(queued).toContain(
      'outside its apply window: runs when Sat 02:00-05:00 Europe/Berlin opens, Sat 2026-12-05 02:00 Europe/Berlin (01:00 UTC)',
    );
    const checkWaiting = await check.bodies.until((body) => body.output?.title?.includes('waiting for an apply window') === true);
    expect(checkWaiting.output?.title).toBe('Applying: 0 of 1 guests done; 1 guest waiting for an apply window');
    expect(checkWaiting.output?.summary).toContain('lab/web-01: outside its apply window: runs when Sat 02:00-05:00 Europe/Berlin opens');
    expect(sim.sim.stats().writes.total).toBe(0);

    clock.set(INSIDE);
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    const body = await comment.until(finishedComment);
    expect(body).toMatch(/memory in effect; nothing left pending/);
    expect(rawConfig(sim, WEB)).toContain('memory: 4096');
    expect(rawConfig(sim, WEB)).not.toContain('[PENDING]');
    world.github.verify();
  });

  it('a window that closes mid-run finishes the guest in flight and holds the rest until the next window', async () => {
    const clock = handClock(INSIDE);
    let dbWrites = (): number => 0;
    // The window closes while db-01 is being written: the clock moves past it with db-01's first write.
    const closing = {
      now: (): number => {
        if (dbWrites() > 0 && clock.now() === INSIDE) clock.set(AFTER);
        return clock.now();
      },
    };
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(WEB, 'web-01'), ownedGuest(DB, 'db-01', 'pve-02')],
      applyWindows: { clock: closing, recheckMs: 100 },
    });
    const lab = world.clusters.sims.lab!;
    dbWrites = () => lab.sim.stats().guests[DB]?.writes ?? 0;
    const base: RepoFiles = {
      'cluster.yaml': clusterDoc('lab', WINDOW),
      'vms/web.yaml': vmDoc('web-01', WEB),
      'vms/db.yaml': vmDoc('db-01', DB),
    };
    const head: RepoFiles = {
      ...base,
      'vms/web.yaml': `${vmDoc('web-01', WEB, { memory: 4096 })}dependsOn: [db-01]\n`,
      'vms/db.yaml': vmDoc('db-01', DB, { memory: 4096 }),
    };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 212;
    await world.storePlan({ baseSha, base, pr, headSha, head });

    const check = expectApplyCheckRun(world.github, world.repo, { mergeSha, id: 2102 });
    const comment = expectApplyComment(world.github, world.repo, { pr, id: 2202 });
    await world.merge({ number: pr, headSha, baseSha, mergeSha });

    const held = await comment.until((body) => waitingFor(body) && body.includes('**applied** · **lab/db-01**'));
    expect(held).toContain('outside its apply window: runs when Sat 02:00-05:00 Europe/Berlin opens, Sat 2026-12-12 02:00 Europe/Berlin');
    expect(rawConfig(lab, DB)).toContain('memory: 4096');
    expect(rawConfig(lab, WEB)).toContain('memory: 2048');

    clock.set(NEXT_WEEK);
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    expect(rawConfig(lab, WEB)).toContain('memory: 4096');
    world.github.verify();
  }, 60_000);

  it("/pve apply --now is an admin's: a writer is refused; an admin's lets the waiting run in at once, and an in-window restart waits for a window", async () => {
    const clock = handClock(BEFORE);
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [{ ...ownedGuest(WEB, 'web-01'), running: true }],
      applyWindows: { clock, recheckMs: 100 },
    });
    const w = world;
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc('lab', `${WINDOW}\nrestart: in-window`), 'vms/web.yaml': vmDoc('web-01', WEB) };
    const head: RepoFiles = { ...base, 'vms/web.yaml': vmDoc('web-01', WEB, { memory: 4096 }) };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 213;
    await w.storePlan({ baseSha, base, pr, headSha, head });
    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 2103 });
    const comment = expectApplyComment(w.github, w.repo, { pr, id: 2203 });
    await w.merge({ number: pr, headSha, baseSha, mergeSha });
    await comment.until(waitingFor);

    // A writer: refused, nothing let in.
    expectAcceptedCommand(w.github, w.repo, 'alice', 5301);
    const refused = expectReply(w.github, w.repo, pr, /only a repository admin may ask for/);
    const byWriter = await w.app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({
        installationId: w.installationId,
        repo: w.repo,
        number: pr,
        body: '/pve apply --now',
        author: 'alice',
        commentId: 5301,
      }),
    });
    await w.app.jobDone('command', byWriter.deliveryId);
    expect(await refused.body()).toContain('GitHub reports **write** for you');
    expect(sim.sim.stats().writes.total).toBe(0);

    // An admin: the waiting run goes ahead, outside the window; the in-window restart does not.
    w.github.expect({
      method: 'GET',
      path: `/repos/${w.repo.owner}/${w.repo.name}/collaborators/root-admin/permission`,
      reply: { json: { permission: 'admin', role_name: 'admin' } },
    });
    w.github.expect({
      method: 'POST',
      path: `/repos/${w.repo.owner}/${w.repo.name}/issues/comments/5302/reactions`,
      body: { content: 'eyes' },
      reply: { status: 201, json: {} },
    });
    const letIn = expectReply(w.github, w.repo, pr, /goes ahead now, outside its apply windows/);
    const byAdmin = await w.app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({
        installationId: w.installationId,
        repo: w.repo,
        number: pr,
        body: '/pve apply --now',
        author: 'root-admin',
        commentId: 5302,
      }),
    });
    await w.app.jobDone('command', byAdmin.deliveryId);
    await letIn.body();
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    const body = await comment.until(finishedComment);
    expect(body).toContain('not restarted: restart: in-window and no apply window is open now');
    expect(body).toMatch(/Pending until restart/);
    expect(rawConfig(sim, WEB)).toContain('memory: 2048');
    expect(sim.sim.getGuest(WEB)?.rawConfig).toMatch(/\[PENDING\][^[]*memory: 4096/);
    expect(sim.sim.getGuest(WEB)?.running).toBe(true);
    w.github.verify();
  }, 60_000);

  it("a cluster's windows gate its pool too: the plan comment says it waits, a merge outside the window parks it, and it is created when the window opens", async () => {
    const clock = handClock(BEFORE);
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(WEB, 'web-01')],
      pools: [],
      applyWindows: { clock, recheckMs: 100 },
    });
    const w = world;
    const { github, repo } = w;
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc('lab', WINDOW), 'vms/web.yaml': vmDoc('web-01', WEB) };
    const head: RepoFiles = { ...base, 'pools.yaml': 'kind: Pool\nname: web\ncluster: lab\ncomment: Web servers\n' };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 214;

    const planned = await planOpened(w, { pr, baseSha, base, headSha, head, checkId: 2104, commentId: 2204 });
    expect(planned.comment).toContain("applies only inside its cluster's apply window: Sat 02:00-05:00 Europe/Berlin");
    github.verify();

    const check = expectApplyCheckRun(github, repo, { mergeSha, id: 2105 });
    const comment = expectApplyComment(github, repo, { pr, id: 2205 });
    await w.merge({ number: pr, headSha, baseSha, mergeSha });
    const queued = await comment.until(waitingFor);
    expect(queued).toContain('lab/web');
    expect(queued).toContain('outside its apply window: runs when Sat 02:00-05:00 Europe/Berlin opens');
    const checkWaiting = await check.bodies.until((body) => body.output?.title?.includes('waiting for an apply window') === true);
    expect(checkWaiting.output?.title).toBe('Applying: 0 of 1 items done; 1 item waiting for an apply window');
    expect(sim.sim.pools.has('web')).toBe(false);

    clock.set(INSIDE);
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    await comment.until(finishedComment);
    expect(sim.sim.pools.get('web')?.comment).toBe('Web servers');
    github.verify();
  });
});
