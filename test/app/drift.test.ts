import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { SimulatorOptions } from '../../src/pve/sim/index.js';
import { startClusters, type TestClusters } from './clusters.js';
import { installationEvent, installationRepositoriesEvent, issueCommentEvent, type TestRepo } from './deliveries.js';
import {
  driftSpecs,
  expectHead,
  expectIssueClosed,
  expectIssueCreated,
  expectIssueEdited,
  expectIssueSearch,
  RATE_LIMIT_HEADERS,
  seedGuests,
} from './drift-flow.js';
import { GitHubDouble, type RecordedRequest } from './github-double.js';
import { startTestApp, type TestApp } from './harness.js';
import { expectAcceptedCommand, expectArchive, expectReply } from './plan-flow.js';
import { clusterDoc, newSha, vmDoc } from './spec-repo.js';

let github: GitHubDouble;
let clusters: TestClusters | undefined;
let apps: TestApp[] = [];
let redis: Redis;
let repo: TestRepo;
let installationId: number;

beforeEach(async () => {
  github = await GitHubDouble.start();
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 3 });
  repo = { id: 1_000_000 + randomBytes(3).readUIntBE(0, 3), owner: 'acme', name: 'estate' };
  // Probot's throttling groups requests by installation across the process: one per test.
  installationId = 1 + randomBytes(3).readUIntBE(0, 3);
});

afterEach(async () => {
  for (const app of apps) await app.close();
  apps = [];
  await clusters?.close();
  clusters = undefined;
  redis.disconnect();
  await github.close();
});

/** Starts simulated clusters and the App against them. */
async function start(
  options: { clusters?: Record<string, Omit<SimulatorOptions, 'port' | 'clusterName'>>; env?: Record<string, string | undefined> } = {},
): Promise<TestApp> {
  clusters = await startClusters(options.clusters ?? { lab: {} });
  const app = await startTestApp({
    github,
    redisUrl: inject('redisUrl'),
    env: { ...clusters.env, WORKER_CONCURRENCY: '1', ...options.env },
  });
  apps.push(app);
  return app;
}

/** Runs a scheduled drift report and waits for it; resolves with what it did. */
async function scheduledRun(app: TestApp): Promise<unknown> {
  return app.driftDone(await app.addDrift({ installationId, repo, trigger: 'schedule' }));
}

/** The first-seen times the App keeps for the repository. */
function firstSeen(app: TestApp): Promise<Record<string, string>> {
  return redis.hgetall(`${app.prefix}:state:drift:${repo.id}:seen`);
}

