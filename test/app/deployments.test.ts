/**
 * Issue 21's GitHub deployments through the App (APPLY_DEPLOYMENTS=1): a merge's run creates one
 * deployment for its cluster — environment `lab`, on the merge commit — and posts its status as the
 * guests finish, ending `success`; GitHub's double refuses both calls to an installation without
 * the `deployments` permission. Real webhook deliveries, Redis, the queue and the simulator over HTTP.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { expectApplyCheckRun, expectApplyComment, finishedComment } from './apply-flow.js';
import { type ApplyWorld, ownedGuest, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { grants, requiredGrants } from './github-double.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';

let world: ApplyWorld | undefined;

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
});

const WEB = 100101;
const DB = 100102;

describe('deployments through the App', () => {
  it('a merge creates a deployment for its cluster and its status follows the guests to success', async () => {
    world = await startApplyWorld({
      redisUrl: inject('redisUrl'),
      guests: [ownedGuest(WEB, 'web-01'), ownedGuest(DB, 'db-01', 'pve-02')],
      env: { APPLY_DEPLOYMENTS: '1' },
    });
    const w = world;
    const base: RepoFiles = { 'cluster.yaml': clusterDoc(), 'vms/web.yaml': vmDoc('web-01', WEB), 'vms/db.yaml': vmDoc('db-01', DB) };
    const head: RepoFiles = {
      ...base,
      'vms/web.yaml': vmDoc('web-01', WEB, { memory: 4096 }),
      'vms/db.yaml': vmDoc('db-01', DB, { memory: 4096 }),
    };
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 231;
    await w.storePlan({ baseSha, base, pr, headSha, head });
    const created = w.github.expect({
      method: 'POST',
      path: `/repos/${w.repo.owner}/${w.repo.name}/deployments`,
      body: { ref: mergeSha, environment: 'lab', auto_merge: false, required_contexts: [] },
      reply: { status: 201, json: { id: 7001 } },
    });
    const states: string[] = [];
    let resolveSuccess: (body: Record<string, unknown>) => void = () => {};
    const success = new Promise<Record<string, unknown>>((resolve) => (resolveSuccess = resolve));
    w.github.expect({
      method: 'POST',
      path: `/repos/${w.repo.owner}/${w.repo.name}/deployments/7001/statuses`,
      times: 'any',
      reply: (request) => {
        const body = request.body as Record<string, unknown>;
        states.push(String(body.state));
        if (body.state === 'success') resolveSuccess(body);
        return { status: 201, json: { id: states.length } };
      },
    });
    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 2121 });
    const comment = expectApplyComment(w.github, w.repo, { pr, id: 2221 });
    await w.merge({ number: pr, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'success', output: { title: '2 applied' } });
    await comment.until(finishedComment);
    expect(await success).toMatchObject({ state: 'success', environment: 'lab', description: '2 applied' });
    expect((await created.requested).body).toMatchObject({ description: `pve-gitops: apply of #${pr} on lab` });
    // One deployment; each state posted once, in order, ending in success.
    expect(created.requests).toHaveLength(1);
    expect(states.at(-1)).toBe('success');
    expect(states.filter((s, i) => s === states[i - 1])).toEqual([]);
    expect(states.every((s) => s === 'in_progress' || s === 'success')).toBe(true);
    w.github.verify();
  }, 60_000);

  it("GitHub's double asks the deployments permission for both calls", () => {
    const create = requiredGrants('POST', '/repos/acme/estate/deployments');
    const status = requiredGrants('POST', '/repos/acme/estate/deployments/7/statuses');
    expect(create).toEqual([{ permission: 'deployments', level: 'write' }]);
    expect(status).toEqual(create);
    const [grant] = create ?? [];
    if (!grant) throw new Error('no grant listed for POST …/deployments');
    expect(grants({ deployments: 'read' }, grant)).toBe(false);
    expect(grants({ deployments: 'write' }, grant)).toBe(true);
  });
});
