/**
 * `/pve apply --now` (README "Apply windows"): the arguments `/pve apply` takes. `--now` starts a
 * run whose guests are let in outside their apply windows, and only an admin of the repository
 * may ask for it (the role GitHub's permission API reported when the command was accepted,
 * `src/github/permissions.ts`). Any other argument is refused rather than ignored.
 */

/** What the arguments ask for, or the reply that refuses them. */
export type ApplyOverride = { now: boolean; refusal?: undefined } | { now?: undefined; refusal: string };

/** Reads `/pve apply`'s arguments for `who` (`@login`), whose role is `role`. */
export function applyOverride(args: readonly string[], role: string | undefined, who: string): ApplyOverride {
  const unknown = args.filter((arg) => arg !== '--now');
  if (unknown.length > 0)
    return {
      refusal: `${who} nothing was applied: \`/pve apply\` takes no argument but \`--now\` (got \`${unknown.join(' ').replace(/`/g, '')}\`).`,
    };
  if (!args.includes('--now')) return { now: false };
  if (role !== 'admin')
    return {
      refusal:
        `${who} nothing was applied: \`/pve apply --now\` applies outside the apply windows, which only a repository admin may ask for, ` +
        `and GitHub reports **${role ?? 'none'}** for you. \`/pve apply\` without \`--now\` applies in the next window.`,
    };
  return { now: true };
}
