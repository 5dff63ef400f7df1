/**
 * `/pve help` (and `/pve` alone): the list of commands, for anyone. This file only declares the
 * command for the registry (`registry.ts`); the list is written from the registry (`../chat-ops.ts`).
 */
import type { CommandSpec } from './command.js';

export const helpCommand = {
  name: 'help',
  help: 'this list',
  where: ['pull-request', 'merged-pull-request'],
  who: 'anyone',
  handler: 'help',
} as const satisfies CommandSpec;
