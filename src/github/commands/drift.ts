/**
 * `/pve drift`: a drift report now, answered where it was asked. This file only declares the
 * command for the registry (`registry.ts`); the handler is the drift scheduler's, given in
 * `src/server/worker-role.ts`.
 */
import type { CommandSpec } from './command.js';

export const driftCommand = {
  name: 'drift',
  help: 'read every cluster against the default branch now and update the drift report issue (also on issues)',
  where: ['pull-request', 'merged-pull-request', 'issue'],
  who: 'writer',
  handler: 'provided',
} as const satisfies CommandSpec;
