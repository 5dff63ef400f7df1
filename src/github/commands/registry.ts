/**
 * The `/pve` commands, in the order `/pve help` lists them: one import and one line per command.
 * Read by the parser and the help text (`../chat-ops.ts`), the webhook handler (what it enqueues)
 * and the plan worker (how it runs one).
 */
import { adoptCommand } from './adopt.js';
import { applyCommand } from './apply.js';
import type { CommandSpec } from './command.js';
import { driftCommand } from './drift.js';
import { helpCommand } from './help.js';
import { planCommand } from './plan.js';
import { rollbackCommand } from './rollback.js';

export const COMMANDS = [
  planCommand,
  driftCommand,
  applyCommand,
  rollbackCommand,
  adoptCommand,
  helpCommand,
] as const satisfies readonly CommandSpec[];

/** A command's name. */
type CommandName = (typeof COMMANDS)[number]['name'];

/** Commands whose handler the composition root gives the plan worker. */
export type ProvidedCommandName = Extract<(typeof COMMANDS)[number], { handler: 'provided' }>['name'];

/** The command of that name, if there is one. */
export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((command) => command.name === name);
}

/** The command `/pve` alone asks for. */
export const DEFAULT_COMMAND: CommandName = helpCommand.name;
