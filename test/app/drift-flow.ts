/**
 * The GitHub requests of a drift run, as expectations on the test double: the default branch's
 * newest commit, the issue search, the label, and the issue created, edited, closed or reopened.
 * Tests compose them to declare exactly what a drift run may ask of GitHub. Also the estate the
 * drift tests share: a small spec repository and the simulator guests that match it.
 */
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import type { TestRepo } from './deliveries.js';
import type { ExpectationHandle, GitHubDouble } from './github-double.js';
import { clusterDoc, type RepoFiles, vmDoc } from './spec-repo.js';

/** GitHub's rate-limit headers, as every real answer carries them. */
export const RATE_LIMIT_HEADERS = { 'x-ratelimit-remaining': '4987', 'x-ratelimit-resource': 'core', 'x-ratelimit-limit': '5000' };

/** The drift label's path segment. */
const LABEL = 'pve-gitops-drift';

/** The `body` field of the JSON body of the first request an expectation took. */
async function sentBody(handle: ExpectationHandle): Promise<string> {
  const [request] = await handle.done;
  return String((request?.body as { body?: string } | undefined)?.body);
}

/** Expects the default branch's newest commit to be asked for `times` times; answers `sha`. */
export function expectHead(github: GitHubDouble, repo: TestRepo, sha: string, times = 1): ExpectationHandle {
  return github.expect({
    method: 'GET',
    path: `/repos/${repo.owner}/${repo.name}/commits`,
    query: { per_page: '1' },
    times,
    reply: { json: [{ sha }], headers: RATE_LIMIT_HEADERS },
  });
}

/** Expects the search for the App's drift issue; answers with `issues`. */
export function expectIssueSearch(github: GitHubDouble, repo: TestRepo, issues: unknown[] = []): ExpectationHandle {
  return github.expect({
    method: 'GET',
    path: `/repos/${repo.owner}/${repo.name}/issues`,
    query: { labels: LABEL, state: 'all' },
    reply: { json: issues },
  });
}

/** Expects the label to be looked up (missing), created, and the drift issue created as `number`. */
export function expectIssueCreated(
  github: GitHubDouble,
  repo: TestRepo,
  number: number,
): { created: ExpectationHandle; label: ExpectationHandle; body(): Promise<string> } {
  github.expect({
    method: 'GET',
    path: `/repos/${repo.owner}/${repo.name}/labels/${LABEL}`,
    reply: { status: 404, json: { message: 'Not Found' } },
  });
  const label = github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/labels`,
    body: { name: LABEL },
    reply: { status: 201, json: { name: LABEL } },
  });
  const created = github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/issues`,
    body: (body: { title?: string; labels?: string[]; body?: string }) =>
      body.title === 'Drift report' && body.labels?.[0] === LABEL && body.body?.startsWith('<!-- pve-gitops:drift-report content='),
    reply: { status: 201, json: { number } },
  });
  return { created, label, body: () => sentBody(created) };
}

/** Expects the drift issue `number` to be edited once (`state` when it is reopened). */
export function expectIssueEdited(
  github: GitHubDouble,
  repo: TestRepo,
  number: number,
  state?: 'open',
): { edited: ExpectationHandle; body(): Promise<string> } {
  const edited = github.expect({
    method: 'PATCH',
    path: `/repos/${repo.owner}/${repo.name}/issues/${number}`,
    body: (body: { state?: string; body?: string }) => body.state === state && body.body?.startsWith('<!-- pve-gitops:drift-report'),
    reply: { json: { number } },
  });
  return { edited, body: () => sentBody(edited) };
}

/** Expects the drift issue `number` to be closed with a comment. */
export function expectIssueClosed(
  github: GitHubDouble,
  repo: TestRepo,
  number: number,
): { comment: ExpectationHandle; closed: ExpectationHandle; commentBody(): Promise<string> } {
  const comment = github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/issues/${number}/comments`,
    reply: { status: 201, json: { id: 5_000_000 + number } },
  });
  const closed = github.expect({
    method: 'PATCH',
    path: `/repos/${repo.owner}/${repo.name}/issues/${number}`,
    body: { state: 'closed', state_reason: 'completed' },
    reply: { json: { number } },
  });
  return { comment, closed, commentBody: () => sentBody(comment) };
}

/** Specs of the drift tests: cluster `lab`, web-01 (100101) and db-01 (100102). */
export function driftSpecs(extra: RepoFiles = {}): RepoFiles {
  return {
    'cluster.yaml': clusterDoc('lab'),
    'vms/web.yaml': vmDoc('web-01', 100101),
    'vms/db.yaml': vmDoc('db-01', 100102),
    ...extra,
  };
}

/** The guests of {@link driftSpecs} on the simulator, exactly as the specs want them (no drift). */
export function seedGuests(sim: RunningSimulator, cluster = 'lab'): void {
  const guests: [number, string][] = [
    [100101, 'web-01'],
    [100102, 'db-01'],
  ];
  for (const [vmid, name] of guests) {
    sim.sim.addGuest({
      vmid,
      type: 'qemu',
      node: 'pve-01',
      config: {
        name,
        memory: 2048,
        cores: 2,
        net0: `virtio=BC:24:11:00:${vmid % 100 === 1 ? '01' : '02'}:${cluster === 'lab' ? '0A' : '0B'},bridge=vmbr0`,
        tags: 'pve-gitops',
      },
    });
  }
}
