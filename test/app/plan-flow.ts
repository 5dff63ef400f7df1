/**
 * The GitHub requests of one plan, as expectations on the test double: the archive of a commit,
 * the check run (created in progress, completed with its result), the sticky comment (found,
 * created or edited). Tests compose them to declare exactly what a plan may ask of GitHub.
 */
import type { ExpectationHandle, GitHubDouble, RecordedRequest } from './github-double.js';

/** The `body` field of the JSON body of the first request an expectation took. */
async function sentBody(handle: ExpectationHandle): Promise<string> {
  const [request] = await handle.done;
  return String((request?.body as { body?: string } | undefined)?.body);
}
import { type DeliveryResult, deliver, pullRequestEvent, type TestRepo } from './deliveries.js';
import { clusterDoc, newSha, type RepoFiles, tarball, vmDoc } from './spec-repo.js';
import { at } from './world.js';

/** Serves the repository at `sha` as GitHub's tarball, once; with `hold`, only once it resolves. */
export async function expectArchive(
  github: GitHubDouble,
  repo: TestRepo,
  sha: string,
  files: RepoFiles,
  hold?: Promise<void>,
): Promise<ExpectationHandle> {
  const body = await tarball(files, { owner: repo.owner, name: repo.name, sha });
  const reply = { raw: body, contentType: 'application/x-gzip' };
  return github.expect({
    method: 'GET',
    path: `/repos/${repo.owner}/${repo.name}/tarball/${sha}`,
    reply: hold ? () => hold.then(() => reply) : reply,
  });
}

/** The two requests of a check run: created in progress (answered with `id`) and completed. */
export interface CheckRunExpectation {
  created: ExpectationHandle;
  completed: ExpectationHandle;
  /** The completing request's body, once it came. */
  result(): Promise<CheckRunBody>;
}

/** What the App sent to complete a check run. */
export interface CheckRunBody {
  status?: string;
  conclusion?: string;
  output?: {
    title: string;
    summary: string;
    annotations?: { path: string; start_line: number; annotation_level: string; message: string }[];
  };
}

/** Expects a `pve-gitops/plan` check run on `headSha` for pull request `pr`, completed in `updates` requests (annotation batches). */
export function expectCheckRun(
  github: GitHubDouble,
  repo: TestRepo,
  options: { headSha: string; pr: number; id: number; updates?: number },
): CheckRunExpectation {
  const created = github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/check-runs`,
    body: { head_sha: options.headSha, name: 'pve-gitops/plan', status: 'in_progress', external_id: String(options.pr) },
    reply: { status: 201, json: { id: options.id, html_url: `https://github.example/${repo.owner}/${repo.name}/runs/${options.id}` } },
  });
  const completed = github.expect({
    method: 'PATCH',
    path: `/repos/${repo.owner}/${repo.name}/check-runs/${options.id}`,
    times: options.updates ?? 1,
    reply: { json: { id: options.id } },
  });
  return {
    created,
    completed,
    async result() {
      const requests = await completed.done;
      const last = requests[requests.length - 1] as RecordedRequest;
      return last.body as CheckRunBody;
    },
  };
}

/** Expects the first plan comment of a pull request: the comments listed (none is the App's yet), then one created with `id`. */
export function expectNewComment(
  github: GitHubDouble,
  repo: TestRepo,
  pr: number,
  id: number,
  existing: unknown[] = [],
): { listed: ExpectationHandle; created: ExpectationHandle; body(): Promise<string> } {
  const listed = github.expect({
    method: 'GET',
    path: `/repos/${repo.owner}/${repo.name}/issues/${pr}/comments`,
    reply: { json: existing },
  });
  const created = github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/issues/${pr}/comments`,
    body: (body: { body?: string }) => body.body?.startsWith('<!-- pve-gitops:plan -->'),
    reply: { status: 201, json: { id } },
  });
  return { listed, created, body: () => sentBody(created) };
}

/** Expects the plan comment `id` to be edited once. */
export function expectCommentEdit(
  github: GitHubDouble,
  repo: TestRepo,
  id: number,
): { edited: ExpectationHandle; body(): Promise<string> } {
  const edited = github.expect({
    method: 'PATCH',
    path: `/repos/${repo.owner}/${repo.name}/issues/comments/${id}`,
    body: (body: { body?: string }) => body.body?.startsWith('<!-- pve-gitops:plan -->'),
    reply: { json: { id } },
  });
  return { edited, body: () => sentBody(edited) };
}

/** Expects a reply comment (not the plan) on the pull request. */
export function expectReply(
  github: GitHubDouble,
  repo: TestRepo,
  pr: number,
  matcher: RegExp,
): { created: ExpectationHandle; body(): Promise<string> } {
  const created = github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/issues/${pr}/comments`,
    body: (body: { body?: string }) => matcher.test(body.body ?? '') && !body.body?.startsWith('<!--'),
    reply: { status: 201, json: { id: 9_000_000 + pr } },
  });
  return { created, body: () => sentBody(created) };
}

/** Expects a writer's `/pve` command to be accepted: the author's permission asked, the comment reacted to with 👀. */
export function expectAcceptedCommand(github: GitHubDouble, repo: TestRepo, author: string, commentId: number): void {
  github.expect({
    method: 'GET',
    path: `/repos/${repo.owner}/${repo.name}/collaborators/${author}/permission`,
    reply: { json: { permission: 'write', role_name: 'write' } },
  });
  github.expect({
    method: 'POST',
    path: `/repos/${repo.owner}/${repo.name}/issues/comments/${commentId}/reactions`,
    body: { content: 'eyes' },
    reply: { status: 201, json: {} },
  });
}

/**
 * Opens pull request 1 of `repo`, adding VM `web-01` to a cluster's specs, delivered to the web
 * process at `webUrl`: with the archives of both commits, the check run and the comment its plan
 * asks of GitHub expected.
 */
export async function openPullRequestAddingOneVm(
  github: GitHubDouble,
  repo: TestRepo,
  webUrl: string,
  webhookSecret: string,
): Promise<{ delivery: DeliveryResult; check: CheckRunExpectation; comment: { body(): Promise<string> } }> {
  const [baseSha, headSha] = [newSha(), newSha()];
  const base: RepoFiles = { 'cluster.yaml': clusterDoc() };
  await expectArchive(github, repo, baseSha, base);
  await expectArchive(github, repo, headSha, { ...base, 'web.yaml': vmDoc('web-01', 100101) });
  const check = expectCheckRun(github, repo, { headSha, pr: 1, id: 2001 });
  const comment = expectNewComment(github, repo, 1, 2101);
  const delivery = await deliver(webUrl, {
    event: 'pull_request',
    secret: webhookSecret,
    payload: pullRequestEvent({ action: 'opened', installationId: 77, repo, number: 1, headSha, baseSha, updatedAt: at(1) }),
  });
  return { delivery, check, comment };
}