describe('the drift report issue', () => {
  it('drift appears: issue created; the same drift: no edit; fixed: closed with a comment; returns: reopened', async () => {
    const app = await start();
    const lab = clusters!.sims.lab!;
    seedGuests(lab);
    const sha = newSha();

    // The estate matches: the repository's issues are searched once (nothing is known yet), no issue is made.
    expectHead(github, repo, sha);
    await expectArchive(github, repo, sha, driftSpecs());
    expectIssueSearch(github, repo, []);
    expect(await scheduledRun(app)).toBe('none');
    github.verify();

    // An operator raises web-01's memory in the GUI: the issue is created, with how to settle it either way.
    lab.sim.operatorEdit(100101, { set: { memory: 4096 } });
    expectHead(github, repo, sha);
    const created = expectIssueCreated(github, repo, 17);
    expect(await scheduledRun(app)).toBe('created');
    github.verify();
    const body = await created.body();
    expect(body).toContain('### pve-gitops drift report');
    expect(body).toContain('**1 drifted guest**');
    expect(body).toMatch(/\*\*lab\/web-01\*\* \(100101\) on pve-01 · `vms\/web\.yaml`/);
    expect(body).toMatch(/\| `memory` \| `2048` \| `4096` \| \d{4}-\d\d-\d\d \d\d:\d\d UTC \| set `memory: 4096` in `vms\/web\.yaml:7` \|/);
    expect(body).toContain('**Keep git:** `pve-gitops apply` on the default branch');
    expect(body).not.toContain('db-01');
    const since = (await firstSeen(app))['lab/100101#memory'];
    expect(since).toMatch(/^\d{4}-\d\d-\d\dT/);

    // The same drift again (a later run, same commit, archive cached): nothing is written to GitHub.
    expectHead(github, repo, sha);
    expect(await scheduledRun(app)).toBe('unchanged');
    github.verify();
    expect((await firstSeen(app))['lab/100101#memory']).toBe(since);

    // Fixed: the issue is closed with a comment saying why, and the finding's history is dropped.
    lab.sim.operatorEdit(100101, { set: { memory: 2048 } });
    expectHead(github, repo, sha);
    const closed = expectIssueClosed(github, repo, 17);
    expect(await scheduledRun(app)).toBe('closed');
    github.verify();
    expect(await closed.commentBody()).toMatch(/^No drift left: every owned guest matches the default branch at `[0-9a-f]{12}`/);
    expect(await firstSeen(app)).toEqual({});

    // Back again: the same issue is reopened with the new finding.
    lab.sim.operatorEdit(100101, { set: { cores: 8 } });
    expectHead(github, repo, sha);
    const reopened = expectIssueEdited(github, repo, 17, 'open');
    expect(await scheduledRun(app)).toBe('reopened');
    github.verify();
    const again = await reopened.body();
    expect(again).toMatch(/\| `cores` \| `2` \| `8` \|/);
    expect(again).not.toContain('`memory`');
  });

  it('finds its issue by label and marker when nothing is remembered, and edits it', async () => {
    const app = await start();
    const lab = clusters!.sims.lab!;
    seedGuests(lab);
    lab.sim.operatorEdit(100102, { delete: ['cores'] });
    const sha = newSha();
    expectHead(github, repo, sha);
    await expectArchive(github, repo, sha, driftSpecs());
    // A person's issue quoting the marker is not the App's; the App's open one (by a Bot) is.
    const marker = '<!-- pve-gitops:drift-report content=0123 -->';
    expectIssueSearch(github, repo, [
      { number: 3, state: 'open', user: { type: 'User' }, body: `${marker}\nquoted`, updated_at: '2030-01-02T00:00:00Z' },
      { number: 9, state: 'open', user: { type: 'Bot' }, body: `${marker}\nold report`, updated_at: '2030-01-01T00:00:00Z' },
    ]);
    const edited = expectIssueEdited(github, repo, 9);
    expect(await scheduledRun(app)).toBe('updated');
    github.verify();
    // A key the spec sets and the guest lost: remove it from the spec to keep the live state.
    expect(await edited.body()).toMatch(/\| `cores` \| `2` \| \*\(unset\)\* \| [^|]+ \| remove `cores` from `vms\/db\.yaml:8` \|/);
  });
});

