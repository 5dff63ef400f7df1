import { describe, expect, it } from 'vitest';
import { helpText, parseCommands } from '../chat-ops.js';
import { COMMANDS, DEFAULT_COMMAND, findCommand } from './registry.js';

describe('the command registry', () => {
  it('names every command once, as the parser reads it', () => {
    const names = COMMANDS.map((command) => command.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(parseCommands(`/pve ${name}`)).toEqual([{ name, args: [] }]);
  });

  it.each(COMMANDS.map((command) => [command.name, command] as const))(
    '%s: has a help line, a place and is found by name',
    (name, command) => {
      expect(helpText()).toContain(`- \`/pve ${name}\` — ${command.help}`);
      expect(command.where.length).toBeGreaterThan(0);
      expect(findCommand(name)).toBe(command);
    },
  );

  it('answers `/pve` alone with a command it knows', () => {
    expect(findCommand(DEFAULT_COMMAND)).toBeDefined();
    expect(findCommand('nope')).toBeUndefined();
  });
});
