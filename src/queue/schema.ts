/**
 * Queue names and job payloads. A job carries identifiers only — repository, pull request,
 * commits, the delivery it came from — never a token, a payload or spec text: job data sits in
 * Redis for a day and shows in every queue dashboard. Workers parse it back with these schemas,
 * so a job written by another version is refused with a clear error instead of half-run.
 */
import { z } from 'zod';

/** Queue names, without the Redis prefix. */
export const QUEUE_NAMES = {
  /** Everything about one pull request's plan: pushes, `/pve` commands, re-runs, closing. */
  plan: 'plan',
  /** Drift reports per repository: scheduled, and `/pve drift`; and keeping the schedules in line with the installations. */
  drift: 'drift',
  /** Merge-to-apply, per run: a merge starting one, the reports of its progress to GitHub. */
  applyRun: 'apply-run',
  /**
   * Merge-to-apply, per item: one job per guest or other item of a run (`src/queue/apply/apply-worker.ts`).
   * Named for guests since before other kinds: the name is kept so jobs queued across an upgrade run.
   */
  applyGuest: 'apply-guest',
  /** `/pve adopt` on the drift report issue: a pull request taking live values into the specs (`src/queue/adopt/`). */
  adopt: 'adopt',
} as const;

/** A full 40-hex git commit SHA. */
export const CommitSha = z.string().regex(/^[0-9a-f]{40}$/, 'a 40-hex commit SHA');

/** A repository: its id keys the App's state (stable across renames), owner and name address the API. */
export const RepoRef = z.strictObject({
  id: z.int().positive(),
  owner: z.string().min(1).max(100),
  name: z.string().min(1).max(100),
});
export type RepoRef = z.infer<typeof RepoRef>;

const common = {
  installationId: z.int().positive(),
  repo: RepoRef,
  /** `X-GitHub-Delivery` of the webhook that caused the job: its job id, and the thread through the logs. */
  deliveryId: z.string().min(1).max(100),
};

/** Why a plan runs; shown in logs and the check run. */
export const PlanReason = z.enum([
  'opened',
  'synchronize',
  'reopened',
  'ready_for_review',
  'retargeted',
  'command',
  'rerequested',
  'merged',
]);
export type PlanReason = z.infer<typeof PlanReason>;

/** Plan the pull request's head against its base. */
const PlanJobData = z.strictObject({
  kind: z.literal('plan'),
  ...common,
  pr: z.int().positive(),
  headSha: CommitSha,
  baseSha: CommitSha,
  /** The branch the pull request targets (absent in jobs of older versions). */
  baseRef: z.string().min(1).max(255).optional(),
  draft: z.boolean(),
  reason: PlanReason,
  /** The head lives in another repository (a fork, or one deleted since). */
  fork: z.boolean().optional(),
});
export type PlanJobData = z.infer<typeof PlanJobData>;

/** A `/pve <command>` comment; the worker checks the author's permission before anything else. */
export const CommandJobData = z.strictObject({
  kind: z.literal('command'),
  ...common,
  pr: z.int().positive(),
  commentId: z.int().positive(),
  author: z.string().min(1).max(100),
  /** The word after `/pve`, lower-cased (`plan`, `help`, or anything else someone typed). */
  command: z.string().min(1).max(40),
  args: z.array(z.string().max(100)).max(10),
});
export type CommandJobData = z.infer<typeof CommandJobData>;

/** GitHub's "Re-run" on our check run: plan the pull request the check run was made for, again. */
export const RerunJobData = z.strictObject({
  kind: z.literal('rerun'),
  ...common,
  pr: z.int().positive(),
  checkRunId: z.int().positive(),
  headSha: CommitSha,
});
export type RerunJobData = z.infer<typeof RerunJobData>;

/** A pull request was closed (merged or not): its plans no longer race with other pull requests. */
export const ClosedJobData = z.strictObject({
  kind: z.literal('closed'),
  ...common,
  pr: z.int().positive(),
  merged: z.boolean(),
  headSha: CommitSha,
  /** The merge commit, when merged. */
  mergeSha: CommitSha.optional(),
});
export type ClosedJobData = z.infer<typeof ClosedJobData>;

/**
 * Render a pull request's sticky comment again from its stored plan, because the other open pull
 * requests touching its guests changed (another one was planned or closed). Nothing is re-planned.
 */
const RefreshJobData = z.strictObject({
  kind: z.literal('refresh'),
  ...common,
  pr: z.int().positive(),
});

/** Any job of the plan queue. */
export const PlanQueueJob = z.discriminatedUnion('kind', [PlanJobData, CommandJobData, RerunJobData, ClosedJobData, RefreshJobData]);
export type PlanQueueJob = z.infer<typeof PlanQueueJob>;

/**
 * The BullMQ job id of a delivery's job: BullMQ ignores an add whose id it still keeps, so a
 * delivery GitHub sends again (same `X-GitHub-Delivery`) is not run twice. Ids may not contain
 * `:` nor be plain integers, so the kind goes first and anything unusual in the id is replaced.
 */