describe('the allow-list', () => {
  it('allow-listed drift is not reported (no issue); an expired entry is reported, and what it covered is drift again', async () => {
    const app = await start();
    const lab = clusters!.sims.lab!;
    seedGuests(lab);
    lab.sim.operatorEdit(100101, { set: { memory: 4096 } });
    const allowWeb = [
      'drift:',
      '  allow:',
      '    - guest: lab/web-01',
      '      keys: [memory]',
      '      reason: load test until the end of the quarter',
      '      expires: 2999-12-31',
    ];
    const sha1 = newSha();
    expectHead(github, repo, sha1);
    await expectArchive(github, repo, sha1, driftSpecs({ '.github/pve-gitops.yml': `${allowWeb.join('\n')}\n` }));
    expectIssueSearch(github, repo, []);
    expect(await scheduledRun(app)).toBe('none');
    github.verify();

    // db-01's cores change too, allowed by an entry that expired: reported, with the entry.
    lab.sim.operatorEdit(100102, { set: { cores: 4 } });
    const expired = [
      '    - guest: lab/100102',
      '      keys: [cores]',
      '      reason: temporary resize for the migration',
      '      expires: 2020-01-31',
    ];
    const sha2 = newSha();
    expectHead(github, repo, sha2);
    await expectArchive(github, repo, sha2, driftSpecs({ '.github/pve-gitops.yml': `${[...allowWeb, ...expired].join('\n')}\n` }));
    const created = expectIssueCreated(github, repo, 4);
    expect(await scheduledRun(app)).toBe('created');
    github.verify();
    const body = await created.body();
    expect(body).toMatch(
      /\| `cores` \| `2` \| `4` \| [^|]+ \(allowed until 2020-01-31, expired\) \| set `cores: 4` in `vms\/db\.yaml:8` \|/,
    );
    expect(body).toContain('#### ⌛ 1 expired allow-list entry');
    expect(body).toContain('| `lab/100102` | `cores` | temporary resize for the migration | 2020-01-31 | 1 |');
    expect(body).toContain('_1 intended difference allowed by `.github/pve-gitops.yml`, not listed._');
    expect(body).not.toContain('web-01');
  });

  it('an invalid allow-list is reported in the issue with its file and problem', async () => {
    const app = await start();
    seedGuests(clusters!.sims.lab!);
    const sha = newSha();
    expectHead(github, repo, sha);
    await expectArchive(
      github,
      repo,
      sha,
      driftSpecs({
        '.github/pve-gitops.yml': 'drift:\n  allow:\n    - guest: lab/web-01\n      keys: [memory]\n      expires: 2030-02-30\n',
      }),
    );
    expectIssueSearch(github, repo, []);
    const created = expectIssueCreated(github, repo, 5);
    expect(await scheduledRun(app)).toBe('created');
    github.verify();
    const body = await created.body();
    expect(body).toContain('**The App config of the default branch is invalid**');
    expect(body).toContain('`.github/pve-gitops.yml`: .github/pve-gitops.yml: drift.allow.0.reason:');
  });
});

describe('clusters that cannot be read', () => {
  it('reports an unreadable cluster as not read — never as no guests or drift — and keeps its findings’ first-seen times', async () => {
    const app = await start({ clusters: { lab: {}, edge: {} } });
    const { lab, edge } = clusters!.sims;
    seedGuests(lab!);
    edge!.sim.addGuest({
      vmid: 200201,
      type: 'qemu',
      node: 'pve-01',
      config: { name: 'edge-01', memory: 4096, cores: 2, net0: 'virtio=BC:24:11:00:02:01,bridge=vmbr0', tags: 'pve-gitops' },
    });
    const edgeCluster = clusterDoc('edge').replace('{ lower: 100000, upper: 199999 }', '{ lower: 200000, upper: 299999 }');
    const files = driftSpecs({ 'edge/cluster.yaml': edgeCluster, 'edge/edge-01.yaml': vmDoc('edge-01', 200201, {}, 'edge') });
    const sha = newSha();

    // edge-01 drifted (memory 4096, the spec says 2048).
    expectHead(github, repo, sha);
    await expectArchive(github, repo, sha, files);
    expectIssueSearch(github, repo, []);
    const created = expectIssueCreated(github, repo, 8);
    expect(await scheduledRun(app)).toBe('created');
    github.verify();
    expect(await created.body()).toContain('**edge/edge-01** (200201)');
    const since = (await firstSeen(app))['edge/200201#memory'];
    expect(since).toBeDefined();

    // The read token of edge stops working: edge is reported as not read, edge-01 neither as drifted nor as missing.
    const audit = edge!.sim.tokens.get(edge!.auditToken.slice(0, edge!.auditToken.lastIndexOf('=')))!;
    edge!.sim.tokens.add({ ...audit, secret: 'revoked' });
    expectHead(github, repo, sha);
    const unread = expectIssueEdited(github, repo, 8);
    expect(await scheduledRun(app)).toBe('updated');
    github.verify();
    const body = await unread.body();
    expect(body).toContain('**1 cluster not read**');
    expect(body).toMatch(/\| edge \| \*\*not read\*\* \| – \|/);
    expect(body).toMatch(/- \*\*edge\*\*: cluster 'edge' could not be read: Authentication failed.*Nothing on it was checked/);
    expect(body).toMatch(/\| lab \| yes \| 2 \| 0 \|/);
    expect(body).not.toContain('edge-01');
    expect(body).not.toContain('missing');
    expect((await firstSeen(app))['edge/200201#memory']).toBe(since);

    // Readable again: edge-01's drift is back, seen since the first time, not since now.
    edge!.sim.tokens.add(audit);
    expectHead(github, repo, sha);
    const back = expectIssueEdited(github, repo, 8);
    expect(await scheduledRun(app)).toBe('updated');
    github.verify();
    expect(await back.body()).toContain('**edge/edge-01** (200201)');
    expect((await firstSeen(app))['edge/200201#memory']).toBe(since);
  });
});

