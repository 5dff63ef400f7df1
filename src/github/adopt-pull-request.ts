/**
 * The pull request `/pve adopt` opens: its files written as ONE commit on top of the default
 * branch through the Git Data API (a blob per file, a tree on the commit's tree, the commit, the
 * branch's ref), then `pulls.create`. Nothing is written to the default branch itself. Asked
 * again for the same comment (a retried job), it moves its own branch to the new commit and finds
 * the pull request it opened before instead of failing.
 */
import type { ProbotOctokit } from 'probot';

/** What to open. */
interface AdoptPullRequest {
  owner: string;
  repo: string;
  /** The default branch's name and the commit the change goes on. */
  base: { ref: string; sha: string };
  /** The branch to create, without `refs/heads/`. */
  branch: string;
  /** Repository paths and their new texts. */
  files: readonly { path: string; text: string }[];
  title: string;
  /** The commit message's body and the pull request's body. */
  commitMessage: string;
  body: string;
}

/** The pull request opened (or found, when a retried job had opened it). */
interface OpenedPullRequest {
  number: number;
  url: string;
  commit: string;
}

function status(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null ? (error as { status?: number }).status : undefined;
}

/** Writes the commit and the branch, then opens the pull request. */
export async function openAdoptPullRequest(octokit: ProbotOctokit, request: AdoptPullRequest): Promise<OpenedPullRequest> {
  const { owner, repo } = request;
  const { data: baseCommit } = await octokit.rest.git.getCommit({ owner, repo, commit_sha: request.base.sha });
  const tree = [];
  for (const file of request.files) {
    const { data: blob } = await octokit.rest.git.createBlob({ owner, repo, content: file.text, encoding: 'utf-8' });
    tree.push({ path: file.path, mode: '100644' as const, type: 'blob' as const, sha: blob.sha });
  }
  const { data: newTree } = await octokit.rest.git.createTree({ owner, repo, base_tree: baseCommit.tree.sha, tree });
  const { data: commit } = await octokit.rest.git.createCommit({
    owner,
    repo,
    message: request.commitMessage,
    tree: newTree.sha,
    parents: [request.base.sha],
  });
  try {
    await octokit.rest.git.createRef({ owner, repo, ref: `refs/heads/${request.branch}`, sha: commit.sha });
  } catch (error) {
    // 422: the branch exists — this comment's earlier attempt made it. It is the App's own branch.
    if (status(error) !== 422) throw error;
    await octokit.rest.git.updateRef({ owner, repo, ref: `heads/${request.branch}`, sha: commit.sha, force: true });
  }
  try {
    const { data: pr } = await octokit.rest.pulls.create({
      owner,
      repo,
      title: request.title,
      head: request.branch,
      base: request.base.ref,
      body: request.body,
    });
    return { number: pr.number, url: pr.html_url, commit: commit.sha };
  } catch (error) {
    if (status(error) !== 422) throw error;
    const { data: open } = await octokit.rest.pulls.list({ owner, repo, head: `${owner}:${request.branch}`, state: 'open' });
    const found = open[0];
    if (!found) throw error;
    return { number: found.number, url: found.html_url, commit: commit.sha };
  }
}
