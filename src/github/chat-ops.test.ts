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

  // Only what a reader of the thread sees counts: GitHub renders these without showing the command.
  it.each([
    ['an HTML comment on one line', '<!-- /pve apply -->'],
    ['an HTML comment over lines', 'Thanks!\n<!--\n/pve apply\n-->'],
    ['an HTML comment left open in an HTML block, closed in text GitHub escapes', '</div><!--\n\n-->\n/pve apply'],
    ['a folded <details>', '<details><summary>log</summary>\n\n/pve apply\n\n</details>'],
    ['an attribute over lines', '<img alt="\n/pve apply\n" src="x.png">'],
    ['a tag that never ends', '<br title="x\n\n/pve apply'],
    ['a link title over lines', '[docs](https://example.com "\n/pve apply\n")'],
    ['an image description over lines', '![\n/pve apply\n](x.png)'],
    ['a link reference definition title', '[ref]: https://example.com\n"\n/pve apply\n"'],
    ['a code span over lines', '`x\n/pve apply\n`'],
  ])('ignores a command inside %s', (_, body) => {
    expect(parseCommands(body)).toEqual([]);
  });

  it.each([
    ['before an HTML comment', '/pve plan\n<!-- why: the conflict is settled -->'],
    ['after an autolink, in a paragraph of its own', 'See <https://example.com/x>\n\n/pve plan'],
    ['after a line break tag, in a paragraph of its own', 'Looks good<br>\n\n/pve plan'],
    ['after an image, in a paragraph of its own', '![screenshot](x.png)\n\n/pve plan'],
    ['after inline code, in a paragraph of its own', 'the `memory` change is fine\n\n/pve plan'],
  ])('runs a command %s', (_, body) => {
    expect(parseCommands(body)).toEqual([{ name: 'plan', args: [] }]);
  });
});

describe('helpText', () => {
  it('names an unknown command with word characters only, so a reply cannot mention anyone or break out of code', () => {
    expect(helpText('x`@all<b>').split('\n')[0]).toBe('`/pve xallb` is not a pve-gitops command.');
  });
});