/** Resolves once `check` is true, checking again whenever Redis answered (no fixed sleeps). */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('one drift run per repository', () => {
  it('two workers never run one repository’s drift job at once: the second waits for the first', async () => {
    clusters = await startClusters({ lab: {} });
    seedGuests(clusters.sims.lab!);
    const prefix = `t-${randomBytes(6).toString('hex')}`;
    for (let i = 0; i < 2; i++) {
      apps.push(
        await startTestApp({
          github,
          redisUrl: inject('redisUrl'),
          role: 'worker',
          env: { ...clusters.env, WORKER_CONCURRENCY: '1', REDIS_PREFIX: prefix },
        }),
      );
    }
    const [one] = apps as [TestApp, TestApp];
    const sha = newSha();
    // The first run to ask for the branch head is held there until the test lets it go.
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let firstAsked: () => void = () => {};
    const asked = new Promise<void>((resolve) => (firstAsked = resolve));
    let heads = 0;
    github.expect({
      method: 'GET',
      path: `/repos/${repo.owner}/${repo.name}/commits`,
      times: 2,
      reply: async () => {
        heads += 1;
        if (heads === 1) {
          firstAsked();
          await gate;
        }
        return { json: [{ sha }], headers: RATE_LIMIT_HEADERS };
      },
    });
    // Each worker process reads the archive once; the issue search happens once (the second run knows the answer).
    await expectArchive(github, repo, sha, driftSpecs());
    await expectArchive(github, repo, sha, driftSpecs());
    expectIssueSearch(github, repo, []);

    const first = await one.addDrift({ installationId, repo, trigger: 'command' });
    await asked;
    const second = await one.addDrift({ installationId, repo, trigger: 'command' });
    // The second job is taken by the other worker and waits for the lock: its attempts count up the fence.
    const fence = `${prefix}:state:lock:drift:${repo.id}:fence`;
    await until(async () => (await one.driftQueue.getJobState(second)) === 'active' && Number(await redis.get(fence)) >= 3);
    expect(heads).toBe(1);

    release();
    expect(await one.driftDone(first)).toBe('none');
    expect(await one.driftDone(second)).toBe('none');
    github.verify();
    // Every request of one run came before every request of the other (each process has its own token).
    const runRequests = github.requests.filter((r: RecordedRequest) => r.path.startsWith('/repos/'));
    const tokens = runRequests.map((r) => String(r.headers.authorization));
    const switches = tokens.filter((token, i) => i > 0 && token !== tokens[i - 1]).length;
    expect(new Set(tokens).size).toBe(2);
    expect(switches).toBe(1);
  });
});

