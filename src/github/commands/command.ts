/**
 * What a `/pve` command declares about itself. Every command is one file of this folder and one
 * line of `registry.ts`; the parser, the webhook handler, `/pve help` and the plan worker's dispatch
 * all read that registry, so no other place lists the commands.
 */

/** Where a command may be asked: a comment on an open pull request, on a merged one, or on an issue. */
type CommandPlace = 'pull-request' | 'merged-pull-request' | 'issue';

/**
 * Who may run it: `anyone` (answered at once, no permission asked), or a collaborator with write,
 * maintain or admin permission (`writer`, checked by the plan worker before anything runs).
 */
type CommandRunner = 'anyone' | 'writer';

/**
 * How the plan worker runs it: `help` answers with the help text, `replan` plans the pull request's
 * current head again, `provided` runs the handler the composition root gives the plan worker under
 * the command's name (it reaches the apply or drift side, which the worker does not import).
 */
type CommandHandlerKind = 'help' | 'replan' | 'provided';

/** One `/pve` command. */
export interface CommandSpec {
  /** The word after `/pve`, lower case. */
  name: string;
  /** Its line in `/pve help`. */
  help: string;
  /** Where it may run; on an issue only a command listing `issue` is enqueued. */
  where: readonly CommandPlace[];
  who: CommandRunner;
  handler: CommandHandlerKind;
}
