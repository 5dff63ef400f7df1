import { describe, expect, it } from 'vitest';
import { helpText, parseCommands } from './chat-ops.js';

describe('parseCommands', () => {
  it.each([
    ['/pve plan', [{ name: 'plan', args: [] }]],
    ['/pve', [{ name: 'help', args: [] }]],
    ['/pve PLAN now', [{ name: 'plan', args: ['now'] }]],
    ['Thanks!\r\n/pve plan\r\n', [{ name: 'plan', args: [] }]],
    ['   /pve plan', [{ name: 'plan', args: [] }]],
    [
      '/pve plan\n/pve help',
      [
        { name: 'plan', args: [] },
        { name: 'help', args: [] },
      ],
    ],
    ['/pvep lan', []],
    ['please /pve plan', []],
    ['    /pve plan', []],
    ['> /pve plan', []],
    ['`/pve plan`', []],
    ['```\n/pve plan\n```', []],
    ['~~~sh\n/pve plan\n~~~\n/pve help', [{ name: 'help', args: [] }]],
    ['````\n```\n/pve plan\n````\n/pve help', [{ name: 'help', args: [] }]],
    ['```\n/pve plan', []],
  ])('%j → %j', (body, expected) => {
    expect(parseCommands(body)).toEqual(expected);
  });
});

describe('helpText', () => {
  it('names an unknown command with word characters only, so a reply cannot mention anyone or break out of code', () => {
    expect(helpText('x`@all<b>').split('\n')[0]).toBe('`/pve xallb` is not a pve-gitops command.');
  });
});
