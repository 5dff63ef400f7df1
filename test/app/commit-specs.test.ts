import { pino } from 'pino';
import { Probot } from 'probot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitSpecsCache } from '../../src/queue/commit-specs.js';
import { GitHubDouble } from './github-double.js';
import { expectArchive } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';

const repo = { id: 5_151_515, owner: 'acme', name: 'estate' };

let github: GitHubDouble;
let probot: Probot;

beforeEach(async () => {
  github = await GitHubDouble.start();
  probot = new Probot({
    appId: github.app.id,
    privateKey: github.app.privateKeyPem,
    secret: 'commit-specs-test',
    baseUrl: `${github.url}/api/v3`,
    log: pino({ level: 'silent' }),
  });
});

afterEach(async () => {
  await github.close();
});

/** A repository of about `bytes` bytes of specs: a Cluster document, one VM, and a long comment. */
function repoOf(name: string, bytes: number): RepoFiles {
  const vm = vmDoc(name, 100101);
  return { 'cluster.yaml': clusterDoc(), 'web.yaml': `${vm}# ${'x'.repeat(bytes - vm.length)}\n` };
}

describe('the commit specs cache', () => {
  it('keeps commits up to its byte bound, however few: the least recently used are read again', async () => {
    const octokit = await probot.auth(11);
    const specs = new CommitSpecsCache({ maxBytes: 100_000 });
    const [a, b, c] = [newSha(), newSha(), newSha()];
    // a is read twice: after b and c it no longer fits beside them.
    await expectArchive(github, repo, a, repoOf('a', 40_000));
    await expectArchive(github, repo, b, repoOf('b', 40_000));
    await expectArchive(github, repo, c, repoOf('c', 40_000));
    await expectArchive(github, repo, a, repoOf('a', 40_000));
    for (const sha of [a, b, c]) {
      const loaded = await specs.head(octokit, repo, sha, '');
      expect(loaded.loaded.errors).toEqual([]);
      expect(loaded.bytes).toBeGreaterThan(40_000);
    }
    expect(specs.size).toBe(2);
    expect(specs.bytes).toBeLessThanOrEqual(100_000);
    await specs.head(octokit, repo, a, '');
    // c is still kept (b was the least recently used): no download.
    expect((await specs.head(octokit, repo, c, '')).loaded.specs.guests.map((g) => g.name)).toEqual(['c']);
    expect(specs.downloads).toBe(4);
    github.verify();
  });

  it('loads a commit larger than its byte bound for the plan that asked, and keeps none of it', async () => {
    const octokit = await probot.auth(12);
    const specs = new CommitSpecsCache({ maxBytes: 100_000 });
    const [small, huge] = [newSha(), newSha()];
    await expectArchive(github, repo, small, repoOf('small', 40_000));
    await expectArchive(github, repo, huge, repoOf('huge', 150_000));
    await expectArchive(github, repo, huge, repoOf('huge', 150_000));
    await specs.head(octokit, repo, small, '');
    expect((await specs.head(octokit, repo, huge, '')).loaded.specs.guests.map((g) => g.name)).toEqual(['huge']);
    // The small commit was not pushed out by one that could never fit.
    expect(specs.size).toBe(1);
    await specs.head(octokit, repo, small, '');
    await specs.head(octokit, repo, huge, '');
    expect(specs.downloads).toBe(3);
    github.verify();
  });
});
