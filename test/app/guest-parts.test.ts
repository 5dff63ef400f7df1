/**
 * Issue 20 through the App: a pull request that changes what else a guest is — its firewall
 * rules, its HA resource and its backup job — is planned (the comment shows all three), merged
 * and applied against the simulator over HTTP, and planning the merged specs again finds nothing
 * to do. An operator's firewall edit between review and merge is reported as a conflict and kept.
 * GitHub is the test double, which fails on any request it does not expect.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { haConfig } from '../../src/pve/sim/kinds/ha/state.js';
import type { Plan } from '../../src/core/model.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { api } from '../sim/helpers.js';
import { expectApplyCheckRun, expectApplyComment, finishedComment } from './apply-flow.js';
import { type ApplyWorld, ownedGuest, showAppWarningsOnFailure, startApplyWorld } from './apply-world.js';
import { pullRequestEvent } from './deliveries.js';
import { expectArchive, expectCheckRun, expectNewComment } from './plan-flow.js';
import { clusterDoc, newSha, type RepoFiles, vmDoc } from './spec-repo.js';

let world: ApplyWorld | undefined;
const clients: PveClient[] = [];

afterEach(async (context) => {
  showAppWarningsOnFailure(context, world);
  await world?.close();
  world = undefined;
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
});

const FW = (vmid: number): string => `/nodes/pve-01/qemu/${vmid}/firewall`;

/** A request to the simulator with its admin token, as an operator (or the fixture) makes it. */
async function operator(
  sim: RunningSimulator,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  form?: Record<string, string>,
): Promise<unknown> {
  const res = await api(sim, method, path, form ? { form } : {});
  expect(res.status, `${method} ${path}: ${res.text}`).toBe(200);
  return res.body?.data;
}

async function ruleComments(sim: RunningSimulator, vmid: number): Promise<unknown[]> {
  return ((await operator(sim, 'GET', `${FW(vmid)}/rules`)) as Record<string, unknown>[]).map((r) => r.comment);
}

/** The guest's documents with `parts` appended (YAML lines of its top-level keys). */
function guestDoc(name: string, vmid: number, parts: string[]): string {
  return `${vmDoc(name, vmid)}${parts.join('\n')}\n`;
}

function backupDoc(schedule: string, guest: string): string {
  return `kind: BackupJob\nname: nightly\ncluster: lab\nschedule: "${schedule}"\nstorage: local\nguests: [${guest}]\n`;
}

const SSH = '    - { type: in, action: ACCEPT, proto: tcp, dport: 22, comment: ssh }';
const WEB = '    - { type: in, macro: HTTPS, action: ACCEPT, comment: web }';

/** The pull request's two sides: the firewall gains a rule, HA goes started → stopped, the job moves to Saturday. */
function sides(vmid: number): { base: RepoFiles; head: RepoFiles } {
  const base: RepoFiles = {
    'cluster.yaml': clusterDoc(),
    'vms/web.yaml': guestDoc('web-01', vmid, ['ha: { state: started }', 'firewall:', '  rules:', SSH]),
    'backup.yaml': backupDoc('sun 01:00', 'web-01'),
  };
  const head: RepoFiles = {
    ...base,
    'vms/web.yaml': guestDoc('web-01', vmid, ['ha: { state: stopped }', 'firewall:', '  rules:', WEB, SSH]),
    'backup.yaml': backupDoc('sat 02:00', 'web-01'),
  };
  return { base, head };
}

/** The cluster as the base branch describes it: one firewall rule, HA started, the job on Sunday. */
async function seedBase(sim: RunningSimulator, vmid: number): Promise<void> {
  await operator(sim, 'POST', `${FW(vmid)}/rules`, {
    type: 'in',
    action: 'ACCEPT',
    proto: 'tcp',
    dport: '22',
    comment: 'ssh',
    enable: '1',
  });
  haConfig(sim.sim).ids.set(`vm:${vmid}`, { type: 'vm', options: { state: 'started' } });
  await operator(sim, 'POST', '/cluster/backup', { id: 'nightly', schedule: 'sun 01:00', storage: 'local', vmid: String(vmid) });
}