describe('drift schedules', () => {
  it('schedules each installed repository at start, runs it, and follows installation events', async () => {
    clusters = await startClusters({ lab: {} });
    seedGuests(clusters.sims.lab!);
    const sha = newSha();
    github.expect({
      method: 'GET',
      path: '/app/installations',
      reply: { json: [{ id: installationId, account: { login: 'acme' }, suspended_at: null }] },
    });
    github.expect({
      method: 'GET',
      path: '/installation/repositories',
      reply: { json: { total_count: 1, repositories: [{ id: repo.id, name: repo.name, owner: { login: repo.owner }, archived: false }] } },
    });
    // A new schedule runs at once: the first report comes soon after the App is installed.
    expectHead(github, repo, sha);
    await expectArchive(github, repo, sha, driftSpecs());
    expectIssueSearch(github, repo, []);
    const app = await startTestApp({
      github,
      redisUrl: inject('redisUrl'),
      env: { ...clusters.env, WORKER_CONCURRENCY: '1', DRIFT_INTERVAL: '1h' },
    });
    apps.push(app);
    await app.driftCompleted((job) => job.name === 'sync');
    const run = await app.driftCompleted((job) => job.name === 'drift' && job.data.repo?.id === repo.id);
    expect(run.returnvalue).toBe('none');
    expect(run.data).toEqual({ kind: 'drift', installationId, repo, trigger: 'schedule' });
    github.verify();
    const [scheduler] = await app.driftQueue.getJobSchedulers();
    expect(scheduler).toMatchObject({ key: `drift-repo-${repo.id}`, every: 3600_000 });
    expect(scheduler?.next).toBeGreaterThan(Date.now() + 3000_000);

    // The repository leaves the installation: its schedule goes.
    const removed = await app.deliver({
      event: 'installation_repositories',
      payload: installationRepositoriesEvent({ action: 'removed', installationId, removed: [repo] }),
    });
    expect(removed.status).toBe(200);
    expect(await app.driftQueue.getJobSchedulers()).toEqual([]);

    // Installed on another repository without specs (empty): scheduled, run once, nothing reported.
    const other: TestRepo = { id: repo.id + 1, owner: 'acme', name: 'empty' };
    github.expect({
      method: 'GET',
      path: '/repos/acme/empty/commits',
      reply: { status: 409, json: { message: 'Git Repository is empty.' } },
    });
    const installed = await app.deliver({
      event: 'installation',
      payload: installationEvent({ action: 'created', installationId, repos: [other] }),
    });
    expect(installed.status).toBe(200);
    const empty = await app.driftCompleted((job) => job.name === 'drift' && job.data.repo?.id === other.id);
    expect(empty.returnvalue).toBe('skipped-no-specs');
    expect((await app.driftQueue.getJobSchedulers()).map((s) => s.key)).toEqual([`drift-repo-${other.id}`]);

    // Uninstalled: no schedule left.
    await app.deliver({ event: 'installation', payload: installationEvent({ action: 'deleted', installationId, repos: [other] }) });
    expect(await app.driftQueue.getJobSchedulers()).toEqual([]);
    github.verify();
  });
});

describe('/pve drift', () => {
  it('from a writer on an issue: reacts, runs now and answers with the report; from a reader: refused', async () => {
    const app = await start();
    const lab = clusters!.sims.lab!;
    seedGuests(lab);
    lab.sim.operatorEdit(100101, { set: { memory: 4096 } });
    const sha = newSha();

    expectAcceptedCommand(github, repo, 'alice', 7001);
    expectHead(github, repo, sha);
    await expectArchive(github, repo, sha, driftSpecs());
    expectIssueSearch(github, repo, []);
    expectIssueCreated(github, repo, 41);
    const answer = expectReply(github, repo, 40, /The drift report is #41\./);
    const asked = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 40, onIssue: true, body: '/pve drift', author: 'alice', commentId: 7001 }),
    });
    expect(asked.status).toBe(200);
    await app.jobDone('command', asked.deliveryId);
    expect(await app.driftDone(`drift-${asked.deliveryId}`)).toBe('created');
    github.verify();
    expect(await answer.body()).toMatch(/^Drift checked against the default branch at `[0-9a-f]{7}`: 1 drifted, 0 orphaned/);

    // A reader is told why not; nothing runs.
    github.expect({
      method: 'GET',
      path: `/repos/acme/estate/collaborators/mallory/permission`,
      reply: { json: { permission: 'read', role_name: 'triage' } },
    });
    const refusal = expectReply(github, repo, 42, /was not run: pve-gitops commands need write/);
    const refused = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 42, onIssue: true, body: '/pve drift', author: 'mallory' }),
    });
    await app.jobDone('command', refused.deliveryId);
    await refusal.created.done;
    expect(await app.driftQueue.getJob(`drift-${refused.deliveryId}`)).toBeUndefined();

    // Other commands on an issue (not a pull request) are not commands at all: nothing is enqueued.
    const plan = await app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 42, onIssue: true, body: '/pve plan', author: 'alice' }),
    });
    expect(plan.status).toBe(200);
    expect(await app.job('command', plan.deliveryId)).toBeUndefined();
    github.verify();
  });
});
