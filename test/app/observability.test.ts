import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { startClusters, type TestClusters } from './clusters.js';
import { examplePayload, issueCommentEvent, type TestRepo } from './deliveries.js';
import { driftSpecs, expectHead, expectIssueCreated, expectIssueSearch, RATE_LIMIT_HEADERS, seedGuests } from './drift-flow.js';
import { GitHubDouble } from './github-double.js';
import { startTestApp, type TestApp } from './harness.js';
import { histogramCount, type MetricFamily, scrape, value } from './metrics.js';
import { expectArchive, expectReply } from './plan-flow.js';
import { newSha } from './spec-repo.js';

let github: GitHubDouble;
let clusters: TestClusters;
let app: TestApp | undefined;
let repo: TestRepo;
let installationId: number;

beforeEach(async () => {
  github = await GitHubDouble.start();
  clusters = await startClusters({ lab: {} });
  seedGuests(clusters.sims.lab!);
  repo = { id: 1_000_000 + randomBytes(3).readUIntBE(0, 3), owner: 'acme', name: 'estate' };
  installationId = 1 + randomBytes(3).readUIntBE(0, 3);
});

afterEach(async () => {
  await app?.close();
  app = undefined;
  await clusters.close();
  await github.close();
});

async function start(env: Record<string, string> = {}): Promise<TestApp> {
  app = await startTestApp({ github, redisUrl: inject('redisUrl'), env: { ...clusters.env, WORKER_CONCURRENCY: '1', ...env } });
  return app;
}

/** Declares what `/pve drift` by a writer on issue 40 asks of GitHub, with drift on web-01 (issue #41 created). */
async function expectDriftCommand(sha: string, commentId: number): Promise<void> {
  github.expect({
    method: 'GET',
    path: '/repos/acme/estate/collaborators/alice/permission',
    reply: { json: { permission: 'admin', role_name: 'admin' }, headers: RATE_LIMIT_HEADERS },
  });
  github.expect({ method: 'POST', path: `/repos/acme/estate/issues/comments/${commentId}/reactions`, reply: { status: 201, json: {} } });
  expectHead(github, repo, sha);
  await expectArchive(github, repo, sha, driftSpecs());
  expectIssueSearch(github, repo, []);
  expectIssueCreated(github, repo, 41);
  expectReply(github, repo, 40, /The drift report is #41\./);
}

/** Every label value of every sample. */
function labelValues(families: readonly MetricFamily[]): string[] {
  return families.flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {})));
}

