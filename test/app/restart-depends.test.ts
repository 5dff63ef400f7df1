/**
 * Issue 21 through the App: a merge whose guest has `restart: allowed` (its cluster's default)
 * restarts it after the write, so the value Proxmox held as pending is in effect; and a guest that
 * `dependsOn` another waits for it and is held — skipped, retryable, never written — when it did
 * not apply. Real webhook deliveries, Redis, the queue, GitHub's double and the simulator over HTTP.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { finishedComment } from './apply-flow.js';
import { type ApplyWorld, mergeReviewed, ownedGuest, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { rawConfig } from './sim-writes.js';
import { clusterDoc, type RepoFiles, vmDoc } from './spec-repo.js';

let world: ApplyWorld | undefined;

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
});

const WEB = 100101;
const DB = 100102;

describe('restarts and dependsOn through the App', () => {
  it('a restart applies a pending value: the merge writes memory, restarts the running guest, and nothing is left pending', async () => {
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [{ ...ownedGuest(WEB, 'web-01'), running: true }] });
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = {
      'cluster.yaml': clusterDoc('lab', 'restart: { policy: allowed, timeout: 60 }'),
      'vms/web.yaml': vmDoc('web-01', WEB),
    };
    const head: RepoFiles = { ...base, 'vms/web.yaml': vmDoc('web-01', WEB, { memory: 4096 }) };
    const { check, comment } = await mergeReviewed(world, { pr: 121, base, head, checkId: 1201, commentId: 1301 });
    const completed = await check.completed;
    const body = await comment.until(finishedComment);

    expect(completed).toMatchObject({ conclusion: 'success', output: { title: '1 applied' } });
    expect(body).toContain('**1 applied**');
    expect(body).toMatch(/restart: clean shutdown within 60 s/);
    expect(body).toMatch(/memory in effect; nothing left pending/);
    expect(body).not.toMatch(/Pending until restart/);
    expect(rawConfig(sim, WEB)).toContain('memory: 4096');
    expect(rawConfig(sim, WEB)).not.toContain('[PENDING]');
    expect(sim.sim.getGuest(WEB)?.running).toBe(true);
    world.github.verify();
  });

  it('a dependency holds its dependent: db-01 ends in a conflict, web-01 (dependsOn: [db-01]) is held and never written', async () => {
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(WEB, 'web-01'), ownedGuest(DB, 'db-01', 'pve-02')] });
    const sim = world.clusters.sims.lab!;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/web.yaml': vmDoc('web-01', WEB), 'vms/db.yaml': vmDoc('db-01', DB) };
    const head: RepoFiles = {
      ...base,
      'vms/web.yaml': `${vmDoc('web-01', WEB, { memory: 4096 })}dependsOn: [db-01]\n`,
      'vms/db.yaml': vmDoc('db-01', DB, { memory: 4096 }),
    };
    const webBefore = sim.sim.stats().guests[WEB]?.writes ?? 0;
    const { check, comment } = await mergeReviewed(world, {
      pr: 122,
      base,
      head,
      checkId: 1202,
      commentId: 1302,
      // Reviewed 2048 → 4096 on db-01; then someone edits it: its apply is a conflict.
      beforeMerge: () => void sim.sim.operatorEdit(DB, { set: { memory: 3000 } }),
    });
    const completed = await check.completed;
    const body = await comment.until(finishedComment);

    expect(completed.conclusion).not.toBe('success');
    expect(body).toMatch(/\*\*conflict\*\* · \*\*lab\/db-01\*\*/);
    expect(body).toMatch(/\*\*skipped\*\* · \*\*lab\/web-01\*\*/);
    expect(body).toContain('held: it depends on db-01 (lab/100102), which ended conflict; nothing was written');
    expect(sim.sim.stats().guests[WEB]?.writes ?? 0).toBe(webBefore);
    expect(rawConfig(sim, WEB)).toContain('memory: 2048');
    world.github.verify();
  });
});
