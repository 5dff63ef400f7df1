/**
 * One comment per pull request that the App keeps current (renovate's `ensureComment`): found by a
 * hidden marker at the start of its body, created once, edited in place, and not touched at all
 * when the body would not change. The comment's id and a hash of the body it was last given are
 * remembered by the caller (in Redis), so an unchanged re-plan costs no GitHub request at all and
 * a changed one a single edit; without them (or when the comment was deleted) the pull request's
 * comments are listed once to find it.
 *
 * Each answer says when the comment got its body, by GitHub's clock (`writtenAt`): the write's
 * `updated_at` (or `created_at`) from GitHub's answer, or — when nothing was written — the time
 * of the write that gave it this body. Merge-to-apply compares it with `merged_at`: a plan shown
 * only after the merge was not what anyone saw when they merged.
 */
import { createHash } from 'node:crypto';
import type { ProbotOctokit } from 'probot';

/** The comment as last written, remembered between plans. */
export interface KnownComment {
  id: number;
  /** sha256 of the body last written. */
  bodyHash: string;
  /** When that body was written, by GitHub's clock (ISO 8601); absent when not known. */
  writtenAt?: string | undefined;
}

/** What {@link ensureComment} did. */
export interface EnsuredComment extends KnownComment {
  action: 'created' | 'updated' | 'unchanged';
}

/** Options of {@link ensureComment}. */
interface EnsureCommentOptions {
  owner: string;
  repo: string;
  issueNumber: number;
  /** Hidden marker the body starts with (an HTML comment). */
  marker: string;
  body: string;
  /** The comment as last written, if known. */
  known?: KnownComment | undefined;
}

/** sha256 of a comment body, as kept in {@link KnownComment}. */
export function bodyHash(body: string): string {
  return createHash('sha256').update(body).digest('hex');
}

/** GitHub's time of a comment's last write, from its REST representation. */
function writtenAt(comment: { updated_at?: string | null; created_at?: string | null }): string | undefined {
  return comment.updated_at ?? comment.created_at ?? undefined;
}

function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { status?: number }).status === 404;
}

/** Creates or edits the marked comment so it has `body`; edits nothing when it already has it. */
export async function ensureComment(octokit: ProbotOctokit, options: EnsureCommentOptions): Promise<EnsuredComment> {
  if (!options.body.startsWith(options.marker)) throw new Error('a sticky comment body must start with its marker');
  const hash = bodyHash(options.body);
  const { owner, repo } = options;
  if (options.known) {
    if (options.known.bodyHash === hash) return { ...options.known, action: 'unchanged' };
    try {
      const { data } = await octokit.rest.issues.updateComment({ owner, repo, comment_id: options.known.id, body: options.body });
      return { id: options.known.id, bodyHash: hash, writtenAt: writtenAt(data), action: 'updated' };
    } catch (error) {
      // Deleted by someone: find another marked comment, or create one.
      if (!isNotFound(error)) throw error;
    }
  }
  const comments = await octokit.paginate(octokit.rest.issues.listComments, {
    owner,
    repo,
    issue_number: options.issueNumber,
    per_page: 100,
  });
  // Only a bot's comment counts: a person quoting the marker must not have their comment rewritten.
  const found = comments.find((comment) => comment.user?.type === 'Bot' && comment.body?.startsWith(options.marker));
  if (found) {
    if (found.body === options.body) return { id: found.id, bodyHash: hash, writtenAt: writtenAt(found), action: 'unchanged' };
    const { data } = await octokit.rest.issues.updateComment({ owner, repo, comment_id: found.id, body: options.body });
    return { id: found.id, bodyHash: hash, writtenAt: writtenAt(data), action: 'updated' };
  }
  const created = await octokit.rest.issues.createComment({ owner, repo, issue_number: options.issueNumber, body: options.body });
  return { id: created.data.id, bodyHash: hash, writtenAt: writtenAt(created.data), action: 'created' };
}
