/**
 * `/pve <command>` in pull request comments. A command is the first word of a line, outside fenced
 * and indented code blocks and outside quotes, so quoting someone's command or showing one in a
 * code block never runs it. Pure: the webhook handler uses it to decide whether to enqueue.
 */

/** One command found in a comment. */
export interface ChatCommand {
  /** The word after `/pve`, lower-cased; `help` when there is none. */
  name: string;
  args: string[];
}

/** Commands the App understands, with their line in the help text; anything else is answered with the help. */
export const COMMAND_HELP: Readonly<Record<string, string>> = {
  plan: 'plan the pull request again, against the clusters as they are now',
  drift: 'read every cluster against the default branch now and update the drift report issue (also on issues)',
  apply:
    'on a merged pull request: apply its latest plan again (after a conflict, re-plan with /pve plan first); open pull requests are applied when they merge',
  help: 'this list',
};

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const COMMAND = /^ {0,3}\/pve(?:[ \t]+(.*))?$/;

/**
 * The commands of a comment body, in order. Lines inside fenced code blocks (``` or ~~~, closed
 * by a fence of the same kind at least as long), indented code (four spaces or a tab) and block
 * quotes (`>`) are skipped.
 */
export function parseCommands(body: string): ChatCommand[] {
  const commands: ChatCommand[] = [];
  let fence: string | undefined;
  for (const line of body.split(/\r?\n/)) {
    const fenceMatch = FENCE.exec(line);
    if (fence !== undefined) {
      if (fenceMatch?.[1] !== undefined && fenceMatch[1][0] === fence[0] && fenceMatch[1].length >= fence.length) fence = undefined;
      continue;
    }
    if (fenceMatch?.[1] !== undefined) {
      fence = fenceMatch[1];
      continue;
    }
    const match = COMMAND.exec(line.trimEnd());
    if (!match) continue;
    const words = (match[1] ?? '').trim().split(/\s+/).filter(Boolean);
    const [name = 'help', ...args] = words;
    commands.push({ name: name.toLowerCase().slice(0, 40), args: args.slice(0, 10).map((arg) => arg.slice(0, 100)) });
  }
  return commands;
}

/** The reply to `/pve help` (and to a command the App does not know). */
export function helpText(unknown?: string): string {
  const lines = [
    // Typed by anyone: only word characters go back into the reply (no mentions, no markup).
    unknown !== undefined ? `\`/pve ${unknown.replace(/[^\w-]/g, '')}\` is not a pve-gitops command.` : undefined,
    'pve-gitops commands (comment on the pull request, one per line; collaborators with write, maintain or admin permission):',
    '',
    ...Object.entries(COMMAND_HELP).map(([name, what]) => `- \`/pve ${name}\` — ${what}`),
  ];
  return lines.filter((line) => line !== undefined).join('\n');
}
