/**
 * Check runs over GitHub's text limits, sent by the App's check-run calls through Probot's Octokit
 * to the GitHub double, which refuses as GitHub does (422 for a summary over 65,535 UTF-8 bytes or
 * an annotation message over 64 KB): the App cuts them on a character boundary and GitHub takes them.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { Probot, type ProbotOctokit } from 'probot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { completeCheckRun, startCheckRun, updateCheckRun } from '../../src/github/check-runs.js';
import { GitHubDouble, type RecordedRequest } from './github-double.js';

let github: GitHubDouble;
let octokit: ProbotOctokit;
const target = { owner: 'acme', repo: 'estate', headSha: 'a'.repeat(40) };

beforeEach(async () => {
  github = await GitHubDouble.start();
  const probot = new Probot({
    appId: github.app.id,
    privateKey: github.app.privateKeyPem,
    secret: 'limits',
    baseUrl: `${github.url}/api/v3`,
    log: pino({ level: 'silent' }),
  });
  octokit = await probot.auth(1 + randomBytes(3).readUIntBE(0, 3));
});

afterEach(async () => {
  await github.close();
});

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A summary of `unit` repeated past every limit: 70,000 characters. */
const long = (unit: string) => unit.repeat(70_000 / unit.length);

function output(request: RecordedRequest): { title: string; summary: string; annotations?: { message: string }[] } {
  return (request.body as { output: { title: string; summary: string; annotations?: { message: string }[] } }).output;
}

describe('check run text within GitHub limits', () => {
  it.each([
    ['a plain-text', 'x'],
    ['a CJK', '日本語'],
    ['an emoji', '🚀'],
  ])('%s summary is cut to at most 65,535 UTF-8 bytes when the run is started, updated and completed', async (_name, unit) => {
    const created = github.expect({
      method: 'POST',
      path: '/repos/acme/estate/check-runs',
      reply: { status: 201, json: { id: 7, html_url: 'https://github.example/acme/estate/runs/7' } },
    });
    const updated = github.expect({ method: 'PATCH', path: '/repos/acme/estate/check-runs/7', times: 2, reply: { json: { id: 7 } } });
    await startCheckRun(octokit, target, { name: 'pve-gitops/plan', externalId: '3', title: 'Planning', summary: long(unit) });
    await updateCheckRun(octokit, target, 7, { title: 'Planning', summary: long(unit) });
    await completeCheckRun(octokit, target, 7, { conclusion: 'failure', title: 'Plan errors', summary: long(unit) });
    github.verify();
    for (const request of [await created.requested, ...(await updated.done)]) {
      const { summary } = output(request);
      expect(bytes(summary)).toBeLessThanOrEqual(65_535);
      expect(bytes(summary)).toBeGreaterThan(65_535 - 4 - 3);
      expect(summary.endsWith('…')).toBe(true);
      expect(loneSurrogate.test(summary)).toBe(false);
    }
  });

  it('annotation messages of multi-byte text are cut to 64 KB', async () => {
    const annotations = ['日本語', '🚀'].map((unit) => ({
      path: 'vms/web.yaml',
      start_line: 1,
      end_line: 1,
      annotation_level: 'failure' as const,
      message: long(unit),
    }));
    const completed = github.expect({ method: 'PATCH', path: '/repos/acme/estate/check-runs/8', reply: { json: { id: 8 } } });
    await completeCheckRun(octokit, target, 8, { conclusion: 'failure', title: 'Plan errors', summary: 'errors', annotations });
    github.verify();
    const sent = output(await completed.requested).annotations ?? [];
    expect(sent).toHaveLength(2);
    for (const a of sent) {
      expect(bytes(a.message)).toBeLessThanOrEqual(64 * 1024 - 1);
      expect(a.message.endsWith('…')).toBe(true);
      expect(loneSurrogate.test(a.message)).toBe(false);
    }
  });
});
