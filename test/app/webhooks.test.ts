import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { pullRequestEvent, type TestRepo } from './deliveries.js';
import { GitHubDouble } from './github-double.js';
import { startTestApp, type TestApp } from './harness.js';

const sha = (): string => randomBytes(20).toString('hex');

let github: GitHubDouble;
let app: TestApp;
let repo: TestRepo;
let installationId: number;

beforeEach(async () => {
  github = await GitHubDouble.start();
  // The web role alone: jobs stay in the queue where the test can look at them.
  app = await startTestApp({ github, redisUrl: inject('redisUrl'), role: 'web' });
  repo = { id: 1_000_000 + randomBytes(3).readUIntBE(0, 3), owner: 'acme', name: 'estate' };
  installationId = 1 + randomBytes(3).readUIntBE(0, 3);
});

afterEach(async () => {
  await app.close();
  await github.close();
});

describe('webhooks', () => {
  it('answers a signed pull_request delivery at once and enqueues one plan job with identifiers only', async () => {
    const headSha = sha();
    const baseSha = sha();
    const payload = pullRequestEvent({ action: 'opened', installationId, repo, number: 7, headSha, baseSha });
    const result = await app.deliver({ event: 'pull_request', payload });
    expect(result.status).toBe(200);
    const job = await app.job('plan', result.deliveryId);
    expect(job?.data).toEqual({
      kind: 'plan',
      installationId,
      repo,
      deliveryId: result.deliveryId,
      pr: 7,
      headSha,
      baseSha,
      baseRef: payload.pull_request.base.ref,
      draft: false,
      reason: 'opened',
    });
    // The web role talks to GitHub only through the queue's worker: no request at all here.
    expect(github.requests).toEqual([]);
    github.verify();
  });

  it('refuses a delivery with a bad signature (400) and enqueues nothing', async () => {
    const payload = pullRequestEvent({ action: 'opened', installationId, repo, number: 7, headSha: sha(), baseSha: sha() });
    const result = await app.deliver({ event: 'pull_request', payload, secret: 'not-the-secret' });
    expect(result.status).toBe(400);
    expect(result.body).toMatch(/signature does not match/);
    expect(await app.jobs()).toEqual([]);
    github.verify();
  });

  it('refuses a delivery without a signature (400) and enqueues nothing', async () => {
    const payload = pullRequestEvent({ action: 'opened', installationId, repo, number: 7, headSha: sha(), baseSha: sha() });
    const result = await app.deliver({ event: 'pull_request', payload, secret: null });
    expect(result.status).toBe(400);
    expect(result.body).toMatch(/x-hub-signature-256/);
    expect(await app.jobs()).toEqual([]);
  });
});
