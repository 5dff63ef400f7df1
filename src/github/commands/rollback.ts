/**
 * `/pve rollback`: on a merged pull request, rolls the guests its latest apply snapshotted back to
 * those snapshots (the handler is merge-to-apply's `rollbackCommand`). It first answers with what
 * it would do; `/pve rollback confirm` does it.
 */
import type { CommandSpec } from './command.js';

export const rollbackCommand = {
  name: 'rollback',
  help: "on a merged pull request: show how its latest apply's guests would be rolled back to the snapshots it took; `/pve rollback confirm` does it",
  where: ['merged-pull-request'],
  who: 'writer',
  handler: 'provided',
} as const satisfies CommandSpec;
