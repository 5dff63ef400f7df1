/**
 * `/pve adopt [<guest> [<key> …]]`: on the drift report issue, a pull request that writes the
 * live values of the findings (all, or the guest's, or those keys) into the spec files, and
 * imports the unowned guests among them into new spec files (`core/adopt/adopt-unowned.ts`). This file
 * only declares the command for the registry (`registry.ts`); the handler, given in
 * `src/server/worker-role.ts`, enqueues the adopt job (`src/queue/adopt/`).
 */
import type { CommandSpec } from './command.js';

export const adoptCommand = {
  name: 'adopt',
  help: 'on the drift report issue: open a pull request writing the live values into the specs, and new spec files for unowned guests in range (all findings, or `/pve adopt <guest> [<key> …]`); needs `adopt: on` in .github/pve-gitops.yml',
  where: ['issue'],
  who: 'writer',
  handler: 'provided',
} as const satisfies CommandSpec;