/** Opens the pull request and returns its plan comment. */
async function openPullRequest(
  w: ApplyWorld,
  pr: number,
  sha: { base: string; head: string },
  files: { base: RepoFiles; head: RepoFiles },
) {
  const { github, app, repo, installationId } = w;
  await expectArchive(github, repo, sha.base, files.base);
  await expectArchive(github, repo, sha.head, files.head);
  const planCheck = expectCheckRun(github, repo, { headSha: sha.head, pr, id: pr * 10 + 1 });
  const planComment = expectNewComment(github, repo, pr, pr * 10 + 2);
  const opened = await app.deliver({
    event: 'pull_request',
    payload: pullRequestEvent({ action: 'opened', installationId, repo, number: pr, headSha: sha.head, baseSha: sha.base }),
  });
  await app.jobDone('plan', opened.deliveryId);
  await planCheck.result();
  return planComment.body();
}

/** Plans `files` against the world's simulator the way the CLI does (read-only token). */
async function planAgain(w: ApplyWorld, files: RepoFiles): Promise<Plan> {
  const loaded = loadSpecs(Object.entries(files).map(([path, text]) => ({ path, text: String(text) })));
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  const sim = w.clusters.sims.lab!;
  const client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
  clients.push(client);
  return runPlan({ head: loaded.specs, readers: { lab: new PveClusterAdapter(client, { wait: { intervalMs: 5 } }) } });
}

function changed(plan: Plan): string[] {
  return [...plan.guests, ...plan.objects].filter((item) => item.action !== 'noop').map((item) => `${item.key}: ${item.action}`);
}

describe("a pull request that changes a guest's firewall, HA resource and backup job", () => {
  it('is planned with all three in its comment, merged and applied, and then plans nothing', async () => {
    const X = 100741;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'web-01')] });
    const w = world;
    const sim = w.clusters.sims.lab!;
    await seedBase(sim, X);
    const files = sides(X);
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 120;

    const planned = await openPullRequest(w, pr, { base: baseSha, head: headSha }, files);
    expect(planned).toContain(`firewall of web-01 (${X})`);
    // The new rule is the one change: the rule below it is not shown as moved.
    expect(planned).toContain('| `firewall.rules #1` | *(unset)* | `IN HTTPS(ACCEPT) # web` | live |');
    expect(planned).not.toContain('firewall.rules #2');
    expect(planned).toContain(`HA resource of web-01 (vm:${X})`);
    expect(planned).toContain('backup job nightly');
    expect(planned).toContain('sat 02:00');
    w.github.verify();

    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 1201 });
    const comment = expectApplyComment(w.github, w.repo, { pr, id: 1202 });
    await w.merge({ number: pr, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'success' });
    const applied = await comment.until(finishedComment);
    expect(applied).toContain('✅ **applied** · **lab: firewall web-01**');
    expect(applied).toContain('added IN HTTPS(ACCEPT)');
    expect(await ruleComments(sim, X)).toEqual(['web', 'ssh']);
    expect(haConfig(sim.sim).ids.get(`vm:${X}`)?.options.state).toBe('stopped');
    expect(sim.sim.backupJobs.get('nightly')?.schedule).toBe('sat 02:00');
    expect(changed(await planAgain(w, files.head))).toEqual([]);
    w.github.verify();
  });

  it("reports an operator's firewall edit between review and merge as a conflict, and keeps it", async () => {
    const X = 100742;
    world = await startApplyWorld({ redisUrl: inject('redisUrl'), guests: [ownedGuest(X, 'web-01')] });
    const w = world;
    const sim = w.clusters.sims.lab!;
    await seedBase(sim, X);
    const files = sides(X);
    const [baseSha, headSha, mergeSha] = [newSha(), newSha(), newSha()];
    const pr = 121;
    expect(await openPullRequest(w, pr, { base: baseSha, head: headSha }, files)).toContain('IN HTTPS(ACCEPT) # web');
    w.github.verify();

    // After the review, an operator opens a port by hand.
    await operator(sim, 'POST', `${FW(X)}/rules`, {
      type: 'in',
      action: 'ACCEPT',
      proto: 'tcp',
      dport: '8443',
      comment: 'hotfix',
      enable: '1',
    });

    const check = expectApplyCheckRun(w.github, w.repo, { mergeSha, id: 1211 });
    const comment = expectApplyComment(w.github, w.repo, { pr, id: 1212 });
    await w.merge({ number: pr, headSha, baseSha, mergeSha });
    expect(await check.completed).toMatchObject({ conclusion: 'failure' });
    const applied = await comment.until(finishedComment);
    expect(applied).toContain(`the firewall rules of guest ${X} changed on the cluster after the review`);
    expect(await ruleComments(sim, X)).toEqual(['hotfix', 'ssh']);
    w.github.verify();
  });
});
