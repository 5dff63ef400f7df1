/**
 * Issue 21's snapshots first through the App: a merge whose VM has `snapshot: always` snapshots it
 * (named after the run) before writing, and the apply comment says so; `/pve rollback` on the
 * pull request first answers with what it would do and writes nothing, and `/pve rollback confirm`
 * rolls the VM back to that snapshot. Real webhook deliveries, Redis, the queue, GitHub's double
 * and the simulator over HTTP.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { finishedComment } from './apply-flow.js';
import { type ApplyWorld, mergeReviewed, ownedGuest, planOpened, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { issueCommentEvent } from './deliveries.js';
import { expectAcceptedCommand, expectReply } from './plan-flow.js';
import { rawConfig } from './sim-writes.js';
import { clusterDoc, containerDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';

let world: ApplyWorld | undefined;

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
});

const WEB = 100101;
const CT = 100102;

/** Delivers `/pve rollback …` by alice on pull request `pr` and waits for its command job; resolves the reply. */
async function rollbackComment(w: ApplyWorld, pr: number, body: string, commentId: number, reply: RegExp): Promise<string> {
  expectAcceptedCommand(w.github, w.repo, 'alice', commentId);
  const answer = expectReply(w.github, w.repo, pr, reply);
  const payload = issueCommentEvent({ installationId: w.installationId, repo: w.repo, number: pr, body, author: 'alice', commentId });
  const delivered = await w.app.deliver({ event: 'issue_comment', payload });
  await w.app.jobDone('command', delivered.deliveryId);
  return answer.body();
}

/** ct-01, owned by the tool, on pve-01 with its root file system on `rootfs`. */
function ownedContainer(rootfs: string) {
  return { vmid: CT, type: 'lxc', node: 'pve-01', config: { hostname: 'ct-01', memory: 512, rootfs, tags: 'pve-gitops' } };
}

describe('snapshots first through the App', () => {
  it('a merge snapshots the VM before writing; /pve rollback shows what it would do, /pve rollback confirm restores the snapshot', async () => {
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(WEB, 'web-01')] });
    const w = world;
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc('lab', 'snapshot: always'), 'vms/web.yaml': vmDoc('web-01', WEB) };
    const head: RepoFiles = { ...base, 'vms/web.yaml': vmDoc('web-01', WEB, { memory: 4096 }) };
    const pr = 221;
    const { check, comment } = await mergeReviewed(w, { pr, base, head, checkId: 2111, commentId: 2211 });
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    const body = await comment.until(finishedComment);
    const name = /pvegitops-run-[0-9a-f]{12}/.exec(body)?.[0];
    expect(name, body).toBeDefined();
    expect(rawConfig(sim, WEB)).toContain('memory: 4096');
    expect(
      sim.sim.guests
        .get(WEB)
        ?.config.snapshots.get(name as string)
        ?.values.get('memory'),
    ).toBe('2048');

    // `/pve rollback`: what it would do, nothing written.
    expectAcceptedCommand(w.github, w.repo, 'alice', 5401);
    const shown = expectReply(w.github, w.repo, pr, /would roll these guests \(VMs and containers\) back/);
    const ask = await w.app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({
        installationId: w.installationId,
        repo: w.repo,
        number: pr,
        body: '/pve rollback',
        author: 'alice',
        commentId: 5401,
      }),
    });
    await w.app.jobDone('command', ask.deliveryId);
    expect(await shown.body()).toContain(`- **lab/web-01** (${WEB}) → \`${name}\``);
    expect(rawConfig(sim, WEB)).toContain('memory: 4096');

    // `/pve rollback confirm`: done.
    expectAcceptedCommand(w.github, w.repo, 'alice', 5402);
    const done = expectReply(w.github, w.repo, pr, /rolled back to the snapshots/);
    const confirm = await w.app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({
        installationId: w.installationId,
        repo: w.repo,
        number: pr,
        body: '/pve rollback confirm',
        author: 'alice',
        commentId: 5402,
      }),
    });
    await w.app.jobDone('command', confirm.deliveryId);
    expect(await done.body()).toMatch(new RegExp(`lab/web-01\\*\\* \\(${WEB}\\) → \`${name}\`: rolled back`));
    expect(rawConfig(sim, WEB)).toContain('memory: 2048');
    w.github.verify();
  }, 60_000);

  it('a container is snapshotted under the same policy, and /pve rollback confirm rolls it back with the VM', async () => {
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(WEB, 'web-01'), ownedContainer(`local-lvm:vm-${CT}-disk-0,size=8G`)],
    });
    const w = world;
    const sim = w.clusters.sims.lab!;
    const base: RepoFiles = {
      'cluster.yaml': clusterDoc('lab', 'snapshot: always'),
      'vms/web.yaml': vmDoc('web-01', WEB),
      'cts/ct.yaml': containerDoc('ct-01', CT),
    };
    const head: RepoFiles = {
      ...base,
      'vms/web.yaml': vmDoc('web-01', WEB, { memory: 4096 }),
      'cts/ct.yaml': containerDoc('ct-01', CT, { memory: 1024 }),
    };
    const pr = 222;
    const { check, comment } = await mergeReviewed(w, { pr, base, head, checkId: 2112, commentId: 2212 });
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    const body = await comment.until(finishedComment);
    const name = /pvegitops-run-[0-9a-f]{12}/.exec(body)?.[0] as string;
    expect(name, body).toBeDefined();
    expect(rawConfig(sim, CT)).toContain('memory: 1024');
    expect(sim.sim.guests.get(CT)?.config.snapshots.get(name)?.values.get('memory')).toBe('512');

    const shown = await rollbackComment(w, pr, '/pve rollback', 5411, /would roll these guests/);
    expect(shown).toContain(`- **lab/ct-01** (${CT}) → \`${name}\``);
    expect(rawConfig(sim, CT)).toContain('memory: 1024');

    const done = await rollbackComment(w, pr, '/pve rollback confirm', 5412, /rolled back to the snapshots/);
    expect(done).toMatch(new RegExp(`lab/ct-01\\*\\* \\(${CT}\\) → \`${name}\`: rolled back`));
    expect(done).toMatch(new RegExp(`lab/web-01\\*\\* \\(${WEB}\\) → \`${name}\`: rolled back`));
    expect(rawConfig(sim, CT)).toContain('memory: 512');
    expect(rawConfig(sim, WEB)).toContain('memory: 2048');
    w.github.verify();
  }, 60_000);

  it('a pull request changing a container whose root file system cannot be snapshotted fails its plan check, naming the volume, before anything is merged', async () => {
    // `local` is a directory storage: a container's raw image there has no snapshot feature.
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedContainer(`local:${CT}/vm-${CT}-disk-0.raw,size=8G`)] });
    const w = world;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc('lab', 'snapshot: always'), 'cts/ct.yaml': containerDoc('ct-01', CT) };
    const [baseSha, headSha] = [newSha(), newSha()];
    const head: RepoFiles = { ...base, 'cts/ct.yaml': containerDoc('ct-01', CT, { memory: 1024 }) };
    const { check, comment } = await planOpened(w, { pr: 223, baseSha, base, headSha, head, checkId: 2113, commentId: 2213 });
    w.github.verify();
    // The plan's own error, not a rehearsal's failure on the simulated copy: nothing is rehearsed.
    expect(check).toMatchObject({ conclusion: 'failure', output: { title: 'Plan errors: No changes, 1 error' } });
    expect(comment).toContain(
      `snapshot refused: local:${CT}/vm-${CT}-disk-0.raw (rootfs) on local (dir) cannot be snapshotted; the apply would fail this guest with nothing written`,
    );
  }, 60_000);
});
