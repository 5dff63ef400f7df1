/**
 * The one "Drift report" issue of a repository, kept current: found by its label and the hidden
 * marker at the start of its body (written by the App, never a person's issue quoting it),
 * created when findings appear, edited only when their content changes — the content hash sits in
 * the marker, so timestamps alone never cause an edit — closed with a comment when the estate
 * matches, and reopened when drift returns. What the App last wrote is remembered by the caller
 * (in Redis), so an unchanged report costs no GitHub request at all.
 */
import { createHash } from 'node:crypto';
import type { ProbotOctokit } from 'probot';
import { type DriftReport, driftReportContent } from '../core/drift/drift-report.js';
import { DRIFT_MARKER_PREFIX, driftMarkerHash } from '../core/render/render-drift.js';

/** The label that finds the issue (created in the repository when missing). */
const DRIFT_LABEL = 'pve-gitops-drift';

/** The issue's title. */
const DRIFT_ISSUE_TITLE = 'Drift report';

/** The issue as last written; `number: 0` records that the repository has none. */
export interface KnownDriftIssue {
  number: number;
  open: boolean;
  /** Content hash of the findings the issue shows. */
  contentHash: string;
}

/** What {@link ensureDriftIssue} did. */
type DriftIssueAction = 'created' | 'updated' | 'reopened' | 'closed' | 'unchanged' | 'none';

/** Options of {@link ensureDriftIssue}. */
interface EnsureDriftIssueOptions {
  owner: string;
  repo: string;
  /** The issue as last written, if remembered; otherwise the repository's issues are searched once. */
  known?: KnownDriftIssue | undefined;
  /** Whether the report has findings (the issue is open exactly while it has). */
  findings: boolean;
  contentHash: string;
  /** The whole body, starting with the marker that carries `contentHash`. */
  body: string;
  /** Said when closing. */
  closingComment: string;
}

/** The hash of a report's content (what it says, without when it was read). */
export function driftContentHash(report: DriftReport): string {
  return createHash('sha256')
    .update(JSON.stringify(driftReportContent(report)))
    .digest('hex')
    .slice(0, 32);
}

function status(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null ? (error as { status?: number }).status : undefined;
}

/** Gone: deleted (404) or moved to another repository (410 on the old one). */
function gone(error: unknown): boolean {
  return status(error) === 404 || status(error) === 410;
}

/** The App's drift issue in the repository, searched by label and marker; `number: 0` when there is none. */
async function findDriftIssue(octokit: ProbotOctokit, owner: string, repo: string): Promise<KnownDriftIssue> {
  const issues = await octokit.paginate(octokit.rest.issues.listForRepo, { owner, repo, labels: DRIFT_LABEL, state: 'all', per_page: 100 });
  const ours = issues.filter(
    (issue) => !issue.pull_request && issue.user?.type === 'Bot' && (issue.body ?? '').startsWith(DRIFT_MARKER_PREFIX),
  );
  // An open one wins (there should be one at most); else the one most recently closed.
  const found = ours.find((issue) => issue.state === 'open') ?? ours.sort((a, b) => (a.updated_at < b.updated_at ? 1 : -1))[0];
  if (!found) return { number: 0, open: false, contentHash: '' };
  return { number: found.number, open: found.state === 'open', contentHash: driftMarkerHash(found.body ?? '') ?? '' };
}

/** Creates the label unless the repository has it. */
async function ensureLabel(octokit: ProbotOctokit, owner: string, repo: string): Promise<void> {
  try {
    await octokit.rest.issues.getLabel({ owner, repo, name: DRIFT_LABEL });
    return;
  } catch (error) {
    if (status(error) !== 404) throw error;
  }
  try {
    await octokit.rest.issues.createLabel({
      owner,
      repo,
      name: DRIFT_LABEL,
      color: 'd93f0b',
      description: 'The drift report of pve-gitops: where the clusters differ from the default branch',
    });
  } catch (error) {
    // 422: created meanwhile (another run, a person): what was wanted.
    if (status(error) !== 422) throw error;
  }
}

/** Brings the drift issue in line with the report; resolves with what was done and the issue as now written. */
export async function ensureDriftIssue(
  octokit: ProbotOctokit,
  options: EnsureDriftIssueOptions,
): Promise<{ action: DriftIssueAction; issue: KnownDriftIssue }> {
  if (!options.body.startsWith(DRIFT_MARKER_PREFIX)) throw new Error('a drift report body must start with its marker');
  const { owner, repo, contentHash } = options;
  const issue = options.known ?? (await findDriftIssue(octokit, owner, repo));

  if (!options.findings) {
    if (issue.number === 0 || !issue.open) return { action: 'none', issue };
    try {
      await octokit.rest.issues.createComment({ owner, repo, issue_number: issue.number, body: options.closingComment });
      await octokit.rest.issues.update({
        owner,
        repo,
        issue_number: issue.number,
        state: 'closed',
        state_reason: 'completed',
        body: options.body,
      });
    } catch (error) {
      if (!gone(error)) throw error;
      return { action: 'none', issue: { number: 0, open: false, contentHash: '' } };
    }
    return { action: 'closed', issue: { number: issue.number, open: false, contentHash } };
  }

  if (issue.number !== 0) {
    if (issue.open && issue.contentHash === contentHash) return { action: 'unchanged', issue };
    try {
      await octokit.rest.issues.update({
        owner,
        repo,
        issue_number: issue.number,
        body: options.body,
        ...(issue.open ? {} : { state: 'open' }),
      });
      return { action: issue.open ? 'updated' : 'reopened', issue: { number: issue.number, open: true, contentHash } };
    } catch (error) {
      // Deleted or transferred: a new one is created below.
      if (!gone(error)) throw error;
    }
  }
  await ensureLabel(octokit, owner, repo);
  const created = await octokit.rest.issues.create({ owner, repo, title: DRIFT_ISSUE_TITLE, body: options.body, labels: [DRIFT_LABEL] });
  return { action: 'created', issue: { number: created.data.number, open: true, contentHash } };
}
