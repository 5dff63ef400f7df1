/**
 * Check runs: created in progress on a commit, completed with a conclusion, a short summary and
 * annotations on the YAML lines of errors. GitHub takes at most 50 annotations per request and
 * appends those of each update to the run's list, so they go in batches of 50: every batch but the
 * last while the run is in progress, the last with the conclusion, so a completed run has them all.
 */
import type { ProbotOctokit } from 'probot';
import {
  ANNOTATION_MESSAGE_MAX_BYTES,
  CHECK_OUTPUT_MAX_BYTES,
  CHECK_TITLE_MAX_CHARACTERS,
  clipText,
  type TextLimit,
} from './text-limits.js';

/** GitHub's limit of annotations per create or update request. */
const ANNOTATIONS_PER_REQUEST = 50;

/** Most annotations sent for one run; the summary says when more were left out. */
const MAX_ANNOTATIONS = 500;

/** GitHub's limits on output text: the summary and messages in UTF-8 bytes, titles in characters. */
const MAX_SUMMARY: TextLimit = { bytes: CHECK_OUTPUT_MAX_BYTES };
const MAX_TITLE: TextLimit = { characters: CHECK_TITLE_MAX_CHARACTERS };
const MAX_MESSAGE: TextLimit = { bytes: ANNOTATION_MESSAGE_MAX_BYTES };

/** One annotation, on a file of the repository. */
export interface Annotation {
  path: string;
  start_line: number;
  end_line: number;
  annotation_level: 'notice' | 'warning' | 'failure';
  message: string;
  title?: string;
}

/** A check run's result. */
export interface CheckResult {
  conclusion: 'success' | 'failure' | 'neutral' | 'skipped' | 'cancelled';
  title: string;
  summary: string;
  annotations?: readonly Annotation[];
}

/** The commit and repository of a check run. */
export interface CheckTarget {
  owner: string;
  repo: string;
  headSha: string;
}

/** `text` cut to a GitHub limit on a character boundary (a summary over 65,535 bytes is refused with 422). */
function clip(text: string, limit: TextLimit): string {
  return clipText(text, limit);
}

/** A title and summary cut to GitHub's limits. */
function clipOutput(output: { title: string; summary: string }): { title: string; summary: string } {
  return { title: clip(output.title, MAX_TITLE), summary: clip(output.summary, MAX_SUMMARY) };
}

/** The parameters naming a new run on the target commit. */
function newRun(target: CheckTarget, run: { name: string; externalId: string }) {
  return { owner: target.owner, repo: target.repo, head_sha: target.headSha, name: run.name, external_id: run.externalId };
}

/** The parameters naming an existing run. */
function existingRun(target: CheckTarget, checkRunId: number) {
  return { owner: target.owner, repo: target.repo, check_run_id: checkRunId };
}

/** Creates an in-progress check run; `externalId` comes back with GitHub's "Re-run". Resolves with its id. */
export async function startCheckRun(
  octokit: ProbotOctokit,
  target: CheckTarget,
  run: { name: string; externalId: string; title: string; summary: string },
): Promise<{ id: number; url: string }> {
  const created = await octokit.rest.checks.create({
    ...newRun(target, run),
    status: 'in_progress',
    started_at: new Date().toISOString(),
    output: clipOutput(run),
  });
  return { id: created.data.id, url: created.data.html_url ?? '' };
}

/**
 * Completes a check run with its result: annotations in batches of {@link ANNOTATIONS_PER_REQUEST}
 * (at most {@link MAX_ANNOTATIONS}), the last batch with the conclusion. Resolves with the number
 * of requests made.
 */
export async function completeCheckRun(
  octokit: ProbotOctokit,
  target: CheckTarget,
  checkRunId: number,
  result: CheckResult,
): Promise<number> {
  const all = (result.annotations ?? []).slice(0, MAX_ANNOTATIONS).map((a) => ({ ...a, message: clip(a.message, MAX_MESSAGE) }));
  const left = (result.annotations?.length ?? 0) - all.length;
  const summary = clip(left > 0 ? `${result.summary}\n\n_${left} more annotations were left out._` : result.summary, MAX_SUMMARY);
  const output = { title: clip(result.title, MAX_TITLE), summary };
  const batches: (typeof all)[] = [];
  for (let i = 0; i < all.length; i += ANNOTATIONS_PER_REQUEST) batches.push(all.slice(i, i + ANNOTATIONS_PER_REQUEST));
  const last = batches.pop() ?? [];
  for (const batch of batches) {
    await octokit.rest.checks.update({ ...existingRun(target, checkRunId), output: { ...output, annotations: batch } });
  }
  await octokit.rest.checks.update({
    ...existingRun(target, checkRunId),
    status: 'completed',
    conclusion: result.conclusion,
    completed_at: new Date().toISOString(),
    output: last.length > 0 ? { ...output, annotations: last } : output,
  });
  return batches.length + 1;
}

/** Updates an in-progress check run's title and summary (a long job showing how far it got). */
export async function updateCheckRun(
  octokit: ProbotOctokit,
  target: CheckTarget,
  checkRunId: number,
  output: { title: string; summary: string },
): Promise<void> {
  await octokit.rest.checks.update({ ...existingRun(target, checkRunId), status: 'in_progress', output: clipOutput(output) });
}

/** Creates a check run that is complete from the start (a result known before any work). Resolves with its id. */
export async function createCompletedCheckRun(
  octokit: ProbotOctokit,
  target: CheckTarget,
  run: { name: string; externalId: string },
  result: Omit<CheckResult, 'annotations'>,
): Promise<number> {
  const now = new Date().toISOString();
  const created = await octokit.rest.checks.create({
    ...newRun(target, run),
    status: 'completed',
    conclusion: result.conclusion,
    started_at: now,
    completed_at: now,
    output: clipOutput(result),
  });
  return created.data.id;
}
