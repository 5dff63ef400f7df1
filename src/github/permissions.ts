/**
 * Who may run `/pve` commands: collaborators with write, maintain or admin permission, as GitHub's
 * permission API says (`GET /repos/{owner}/{repo}/collaborators/{username}/permission`) — never
 * guessed from the payload's `author_association`, which says how someone is related to the
 * repository, not what they may do in it.
 */
import type { ProbotOctokit } from 'probot';

/** Roles that may run commands. */
const ALLOWED = new Set(['admin', 'maintain', 'write']);

/** What GitHub said about a user's permission. */
interface CommandPermission {
  allowed: boolean;
  /** The role GitHub reported (`read`, `triage`, `write`, `maintain`, `admin`, `none`). */
  role: string;
}

/**
 * Asks GitHub for `username`'s permission on the repository. `permission` folds maintain into
 * write and triage into read; `role_name` keeps them apart, so both are consulted. A user who is
 * not a collaborator at all answers 404 there: no permission.
 */
export async function commandPermission(
  octokit: ProbotOctokit,
  repo: { owner: string; name: string },
  username: string,
): Promise<CommandPermission> {
  try {
    const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({ owner: repo.owner, repo: repo.name, username });
    const role = data.role_name || data.permission;
    return { allowed: ALLOWED.has(data.permission) || ALLOWED.has(data.role_name), role };
  } catch (error) {
    if ((error as { status?: number }).status === 404) return { allowed: false, role: 'none' };
    throw error;
  }
}
