import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { suggestionWork } from '../../src/core/spec/nearest-name.js';
import type { StartBudget } from '../../src/spec-files/spec-load-thread.js';
import { issueCommentEvent } from './deliveries.js';
import { expectArchive, expectCheckRun, expectNewComment, expectReply } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';
import { openPullRequest, startWorld, type World } from './world.js';

let world: World | undefined;
let trap: Server | undefined;

afterEach(async () => {
  await world?.close();
  await new Promise<void>((resolve) => (trap ? trap.close(() => resolve()) : resolve()));
  world = undefined;
  trap = undefined;
});

/** A server a hostile pull request would like the App to send a token to; records every request. */
async function startTrap(): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  trap = createServer((req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
  });
  await new Promise<void>((resolve) => trap!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(trap.address() as AddressInfo).port}`, requests };
}

const open = openPullRequest;

describe('security', () => {
  it('validates a repository of unknown keys off the event loop, and fails the plan with its first errors', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    const keys = Array.from({ length: 20_000 }, (_, k) => `  memroy${k}: 1`).join('\n');
    const hostile = `${vmDoc('fork', 100777)}  memroy: 1\n${keys}\n`;
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'fork.yaml': hostile });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 6, id: 1405, updates: 3 });
    const comment = expectNewComment(w.github, w.repo, 6, 1505);
    const searches = suggestionWork();
    await w.app.jobDone('plan', await open(w, 6, headSha, baseSha));
    w.github.verify();
    // Every check ran on the spec load thread: this thread, which answers webhooks, did none.
    expect(suggestionWork()).toBe(searches);
    const result = await check.result();
    expect(result.conclusion).toBe('failure');
    expect(result.output?.title).toBe('The specs are invalid: 101 problems');
    expect(result.output?.summary).toContain('`fork.yaml:10:3`: unknown config key "memroy" for a VM (did you mean "memory"?)');
    expect(result.output?.summary).toContain('`fork.yaml:1:1`: 19901 more errors in this document are not shown');
    expect(await comment.body()).toContain('The specs are invalid');
  });

  it('a pull request that writes a URL into a Cluster document sends no credential anywhere: the spec is invalid', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const evil = await startTrap();
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, {
      'cluster.yaml': clusterDoc('lab', `url: ${evil.url}\ntoken: please`),
      'web.yaml': vmDoc('web-01', 100101),
    });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 2, id: 1401 });
    const comment = expectNewComment(w.github, w.repo, 2, 1501);
    await w.app.jobDone('plan', await open(w, 2, headSha, baseSha));
    w.github.verify();
    expect((await check.result()).conclusion).toBe('failure');
    expect(await comment.body()).toContain('unknown key "url" in Cluster');
    expect(evil.requests).toEqual([]);
  });

  it('a pull request that names a cluster the server has no connection for, or moves the spec root in the config, reaches no other server', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const evil = await startTrap();
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { '.github/pve-gitops.yml': 'specs: specs\n', 'specs/cluster.yaml': clusterDoc() };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, {
      // The head's config is never read: the base's spec root holds.
      '.github/pve-gitops.yml': 'specs: elsewhere\n',
      'specs/cluster.yaml': `${clusterDoc()}---\n${clusterDoc('evil').replace('100000, upper: 199999', '300000, upper: 399999')}`,
      'specs/web.yaml': `${vmDoc('web-01', 100101)}---\n${vmDoc('steal-01', 300101, {}, 'evil')}`,
      'elsewhere/cluster.yaml': clusterDoc('lab', 'prune: true'),
    });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 3, id: 1402 });
    const comment = expectNewComment(w.github, w.repo, 3, 1502);
    await w.app.jobDone('plan', await open(w, 3, headSha, baseSha));
    w.github.verify();
    const body = await comment.body();
    expect(body).toContain("**evil**: cluster 'evil' could not be read: no connection is configured for it");
    expect(body).toContain('**lab/web-01** (100101)');
    expect(body).toContain('spec: `specs/web.yaml:1`');
    expect((await check.result()).conclusion).toBe('failure');
    expect(evil.requests).toEqual([]);
  });

  it('refuses an archive with a symbolic link to a file outside the repository, with a clear error', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = {
      'cluster.yaml': clusterDoc(),
      'docs/readme.md': 'links elsewhere are none of the App’s business',
      'docs/link': { symlink: '/etc' },
    };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'vms/web.yaml': { symlink: '../../../../etc/passwd' } });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 4, id: 1403 });
    const comment = expectNewComment(w.github, w.repo, 4, 1503);
    await w.app.jobDone('plan', await open(w, 4, headSha, baseSha));
    w.github.verify();
    const message =
      'vms/web.yaml is a symbolic link (to ../../../../etc/passwd): links are never followed in the spec repository; commit the file itself';
    expect(await check.result()).toMatchObject({
      conclusion: 'failure',
      output: { title: 'The repository cannot be read safely: 1 problem' },
    });
    expect((await check.result()).output?.summary).toContain(message);
    expect(await comment.body()).toContain(message);
  });

  it('fails the plan of specs that outlast the load budget, naming the budget', async () => {
    // The budget runs out by hand, once the head's load is under way.
    const budgets: (() => void)[] = [];
    let budgetStarted: () => void = () => {};
    const startBudget: StartBudget = (_ms, expired) => {
      budgets.push(expired);
      budgetStarted();
      return () => {};
    };
    const w = (world = await startWorld({ redisUrl: inject('redisUrl'), specLoads: { budgetMs: 45_000, startBudget } }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    const keys = Array.from({ length: 20_000 }, (_, k) => `  memroy${k}: 1`).join('\n');
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'fork.yaml': `${vmDoc('fork', 100778)}${keys}\n` });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 7, id: 1406 });
    const comment = expectNewComment(w.github, w.repo, 7, 1506);
    // The base's load (the first) finishes; the head's (the second) is stopped at its budget.
    const headLoad = new Promise<void>((resolve) => {
      budgetStarted = () => {
        if (budgets.length === 2) resolve();
      };
    });
    const planned = w.app.jobDone('plan', await open(w, 7, headSha, baseSha));
    await headLoad;
    budgets[1]?.();
    await planned;
    w.github.verify();
    const result = await check.result();
    expect(result.conclusion).toBe('failure');
    expect(result.output?.title).toMatch(/^The specs took too long to validate/);
    expect(result.output?.summary).toContain('took longer than the 45 s budget of a plan and was stopped');
    expect(await comment.body()).toContain('The specs took too long to validate');
  });

  it('refuses a YAML bomb with a clear error on its line', async () => {
    const w = (world = await startWorld({ redisUrl: inject('redisUrl') }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
    // Billion laughs: nine levels of nine aliases, 9^9 strings once expanded.
    const levels = ['a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let i = 1; i < 9; i++) {
      const name = String.fromCharCode(97 + i);
      levels.push(
        `${name}: &${name} [${Array(9)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(', ')}]`,
      );
    }
    const bomb = `kind: VM\nname: bomb\ncluster: lab\nnode: pve-01\nvmid: 100666\n${levels.join('\n')}\n`;
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, { ...base, 'bomb.yaml': bomb });
    const check = expectCheckRun(w.github, w.repo, { headSha, pr: 5, id: 1404 });
    const comment = expectNewComment(w.github, w.repo, 5, 1504);
    await w.app.jobDone('plan', await open(w, 5, headSha, baseSha));
    w.github.verify();
    const result = await check.result();
    expect(result.conclusion).toBe('failure');
    expect(result.output?.annotations?.[0]).toMatchObject({ path: 'bomb.yaml', annotation_level: 'failure' });
    expect(result.output?.annotations?.[0]?.message).toMatch(/^YAML: too large with its aliases expanded/);
    expect(await comment.body()).toContain('The specs are invalid');
  });

  it('puts no token, key or secret in any log line, Redis value, comment or check run', async () => {
    // A wrong read token makes the cluster refuse the plan: its error must not carry the token either.
    const badReadToken = 'auditor@pve!audit=11111111-2222-3333-4444-555555555555';
    const w = (world = await startWorld({
      redisUrl: inject('redisUrl'),
      clusters: { lab: {}, prod: {} },
      env: { PVE_CLUSTER_PROD_READ_TOKEN: badReadToken },
    }));
    const baseSha = newSha();
    const headSha = newSha();
    const base: RepoFiles = {
      'cluster.yaml': `${clusterDoc()}---\n${clusterDoc('prod').replace('100000, upper: 199999', '200000, upper: 299999')}`,
    };
    await expectArchive(w.github, w.repo, baseSha, base);
    await expectArchive(w.github, w.repo, headSha, {
      ...base,
      'web.yaml': `${vmDoc('web-01', 100101)}---\n${vmDoc('web-02', 200101, {}, 'prod')}`,
    });
    expectCheckRun(w.github, w.repo, { headSha, pr: 6, id: 1405 });
    const comment = expectNewComment(w.github, w.repo, 6, 1505);
    await w.app.jobDone('plan', await open(w, 6, headSha, baseSha));
    w.github.expect({
      method: 'GET',
      path: '/repos/acme/estate/collaborators/eve/permission',
      reply: { json: { permission: 'read', role_name: 'read' } },
    });
    expectReply(w.github, w.repo, 6, /was not run/);
    const refused = await w.app.deliver({
      event: 'issue_comment',
      payload: issueCommentEvent({ installationId: w.installationId, repo: w.repo, number: 6, body: '/pve plan', author: 'eve' }),
    });
    await w.app.jobDone('command', refused.deliveryId);
    w.github.verify();
    expect(await comment.body()).toMatch(/cluster 'prod' could not be read: Authentication failed/);

    const secretOf = (token: string): string => token.slice(token.indexOf('=') + 1);
    const secrets = [
      w.app.webhookSecret,
      ...w.github.app.privateKeyPem.split('\n').filter((line) => line.length > 40),
      ...w.github.tokens.keys(),
      ...Object.values(w.clusters.sims).flatMap((sim) => [secretOf(sim.token), secretOf(sim.auditToken)]),
      secretOf(badReadToken),
    ];
    expect(w.github.tokens.size).toBeGreaterThan(0);
    const sent = w.github.requests.map((r) => JSON.stringify(r.body ?? '')).join('\n');
    const places = { logs: w.app.logs(), redis: await w.app.redisDump(), github: sent };
    for (const [place, text] of Object.entries(places)) {
      expect(text.length, place).toBeGreaterThan(100);
      for (const secret of secrets) expect(text.includes(secret), `${place} holds a secret`).toBe(false);
    }
  });
});
