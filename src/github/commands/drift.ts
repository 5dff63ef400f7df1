import type { CommandSpec } from './command.js';

/** `/pve drift`: a drift report now, answered where it was asked (the handler is the drift scheduler's, given in `src/server/worker-role.ts`). */
export const driftCommand = {
  name: 'drift',
  help: 'read every cluster against the default branch now and update the drift report issue (also on issues)',
  where: ['pull-request', 'merged-pull-request', 'issue'],
  who: 'writer',
  handler: 'provided',
} as const satisfies CommandSpec;
