/**
 * Webhook deliveries as GitHub sends them: payloads taken from `@octokit/webhooks-examples` (real
 * payloads GitHub documented) with the fields a test cares about adjusted, signed with
 * X-Hub-Signature-256 (HMAC-SHA256 of the raw body with the webhook secret) and posted over real
 * HTTP with X-GitHub-Event and X-GitHub-Delivery.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';

// The package is one JSON file: require works the same under vitest, tsx and plain node.
const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as { name: string; examples: unknown[] }[];

/** A webhook payload: GitHub's JSON, adjusted field by field by the builders below. */
// biome-ignore lint/suspicious/noExplicitAny: example payloads are untyped JSON, and tests reach into any field
export type Payload = any;

/** A repository as tests name it. */
export interface TestRepo {
  id: number;
  owner: string;
  name: string;
}

/** A deep copy of the first example payload of `event` with `action`. */
export function examplePayload(event: string, action?: string): Payload {
  const definition = examples.find((d) => d.name === event);
  if (!definition) throw new Error(`no webhook example for ${event}`);
  const example = (definition.examples as Payload[]).find((e) => action === undefined || e.action === action);
  if (!example) throw new Error(`no webhook example for ${event}.${action}`);
  return structuredClone(example);
}

/** `sha256=<hex>` of `body` with `secret`, as GitHub signs deliveries. */
export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** What the App answered to a delivery. */
export interface DeliveryResult {
  status: number;
  body: string;
  deliveryId: string;
  /** Milliseconds from sending the request to the end of the answer. */
  ms: number;
}

/** Options of {@link deliver}. */
export interface DeliverOptions {
  event: string;
  payload: unknown;
  /** The webhook secret to sign with; `null` sends no signature header. */
  secret: string | null;
  /** Default: a fresh UUID, as GitHub sends. The same id again is a redelivery. */
  deliveryId?: string;
  /** Full webhook URL; default `${appUrl}/api/github/webhooks`. */
  path?: string;
}

/** Posts one signed delivery to the App at `appUrl`. */
export async function deliver(appUrl: string, options: DeliverOptions): Promise<DeliveryResult> {
  const body = JSON.stringify(options.payload);
  const deliveryId = options.deliveryId ?? randomUUID();
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/test',
    'x-github-event': options.event,
    'x-github-delivery': deliveryId,
    'x-github-hook-id': '1',
  };
  if (options.secret !== null) headers['x-hub-signature-256'] = signBody(options.secret, body);
  const started = performance.now();
  const response = await fetch(`${appUrl}${options.path ?? '/api/github/webhooks'}`, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, body: text, deliveryId, ms: performance.now() - started };
}

/** Fields of a pull request event a test sets. */
export interface PullRequestEventOptions {
  action: 'opened' | 'synchronize' | 'reopened' | 'ready_for_review' | 'closed' | 'edited' | 'labeled';
  installationId: number;
  repo: TestRepo;
  number: number;
  headSha: string;
  baseSha: string;
  draft?: boolean;
  /** ISO time; default now. Newest head wins by this. */
  updatedAt?: string;
  /** The head lives in another repository (a fork). */
  fork?: { owner: string; name: string };
  merged?: boolean;
  mergeSha?: string;
}

function repositoryOf(repo: TestRepo, template: Payload): Payload {
  return {
    ...template,
    id: repo.id,
    name: repo.name,
    full_name: `${repo.owner}/${repo.name}`,
    owner: { ...template.owner, login: repo.owner },
  };
}

/** A `pull_request` payload built from GitHub's example. */
export function pullRequestEvent(options: PullRequestEventOptions): Payload {
  const payload = examplePayload('pull_request', options.action === 'ready_for_review' ? 'ready_for_review' : 'synchronize');
  payload.action = options.action;
  payload.installation = { id: options.installationId, node_id: 'test' };
  payload.repository = repositoryOf(options.repo, payload.repository);
  payload.number = options.number;
  const pr = payload.pull_request;
  pr.number = options.number;
  pr.draft = options.draft ?? false;
  pr.state = options.action === 'closed' ? 'closed' : 'open';
  pr.updated_at = options.updatedAt ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  pr.merged = options.merged ?? false;
  pr.merge_commit_sha = options.mergeSha ?? null;
  pr.head = {
    ...pr.head,
    sha: options.headSha,
    repo: options.fork ? repositoryOf({ id: options.repo.id + 1, ...options.fork }, pr.head.repo) : payload.repository,
  };
  pr.base = { ...pr.base, sha: options.baseSha, repo: payload.repository };
  return payload;
}