describe('/metrics', () => {
  it("parses as Prometheus' text format, and its counters move as deliveries, jobs and Proxmox requests happen", async () => {
    const running = await start();
    const metricsUrl = `${running.url}/metrics`;
    const before = (await scrape(metricsUrl)).families;
    // Present before anything happened, so dashboards show zeros.
    expect(value(before, 'pve_gitops_applies_total', { outcome: 'conflict' })).toBe(0);
    expect(before.find((f) => f.name === 'pve_gitops_applies_total')?.type).toBe('COUNTER');
    expect(value(before, 'pve_gitops_proxmox_requests_total', { cluster: 'lab', method: 'GET', status: '200' })).toBe(0);

    // A delivery that fails the signature, one the App has no handler for, and `/pve drift` by a writer.
    const bad = await running.deliver({ event: 'issue_comment', payload: examplePayload('issue_comment', 'created'), secret: 'wrong' });
    expect(bad.status).toBe(400);
    const ignored = await running.deliver({ event: 'issues', payload: examplePayload('issues', 'opened') });
    expect(ignored.status).toBe(200);
    clusters.sims.lab!.sim.operatorEdit(100101, { set: { memory: 4096 } });
    await expectDriftCommand(newSha(), 7002);
    const asked = await running.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 40, onIssue: true, body: '/pve drift', author: 'alice', commentId: 7002 }),
    });
    await running.jobDone('command', asked.deliveryId);
    await running.driftDone(`drift-${asked.deliveryId}`);
    github.verify();

    const { families, text } = await scrape(metricsUrl);
    expect(value(families, 'pve_gitops_webhook_deliveries_total', { event: 'issue_comment', outcome: 'rejected' })).toBe(1);
    expect(value(families, 'pve_gitops_webhook_deliveries_total', { event: 'issues', outcome: 'ignored' })).toBe(1);
    expect(value(families, 'pve_gitops_webhook_deliveries_total', { event: 'issue_comment', outcome: 'enqueued' })).toBe(1);
    expect(value(families, 'pve_gitops_jobs', { queue: 'plan', state: 'completed' })).toBe(1);
    expect(value(families, 'pve_gitops_jobs', { queue: 'drift', state: 'completed' })).toBe(1);
    expect(histogramCount(text, 'pve_gitops_job_duration_seconds', { queue: 'drift', kind: 'drift', outcome: 'completed' })).toBe(1);
    expect(histogramCount(text, 'pve_gitops_job_duration_seconds', { queue: 'plan', kind: 'command', outcome: 'completed' })).toBe(1);
    // The listing and two guest reads, at least; every one counted by the Proxmox client's observer.
    const pveRequests = value(families, 'pve_gitops_proxmox_requests_total', { cluster: 'lab', method: 'GET', status: '200' });
    expect(pveRequests).toBeGreaterThanOrEqual(3);
    expect(pveRequests).toBe(clusters.sims.lab!.sim.stats().requests.total);
    expect(value(families, 'pve_gitops_drifted_guests', { repository: 'acme/estate', cluster: 'lab' })).toBe(1);
    expect(value(families, 'pve_gitops_github_rate_limit_remaining', { installation: String(installationId), resource: 'core' })).toBe(
      4987,
    );
    expect(families.find((f) => f.name === 'pve_gitops_job_duration_seconds')?.type).toBe('HISTOGRAM');

    // No credential, URL or address in any label.
    const secrets = [clusters.sims.lab!.token, clusters.sims.lab!.auditToken, running.webhookSecret, ...github.tokens.keys()];
    for (const label of labelValues(families)) {
      expect(label).not.toMatch(/https?:|127\.0\.0\.1|=/);
      for (const secret of secrets) expect(label).not.toContain(secret);
    }
    for (const secret of secrets) expect(text).not.toContain(secret);

    // Another run moves the Proxmox counter again.
    expectHead(github, repo, newSha());
    github.expect({ method: 'GET', path: /^\/repos\/acme\/estate\/tarball\//, reply: { status: 404, json: { message: 'Not Found' } } });
    await running.driftDone(await running.addDrift({ installationId, repo, trigger: 'schedule' })).catch(() => undefined);
    const after = await scrape(metricsUrl);
    expect(value(after.families, 'pve_gitops_jobs', { queue: 'drift', state: 'failed' })).toBe(1);
    expect(histogramCount(after.text, 'pve_gitops_job_duration_seconds', { queue: 'drift', kind: 'drift', outcome: 'failed' })).toBe(1);
  });

  it('is served on its own port when METRICS_PORT is set, and not on the webhook port', async () => {
    const running = await start({ METRICS_PORT: '0', METRICS_PATH: '/internal/metrics' });
    expect(running.server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const { families } = await scrape(`${running.server.metricsUrl}/internal/metrics`);
    expect(families.some((f) => f.name === 'pve_gitops_webhook_deliveries_total')).toBe(true);
    expect((await fetch(`${running.url}/internal/metrics`)).status).toBe(404);
    expect((await fetch(`${running.url}/metrics`)).status).toBe(404);
  });
});

describe('logs', () => {
  it('carry delivery, repository, pull request or issue, job and guest on the lines that concern them, and never a credential', async () => {
    const running = await start({ LOG_LEVEL: 'trace' });
    clusters.sims.lab!.sim.operatorEdit(100101, { set: { memory: 4096 } });
    await expectDriftCommand(newSha(), 7003);
    const asked = await running.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId, repo, number: 40, onIssue: true, body: '/pve drift', author: 'alice', commentId: 7003 }),
    });
    await running.jobDone('command', asked.deliveryId);
    await running.driftDone(`drift-${asked.deliveryId}`);
    // A delivery with a wrong signature: the secret that would have matched must not be logged either.
    await running.deliver({ event: 'issue_comment', payload: examplePayload('issue_comment', 'created'), secret: 'wrong' });
    github.verify();

    const text = running.logs();
    const lines = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const commandLines = lines.filter((l) => l.job === `command-${asked.deliveryId}`);
    const driftLines = lines.filter((l) => l.job === `drift-${asked.deliveryId}`);
    expect(commandLines.length).toBeGreaterThan(0);
    expect(driftLines.length).toBeGreaterThan(3);
    for (const line of [...commandLines, ...driftLines]) {
      expect(line).toMatchObject({ delivery: asked.deliveryId, repo: 'acme/estate', pr: 40 });
    }
    // Proxmox requests of the run are the run's lines too.
    expect(driftLines.some((l) => l.msg === 'proxmox request' && l.cluster === 'lab')).toBe(true);
    // The finding names its guest.
    const finding = driftLines.find((l) => l.msg === 'drift');
    expect(finding).toMatchObject({ guest: 'lab/web-01', vmid: 100101, keys: ['memory'] });
    // The webhook's own lines name the delivery (Probot's `id`).
    expect(lines.some((l) => l.id === asked.deliveryId && typeof l.msg === 'string')).toBe(true);

    const lab = clusters.sims.lab!;
    const pem = github.app.privateKeyPem.split('\n').filter((l) => l && !l.startsWith('-----'));
    const secrets = [
      running.webhookSecret,
      lab.token.slice(lab.token.lastIndexOf('=') + 1),
      lab.auditToken.slice(lab.auditToken.lastIndexOf('=') + 1),
      ...github.tokens.keys(),
      ...pem,
    ];
    expect(github.tokens.size).toBeGreaterThan(0);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
