/**
 * Issue 21's GitHub deployments through the App, on by default: a merge's run creates one
 * deployment for its cluster — environment `lab`, on the merge commit — and posts its status as
 * the guests finish, ending `success` (the expectation every apply test sets, `expectApplyCheckRun`).
 * An installation that refuses them (403) is told once and left alone for an hour, the mark in
 * Redis; `APPLY_DEPLOYMENTS=0` sends no deployment request at all. Real webhook deliveries, Redis,
 * the queue and the simulator over HTTP; the GitHub double fails on any request not expected.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { deploymentsDeniedKey } from '../../src/queue/apply/deployments.js';
import { finishedComment } from './apply-flow.js';
import { type ApplyWorld, mergeReviewed, ownedGuest, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { grants, requiredGrants } from './github-double.js';
import { clusterDoc, type RepoFiles, vmDoc } from './spec-repo.js';

let world: ApplyWorld | undefined;

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
});

const WEB = 100101;
const DB = 100102;
const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/web.yaml': vmDoc('web-01', WEB), 'vms/db.yaml': vmDoc('db-01', DB) };

/** Pull request `pr`, reviewed with web-01 and db-01 at `memory`, merged; its apply expected with `ids`. */
function mergeMemory(w: ApplyWorld, pr: number, memory: number, ids: { checkId: number; commentId: number; deployments?: string[] }) {
  const head: RepoFiles = { ...base, 'vms/web.yaml': vmDoc('web-01', WEB, { memory }), 'vms/db.yaml': vmDoc('db-01', DB, { memory }) };
  return mergeReviewed(w, { pr, base, head, ...ids });
}

const REFUSED_WARNING = "GitHub refused the apply's deployments";

describe('deployments through the App', () => {
  it('a merge creates a deployment for its cluster by default and its status follows the guests to success', async () => {
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(WEB, 'web-01'), ownedGuest(DB, 'db-01', 'pve-02')] });
    const w = world;
    const pr = 231;
    const { check, comment } = await mergeMemory(w, pr, 4096, { checkId: 2121, commentId: 2221 });
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    await comment.until(finishedComment);
    const created = w.github.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/deployments'));
    expect(created.map((r) => r.body)).toMatchObject([{ environment: 'lab', description: `pve-gitops: apply of #${pr} on lab` }]);
    // Each state posted once, in order, ending in success.
    const states = check.deployments.get('lab')!.all.map((body) => body.state);
    expect(states.at(-1)).toBe('success');
    expect(check.deployments.get('lab')!.last()).toMatchObject({ environment: 'lab', description: '2 applied' });
    expect(states.filter((s, i) => s === states[i - 1])).toEqual([]);
    expect(states.every((s) => s === 'in_progress' || s === 'success')).toBe(true);
    w.github.verify();
  }, 60_000);

  it('an installation without deployments: write is told once, and its deployments are not tried again within the hour; the apply is not affected', async () => {
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(WEB, 'web-01'), ownedGuest(DB, 'db-01', 'pve-02')] });
    const w = world;
    // What GitHub answers an installation that has not accepted the permission.
    const refused = w.github.expect({
      method: 'POST',
      path: `/repos/${w.repo.owner}/${w.repo.name}/deployments`,
      reply: { status: 403, json: { message: 'Resource not accessible by integration' } },
    });
    const first = await mergeMemory(w, 241, 4096, { checkId: 2131, commentId: 2231, deployments: [] });
    expect(await first.check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    await refused.done;
    // The comment follows the deployments in each report: the finished one comes after the 403 was handled.
    await first.comment.until(finishedComment);
    const redis = new Redis(w.redisUrl, { maxRetriesPerRequest: 3 });
    try {
      const ttl = await redis.ttl(deploymentsDeniedKey(`${w.app.prefix}:state`, w.installationId));
      expect(ttl).toBeGreaterThan(3500);
      expect(ttl).toBeLessThanOrEqual(3600);
    } finally {
      redis.disconnect();
    }

    // A second run of the same installation: no deployment request (the double would fail it).
    const second = await mergeMemory(w, 242, 8192, { checkId: 2132, commentId: 2232, deployments: [] });
    expect(await second.check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    await second.comment.until(finishedComment);
    const warnings = w.app
      .logs()
      .split('\n')
      .filter((line) => line.includes(REFUSED_WARNING));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("Accept the permission in the installation's settings, or set APPLY_DEPLOYMENTS=0");
    expect(warnings[0]).toContain('"level":40');
    w.github.verify();
  }, 60_000);

  it('APPLY_DEPLOYMENTS=0 makes no deployment request', async () => {
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(WEB, 'web-01'), ownedGuest(DB, 'db-01', 'pve-02')],
      env: { APPLY_DEPLOYMENTS: '0' },
    });
    const w = world;
    const { check, comment } = await mergeMemory(w, 251, 4096, { checkId: 2141, commentId: 2241, deployments: [] });
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    await comment.until(finishedComment);
    w.github.verify();
  }, 60_000);

  it("GitHub's double asks the deployments permission for every call", () => {
    const create = requiredGrants('POST', '/repos/acme/estate/deployments');
    const status = requiredGrants('POST', '/repos/acme/estate/deployments/7/statuses');
    expect(create).toEqual([{ permission: 'deployments', level: 'write' }]);
    expect(status).toEqual(create);
    expect(requiredGrants('GET', '/repos/acme/estate/deployments')).toEqual([{ permission: 'deployments', level: 'read' }]);
    const [grant] = create ?? [];
    if (!grant) throw new Error('no grant listed for POST …/deployments');
    expect(grants({ deployments: 'read' }, grant)).toBe(false);
    expect(grants({ deployments: 'write' }, grant)).toBe(true);
  });
});