/** Fields of an `issue_comment.created` event a test sets. */
export interface IssueCommentEventOptions {
  installationId: number;
  repo: TestRepo;
  number: number;
  body: string;
  author?: string;
  authorType?: 'User' | 'Bot';
  commentId?: number;
  /** A comment on an issue rather than a pull request. */
  onIssue?: boolean;
  action?: 'created' | 'edited' | 'deleted';
}

/** An `issue_comment` payload built from GitHub's example. */
export function issueCommentEvent(options: IssueCommentEventOptions): Payload {
  const payload = examplePayload('issue_comment', options.action ?? 'created');
  payload.installation = { id: options.installationId, node_id: 'test' };
  payload.repository = repositoryOf(options.repo, payload.repository);
  payload.issue.number = options.number;
  if (options.onIssue) delete payload.issue.pull_request;
  else
    payload.issue.pull_request = { url: `https://api.github.com/repos/${options.repo.owner}/${options.repo.name}/pulls/${options.number}` };
  const login = options.author ?? 'octocat';
  const type = options.authorType ?? 'User';
  payload.comment.id = options.commentId ?? 1000 + Math.floor(Math.random() * 1_000_000);
  payload.comment.body = options.body;
  payload.comment.user = { ...payload.comment.user, login, type };
  payload.sender = { ...payload.sender, login, type };
  return payload;
}

/** Fields of a `check_run.rerequested` event a test sets. */
export interface CheckRunEventOptions {
  installationId: number;
  repo: TestRepo;
  appId: number;
  checkRunId: number;
  headSha: string;
  name?: string;
  externalId?: string;
}

/** A `check_run.rerequested` payload built from GitHub's example. */
export function checkRunRerequestedEvent(options: CheckRunEventOptions): Payload {
  const payload = examplePayload('check_run', 'rerequested');
  payload.installation = { id: options.installationId, node_id: 'test' };
  payload.repository = repositoryOf(options.repo, payload.repository);
  const run = payload.check_run;
  run.id = options.checkRunId;
  run.name = options.name ?? 'pve-gitops/plan';
  run.head_sha = options.headSha;
  run.external_id = options.externalId ?? '';
  run.app = { ...run.app, id: options.appId };
  run.pull_requests = [];
  return payload;
}

/** A repository as installation payloads list it (no owner object: `full_name` says it). */
function installationRepo(repo: TestRepo): Payload {
  return { id: repo.id, node_id: 'test', name: repo.name, full_name: `${repo.owner}/${repo.name}`, private: true };
}

/** An `installation` payload (created, deleted, suspend, unsuspend) built from GitHub's example. */
export function installationEvent(options: {
  action: 'created' | 'deleted' | 'suspend' | 'unsuspend';
  installationId: number;
  repos?: TestRepo[];
}): Payload {
  const payload = examplePayload('installation', options.action);
  payload.installation = { ...payload.installation, id: options.installationId };
  payload.repositories = (options.repos ?? []).map(installationRepo);
  return payload;
}

/** An `installation_repositories` payload (repositories added or removed) built from GitHub's example. */
export function installationRepositoriesEvent(options: {
  action: 'added' | 'removed';
  installationId: number;
  added?: TestRepo[];
  removed?: TestRepo[];
}): Payload {
  const payload = examplePayload('installation_repositories', options.action);
  payload.installation = { ...payload.installation, id: options.installationId };
  payload.repositories_added = (options.added ?? []).map(installationRepo);
  payload.repositories_removed = (options.removed ?? []).map(installationRepo);
  return payload;
}
