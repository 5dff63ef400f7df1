import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { MAX_WEBHOOK_BYTES } from '../../src/server/webhook-gate.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { pullRequestEvent, signBody, type TestRepo } from './deliveries.js';
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

  it('answers a signed body that is not JSON 400, as Probot does, and a GET of the webhook path 404', async () => {
    const body = '{"action": "opened"';
    const result = await fetch(`${app.url}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'pull_request',
        'x-github-delivery': 'c0ffee00-0000-0000-0000-000000000001',
        'x-hub-signature-256': signBody(app.webhookSecret, body),
      },
      body,
    });
    expect(result.status).toBe(400);
    expect(await result.json()).toEqual({ error: 'SyntaxError: Invalid JSON' });
    const get = await fetch(`${app.url}/api/github/webhooks`);
    expect(get.status).toBe(404);
    expect(await get.json()).toEqual({ error: 'Unknown route: GET /api/github/webhooks' });
    expect(await app.jobs()).toEqual([]);
  });

  it('refuses a delivery without a signature (400) and enqueues nothing', async () => {
    const payload = pullRequestEvent({ action: 'opened', installationId, repo, number: 7, headSha: sha(), baseSha: sha() });
    const result = await app.deliver({ event: 'pull_request', payload, secret: null });
    expect(result.status).toBe(400);
    expect(result.body).toMatch(/x-hub-signature-256/);
    expect(await app.jobs()).toEqual([]);
  });
});

/** What the App answered to a body streamed at it, and how much of the body had been sent by then. */
interface StreamedAnswer {
  status: number;
  body: string;
  /** Bytes the client had handed to its socket when the answer's headers arrived. */
  sentWhenAnswered: number;
  /** Whether the client had sent the whole body by then. */
  finished: boolean;
  /**
   * The connection was reset before the answer could be read: the App closes a refused upload's
   * connection with unread bytes in flight, and the peer's reset may overtake the answer on the
   * wire. The refusal is then read from the App's log.
   */
  reset: boolean;
}

/**
 * POSTs `total` bytes, chunked (no Content-Length), as fast as the App takes them, and stops
 * sending when the answer comes: a server that answers only after reading everything is seen
 * answering with `finished` true.
 */
function streamBody(url: string, headers: Record<string, string>, total: number, fill = 'x'): Promise<StreamedAnswer> {
  const chunk = Buffer.alloc(64 * 1024, fill);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = request(`${url}/api/github/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } });
    req.on('response', (res) => {
      answered = true;
      const sentWhenAnswered = sent;
      const finished = sent >= total;
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString(), sentWhenAnswered, finished, reset: false });
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (answered) return;
      // Reset while still sending: the App stopped reading and closed (it never read to the end).
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') {
        answered = true;
        resolve({ status: 0, body: '', sentWhenAnswered: sent, finished: sent >= total, reset: true });
      } else reject(error);
    });
    const pump = (): void => {
      while (!answered && sent < total) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

const refusals = (logs: string): Record<string, unknown>[] =>
  logs
    .split('\n')
    .filter((line) => line.includes('"msg":"webhook delivery refused"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('hostile webhook requests', () => {
  const headers = (signature: string): Record<string, string> => ({
    'x-github-event': 'pull_request',
    'x-github-delivery': 'c0ffee00-0000-0000-0000-000000000000',
    'x-hub-signature-256': signature,
  });
  // Twice GitHub's cap: the App must answer long before the sender is done.
  const total = 2 * MAX_WEBHOOK_BYTES;

  it('answers 413 to an unsigned chunked body over GitHub’s 25 MB cap once it read the cap, and keeps serving', async () => {
    const answer = await streamBody(app.url, headers(`sha256=${'0'.repeat(64)}`), total);
    if (!answer.reset) expect(answer.status).toBe(413);
    expect(answer.finished).toBe(false);
    const [refusal] = refusals(app.logs());
    expect(refusal).toMatchObject({ status: 413, event: 'pull_request', delivery: 'c0ffee00-0000-0000-0000-000000000000' });
    // It stopped reading one chunk past the cap: the rest never reached the heap.
    expect(refusal?.bytesRead).toBeGreaterThan(MAX_WEBHOOK_BYTES);
    expect(refusal?.bytesRead).toBeLessThanOrEqual(MAX_WEBHOOK_BYTES + 64 * 1024);
    expect(answer.sentWhenAnswered).toBeLessThan(total);
    // The process is still there and answers: health and a real delivery.
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    const payload = pullRequestEvent({ action: 'opened', installationId, repo, number: 8, headSha: sha(), baseSha: sha() });
    expect((await app.deliver({ event: 'pull_request', payload })).status).toBe(200);
  });

  it('refuses a malformed signature header before reading the body', async () => {
    const answer = await streamBody(app.url, headers('sha1=deadbeef'), total);
    if (!answer.reset) {
      expect(answer.status).toBe(400);
      expect(answer.body).toMatch(/signature does not match/);
    }
    expect(answer.finished).toBe(false);
    expect(refusals(app.logs())).toEqual([
      expect.objectContaining({ status: 400, bytesRead: 0, reason: 'the signature header is not sha256=<64 hex digits>' }),
    ]);
  });

  it('logs a refused delivery by its size and reason, never its body', async () => {
    const marker = `secret-looking-${randomBytes(8).toString('hex')}`;
    const payload = pullRequestEvent({ action: 'opened', installationId, repo, number: 7, headSha: sha(), baseSha: sha() });
    payload.pull_request.body = marker;
    const result = await app.deliver({ event: 'pull_request', payload, secret: 'not-the-secret' });
    expect(result.status).toBe(400);
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    expect(refusals(app.logs())).toEqual([
      expect.objectContaining({ status: 400, reason: 'signature does not match', bytesRead: bytes, delivery: result.deliveryId }),
    ]);
    expect(app.logs()).not.toContain(marker);
    expect(await app.jobs()).toEqual([]);
  });

  it('logs no payload when a signed delivery cannot be handled either', async () => {
    // An App whose Redis is gone: the handler fails and the delivery is answered 500.
    const redis = await startRedisServer();
    const down = await startTestApp({ github, redisUrl: redis.url, role: 'web' });
    try {
      await redis.stop();
      const marker = `secret-looking-${randomBytes(8).toString('hex')}`;
      const payload = pullRequestEvent({ action: 'opened', installationId, repo, number: 7, headSha: sha(), baseSha: sha() });
      payload.pull_request.body = marker;
      const result = await down.deliver({ event: 'pull_request', payload });
      expect(result.status).toBe(500);
      expect(down.logs()).toMatch(/"level":50/);
      expect(down.logs()).toContain(result.deliveryId);
      expect(down.logs()).not.toContain(marker);
    } finally {
      await down.close();
      await redis.stop();
    }
  });

  it('checks the signature of the bytes as sent', async () => {
    // Signed over other bytes than sent: the same length, one byte changed.
    const body = JSON.stringify(pullRequestEvent({ action: 'opened', installationId, repo, number: 9, headSha: sha(), baseSha: sha() }));
    const signature = signBody(app.webhookSecret, body.replace('"opened"', '"closed"'));
    const result = await fetch(`${app.url}/api/github/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers(signature) },
      body,
    });
    expect(result.status).toBe(400);
    expect(await app.jobs()).toEqual([]);
  });
});
