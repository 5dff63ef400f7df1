import type { CommandSpec } from './command.js';

/** `/pve help` (and `/pve` alone): the list of commands, for anyone. */
export const helpCommand = {
  name: 'help',
  help: 'this list',
  where: ['pull-request', 'merged-pull-request'],
  who: 'anyone',
  handler: 'help',
} as const satisfies CommandSpec;