export function deliveryJobId(kind: PlanQueueJob['kind'], deliveryId: string, pr?: number): string {
  const id = `${kind}-${deliveryId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  // A delivery that causes one job per pull request (refreshing the others' comments) numbers them.
  return pr === undefined ? id : `${id}-pr${pr}`;
}

/** Why a drift report runs. */
const DriftTrigger = z.enum(['schedule', 'command']);

/** Read every owned guest of every cluster against the repository's default branch; keep the drift issue current. */
export const DriftJobData = z.strictObject({
  kind: z.literal('drift'),
  installationId: z.int().positive(),
  repo: RepoRef,
  trigger: DriftTrigger,
  /** The delivery of the `/pve drift` comment, for the logs. */
  deliveryId: z.string().min(1).max(100).optional(),
  /** Issue or pull request where `/pve drift` was asked: answered there when the report is done. */
  replyTo: z.int().positive().optional(),
});
export type DriftJobData = z.infer<typeof DriftJobData>;

/** List the installations and their repositories, and make the drift schedules match them. */
const DriftSyncJobData = z.strictObject({ kind: z.literal('sync') });

/** Any job of the drift queue. */
export const DriftQueueJob = z.discriminatedUnion('kind', [DriftJobData, DriftSyncJobData]);
export type DriftQueueJob = z.infer<typeof DriftQueueJob>;

/**
 * A pull request was merged into the default branch: apply the plan stored for its head. Sent
 * beside the `closed` job of the same delivery (which forgets the pull request's open plan).
 */
export const MergeJobData = z.strictObject({
  kind: z.literal('merge'),
  ...common,
  pr: z.int().positive(),
  headSha: CommitSha,
  baseSha: CommitSha,
  /** The branch it was merged into: a plan made against another base is not applied (absent in jobs of older versions). */
  baseRef: z.string().min(1).max(255).optional(),
  mergeSha: CommitSha,
  /** GitHub's `merged_at`: the order of merges, whatever order their webhooks arrive in. */
  mergedAt: z.iso.datetime({ offset: true }),
});
export type MergeJobData = z.infer<typeof MergeJobData>;

/**
 * An apply run's id: `m-<repository>-<pr>-<merge commit>` for a merge, `c-<repository>-<comment>`
 * for `/pve apply` — never the delivery, so neither a retried job nor a replayed delivery makes a second run.
 */
const RunId = z.string().regex(/^[A-Za-z0-9_-]{1,120}$/, 'an apply run id');

/** Bring the pull request's apply comment and check run up to date with the run's state. */
export const ReportJobData = z.strictObject({
  kind: z.literal('report'),
  runId: RunId,
  /** Also look for guests whose jobs ended without a result (the periodic report of a long run). */
  heal: z.boolean().optional(),
});
export type ReportJobData = z.infer<typeof ReportJobData>;

/** Any job of the apply-run queue. */
export const ApplyRunJob = z.discriminatedUnion('kind', [MergeJobData, ReportJobData]);
export type ApplyRunJob = z.infer<typeof ApplyRunJob>;

/**
 * Apply one guest of a run; the guest's reviewed plan is kept with the run in Redis, not in the
 * job. The form every version has added for guests, so a worker of an older version still takes
 * a guest job a newer one added while both run (an upgrade).
 */
export const GuestJobData = z.strictObject({
  kind: z.literal('guest'),
  runId: RunId,
  /** `cluster/vmid`. */
  guest: z.string().min(3).max(200),
});
export type GuestJobData = z.infer<typeof GuestJobData>;

/** Apply one item of a kind other than the guest (a pool, a guest's membership); its plan is kept with the run. */
export const ObjectJobData = z.strictObject({
  kind: z.literal('object'),
  runId: RunId,
  /** The item's key as text (`core/kinds/resource-key.ts`): opaque to the queue. */
  item: z.string().min(3).max(300),
});
export type ObjectJobData = z.infer<typeof ObjectJobData>;

/** Any job of the per-item apply queue: a guest's (as every version stored them) or another kind's item. */
export const ItemJobData = z.discriminatedUnion('kind', [GuestJobData, ObjectJobData]);
export type ItemJobData = z.infer<typeof ItemJobData>;

/** The item key a job applies, whichever form it has. */
export function itemKeyOfJob(data: ItemJobData): string {
  return data.kind === 'guest' ? data.guest : data.item;
}

/**
 * `/pve adopt [<guest> [<key> …]]` on the drift report issue, from a writer (checked by the plan
 * worker before it enqueued this): read the estate against the default branch and open a pull
 * request writing the live values into the spec files.
 */
export const AdoptJobData = z.strictObject({
  kind: z.literal('adopt'),
  ...common,
  /** The issue the command was asked on (it must be the drift report). */
  issue: z.int().positive(),
  commentId: z.int().positive(),
  author: z.string().min(1).max(100),
  /** A guest (`cluster/name`, `cluster/vmid` or a name), then keys; none: every finding. */
  args: z.array(z.string().max(100)).max(10),
});
export type AdoptJobData = z.infer<typeof AdoptJobData>;
