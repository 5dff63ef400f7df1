import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { pick, seededRandom } from '../../../test/helpers/seeded-random.js';
import { describe, expect, it } from 'vitest';
import { Document } from 'yaml';
import { estateFiles } from '../../../test/bench/estate.js';
import { parseCommonYaml } from './common-yaml.js';
import { parseSpecText, parseWithLibrary } from './parse-spec-file.js';
import type { ParsedSpecText } from './parsed-spec.js';
import { resolveSpecLimits, type SpecLimits } from './spec-limits.js';

const LIMITS = resolveSpecLimits();

/** The fast reader's answer for `text`: undefined (the library's turn) or exactly the library's result. */
function compare(text: string, limits: SpecLimits = LIMITS): ParsedSpecText | undefined {
  const fast = parseCommonYaml(text, limits);
  if (fast === undefined) return undefined;
  const library = parseWithLibrary(text, limits);
  // Node's strict comparison tells -0 from 0 and is not misled by a key named `constructor`;
  // the diff of toEqual says where they differ.
  if (!isDeepStrictEqual(fast, library)) expect(fast, text).toEqual(library);
  expect(isDeepStrictEqual(fast, library), text).toBe(true);
  return fast;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

describe('the common YAML reader gives the library’s result or none', () => {
  it('reads the generated 1,000-guest estate, both layouts, exactly as the library does', () => {
    const texts = [
      ...estateFiles(1_000, { kind: 'grouped', files: 25 }),
      ...estateFiles(200, { kind: 'per-guest' }),
      ...estateFiles(100, { kind: 'grouped', files: 4 }, { guests: [3, 4], memory: '6144' }),
    ].map((f) => f.text);
    for (const text of texts) expect(compare(text), text.slice(0, 200)).toBeDefined();
  });

  it('reads the example repository exactly as the library does', () => {
    const root = fileURLToPath(new URL('../../../specs-example', import.meta.url));
    const files = yamlFiles(root);
    expect(files.length).toBeGreaterThan(3);
    for (const file of files) expect(compare(readFileSync(file, 'utf8')), file).toBeDefined();
  });

  it.each([
    ['an empty text', '', 0],
    ['comments only', '# nothing\n\n  # here\n', 0],
    ['one separator', '---\n', 1],
    ['a document, then an empty one', 'a: 1\n---\n# only a comment\n', 2],
    ['separators with comments', '--- # first\na: 1\n---   \nb: [x, "y", \'z\'] # c\n', 2],
    ['empty values and compact lists', 'a:\nb: # c\nc:\n- 1\n- two\nd:\n  - [x]\n  - {k: v}\n', 1],
    ['comments at any indentation between entries', 'a:\n# c\n  b: 1\n      # d\n  c: x#y\ne: 1\n', 1],
    ['core-schema scalars', 'a: -0\nb: 0x1F\nc: 0o17\nd: 1e3\ne: .5\nf: +12\ng: ~\nh: TRUE\ni: .NaN\nj: -.inf\nk: 012\n', 1],
    ['keys Object.prototype has', 'constructor: 1\ntoString: [a]\nhasOwnProperty: {x: 1}\n', 1],
  ])('reads %s', (_name, text, documents) => {
    expect(compare(text)?.documents).toHaveLength(documents);
  });

  it.each([
    ['an anchor and alias', 'a: &x 1\nb: *x\n'],
    ['a merge key', 'a: {x: 1}\nb:\n  <<: {y: 2}\n'],
    ['a tag', 'a: !!str 1\n'],
    ['a kept block scalar', 'a: |+\n  text\n'],
    ['a folded block scalar with a more indented line', 'a: >\n  text\n    more\n'],
    ['a multi-line plain scalar', 'a: one\n  two\n'],
    ['an escape in double quotes', 'a: "x\\ty"\n'],
    ['a tab', 'a:\tb\n'],
    ['CRLF line ends', 'a: 1\r\nb: 2\r\n'],
    ['a byte-order mark', '\ufeffa: 1\n'],
    ['a duplicate key', 'a: 1\na: 2\n'],
    ['a __proto__ key', '__proto__: {x: 1}\n'],
    ['a key that is not a string', 'true: 1\n'],
    ['a null key', '~: 1\n'],
    ['a quoted key', '"a": 1\n'],
    ['a number key', '1: a\n'],
    ['a key with spaces', 'a b: 1\n'],
    ['an integer beyond 2^53', 'vmid: 9007199254740993\n'],
    ['a nested mapping in a value', 'a: b: c\n'],
    ['a value ending in a colon', 'a: b:\n'],
    ['a trailing comma', 'a: [1, 2,]\n'],
    ['a flow collection over two lines', 'a: [1,\n  2]\n'],
    ['a flow mapping entry without a value', 'a: {b}\n'],
    ['a colon in a flow scalar', 'a: [http://x]\n'],
    ['a list item holding a mapping', 'a:\n  - b: 1\n'],
    ['an empty list item', 'a:\n  -\n'],
    ['a document end marker', 'a: 1\n...\n'],
    ['a directive', '%YAML 1.2\n---\na: 1\n'],
    ['content after a separator', '--- {a: 1}\n'],
    ['a top-level list', '- a\n- b\n'],
    ['a top-level scalar', 'just text\n'],
    ['an indented top level', '  a: 1\n'],
    ['inconsistent indentation', 'a:\n    b: 1\n  c: 2\n'],
    ['a reserved first character', 'a: @x\n'],
    ['invalid YAML', 'a: [\n'],
    ['a comment without a space after a quoted value', 'a: "x"#c\n'],
    ['a lone surrogate', 'a: \ud800\n'],
  ])('leaves %s to the library', (_name, text) => {
    expect(parseCommonYaml(text, LIMITS)).toBeUndefined();
    // …which is what parseSpecText then answers with.
    expect(parseSpecText(text, LIMITS)).toStrictEqual(parseWithLibrary(text, LIMITS));
  });

  it('leaves texts near a limit to the library, which reports it', () => {
    const text = 'a:\n  b:\n    c: [1, 2]\n';
    expect(compare(text, resolveSpecLimits({ maxDepth: 5 }))).toBeDefined();
    expect(parseCommonYaml(text, resolveSpecLimits({ maxDepth: 3 }))).toBeUndefined();
    expect(compare(text, resolveSpecLimits({ maxExpandedNodes: 9 }))).toBeDefined();
    expect(parseCommonYaml(text, resolveSpecLimits({ maxExpandedNodes: 8 }))).toBeUndefined();
    expect(parseSpecText(text, resolveSpecLimits({ maxExpandedNodes: 8 })).documents[0]?.kind).toBe('yaml-errors');
  });

  it('asks the tags only for plain scalars starting with what their tests can match', () => {
    // common-yaml.ts resolves plain scalars starting with any other character as strings
    // without asking the tags; these are the tests that set was read from.
    const tags = new Document(null, { merge: true }).schema.tags;
    const tests = tags.filter((tag) => tag.default !== false && tag.test).map((tag) => tag.test?.source);
    expect(tests).toEqual([
      '^(?:~|[Nn]ull|NULL)?$',
      '^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$',
      '^0o[0-7]+$',
      '^[-+]?[0-9]+$',
      '^0x[0-9a-fA-F]+$',
      '^(?:[-+]?\\.(?:inf|Inf|INF)|\\.nan|\\.NaN|\\.NAN)$',
      '^[-+]?(?:\\.[0-9]+|[0-9]+(?:\\.[0-9]*)?)[eE][-+]?[0-9]+$',
      '^[-+]?(?:\\.[0-9]+|[0-9]+\\.[0-9]*)$',
      '^<<$',
    ]);
  });

  it('agrees with the library on generated texts in and around the subset', () => {
    const random = seededRandom(12);
    let read = 0;
    const runs = 4_000;
    for (let n = 0; n < runs; n++) {
      const text = mutate(generateText(random), random);
      if (compare(text) !== undefined) read += 1;
    }
    // Both sides are exercised: many texts are read, many are left to the library.
    expect(read).toBeGreaterThan(runs * 0.25);
    expect(read).toBeLessThan(runs * 0.9);
  });
});

/** Keys and scalars as spec files write them, and the unusual ones (picked now and then) that test the subset's edges. */
const KEYS = ['kind', 'name', 'config', 'net0', 'a-b', 'x.y', '_k', 'memory', 'tags', 'constructor', 'y', 'no', 'on', 'Yes'];
const ODD_KEYS = ['true', 'Null', '~', '1', '0x1', '<<', '__proto__', 'a b', '-k', '"q"', "'q'", 'k ', 'ü', '.inf', 'name'];
const SCALARS = [
  ...['0', '-0', '007', '+1', '4096', '0o17', '0x1F', '1.5', '.5', '1.', '1e3', '1E-3', '.inf', '-.Inf', '.nan', '.NaN'],
  ...['true', 'True', 'tRue', 'FALSE', 'yes', 'null', 'NULL', 'nUll', '~', 'a b', 'a  b', 'a#b', 'a:b', 'http://x', '-x', 'x,y'],
  ...['x]', 'x}', "'q'", '"q"', "'it''s'", '"a\'b"', "'a\"b'", '""', "''", 'ü', 'local-lvm:32,discard=on', 'virtio,bridge=vmbr0', 'x '],
  ...['"x" ', 'x %', 'a&b', 'a*b', 'a|b', 'a!b', '-5x', 'n', 'T', '.x', '+x', '<x'],
];
const ODD_SCALARS = [
  ...['12345678901234567890', '9007199254740993', '0o8', '0xZZ', 'a #b', 'a: b', 'a:', '- x', '-', '?x', ':x', '!x', '&a', '*a'],
  ...['|', '>', '%x', '@x', '`x', ',x', '[x', '{x', "'it's'", '"a\\nb"', 'a\tb', '"x', "'x"],
];

/** Scalars that a flow collection can hold as they are. */
const FLOW_SCALARS = SCALARS.filter((text) => !/[:#,[\]{}]/.test(text));

const often = <T>(random: () => number, usual: readonly T[], odd: readonly T[]): T => pick(random, random() < 0.96 ? usual : odd);

function scalar(random: () => number): string {
  return often(random, SCALARS, ODD_SCALARS);
}

function key(random: () => number): string {
  // Mostly distinct within a mapping; a duplicate now and then.
  const name = often(random, KEYS, ODD_KEYS);
  return random() < 0.7 ? `${name}${Math.floor(random() * 100)}` : name;
}

function flow(random: () => number, depth: number): string {
  const sp = (): string => pick(random, ['', ' ', '  ']);
  const count = Math.floor(random() * 4);
  const item = (): string => (depth < 2 && random() < 0.2 ? flow(random, depth + 1) : often(random, FLOW_SCALARS, SCALARS));
  if (random() < 0.5) {
    const items = Array.from({ length: count }, item);
    return `[${sp()}${items.join(`${sp()},${sp()}`)}${sp()}${random() < 0.05 ? ',' : ''}]`;
  }
  const entries = Array.from({ length: count }, () => `${key(random)}${often(random, [': ', ':  '], [':', ' : '])}${item()}`);
  return `{${sp()}${entries.join(`${sp()},${sp()}`)}${sp()}}`;
}

function comment(random: () => number): string {
  return random() < 0.8 ? '' : often(random, [' # c', '  #c', ' #', ' # a: b'], ['#c']);
}

function value(random: () => number): string {
  const r = random();
  if (r < 0.65) return scalar(random);
  if (r < 0.95) return flow(random, 0);
  return '';
}

/** A block scalar's header and lines, indented from `indent` (the key's). */
function blockScalar(random: () => number, indent: number, lines: string[], header: string): void {
  const content = ' '.repeat(indent + often(random, [2, 4], [0, 1]));
  lines[lines.length - 1] += ` ${header}${often(random, ['', '-'], ['+', '2', '-+'])}${comment(random)}`;
  const count = 1 + Math.floor(random() * 4);
  if (random() < 0.05) lines.push('');
  for (let n = 0; n < count; n++) {
    const r = random();
    if (r < 0.15) lines.push('');
    else if (r < 0.2) lines.push(often(random, [`${content}# not a comment`, `${content}  more indented`], [`${content} `, ' # c']));
    else lines.push(`${content}${pick(random, ['text', 'a: b', 'line two', '- item', '[x]'])}`);
  }
  if (random() < 0.2) lines.push('');
}

function block(random: () => number, indent: number, depth: number, lines: string[]): void {
  const pad = ' '.repeat(indent);
  const entries = 1 + Math.floor(random() * 3);
  for (let e = 0; e < entries; e++) {
    if (random() < 0.1) lines.push(pick(random, ['', `${pad}# comment`, '# at column 0', '      # deep', '   ']));
    const name = key(random);
    const r = random();
    if (depth < 3 && r < 0.2) {
      lines.push(`${pad}${name}:${comment(random)}`);
      block(random, indent + often(random, [2, 4], [1, 3]), depth + 1, lines);
    } else if (depth < 3 && r < 0.35) {
      lines.push(`${pad}${name}:${comment(random)}`);
      const seqPad = ' '.repeat(indent + pick(random, [0, 2, 2, 4]));
      const items = 1 + Math.floor(random() * 3);
      for (let i = 0; i < items; i++) lines.push(`${seqPad}-${often(random, [' ', '  '], [''])}${value(random)}${comment(random)}`);
    } else if (r < 0.42) {
      lines.push(`${pad}${name}:`);
      blockScalar(random, indent, lines, pick(random, ['|', '>']));
    } else {
      lines.push(`${pad}${name}:${often(random, [' ', '  '], [''])}${value(random)}${comment(random)}`);
    }
  }
}

function generateText(random: () => number): string {
  const docs: string[] = [];
  const count = 1 + Math.floor(random() * 3);
  for (let d = 0; d < count; d++) {
    const lines: string[] = [];
    if (d > 0 || random() < 0.3) lines.push(often(random, ['---', '--- # doc', '---  '], ['--- a: 1', '...', '---x']));
    if (random() < 0.9) block(random, 0, 0, lines);
    docs.push(lines.join('\n'));
  }
  return `${docs.join('\n')}${random() < 0.8 ? '\n' : ''}`;
}

/** Now and then a small edit that real files get: a tab, a CR, a lost or doubled character, a moved line. */
function mutate(text: string, random: () => number): string {
  if (random() < 0.85 || text.length === 0) return text;
  const at = Math.floor(random() * text.length);
  switch (pick(random, ['tab', 'cr', 'drop', 'double', 'indent', 'colon'])) {
    case 'tab':
      return `${text.slice(0, at)}\t${text.slice(at)}`;
    case 'cr':
      return text.replace('\n', '\r\n');
    case 'drop':
      return text.slice(0, at) + text.slice(at + 1);
    case 'double':
      return text.slice(0, at) + text.slice(at, at + 1) + text.slice(at);
    case 'indent':
      return `${text.slice(0, at)}\n ${text.slice(at)}`;
    default:
      return `${text.slice(0, at)}: ${text.slice(at)}`;
  }
}
