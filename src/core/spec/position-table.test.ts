import { describe, expect, it } from 'vitest';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseAllDocuments, type Document } from 'yaml';
import { documentPositions, type DocPath, type DocumentPositions } from './document-positions.js';
import { buildPositionTable, lineCounterFrom, tablePositions } from './position-table.js';

/** Documents that exercise every rule of the walk. Errors in them do not matter here: both sides see the same tree. */
const DOCUMENTS: [string, string][] = [
  [
    'anchors, aliases and merges',
    `kind: VM
name: a
base: &base { memory: 2048, cores: 2 }
more: &more
  balloon: 0
  net0: &nic { model: virtio, bridge: vmbr0 }
config:
  <<: [*base, *more]
  net1: *nic
  net2: { <<: *nic, bridge: vmbr1 }
  cores: 4
aliased: *base
list: &list [a, b, *nic]
again: *list
`,
  ],
  [
    'flow collections',
    `vmids: { lower: 100, upper: 200 }
nodes: [n1, [n2, n3], { deep: [x, { y: z }] }, k: v]
empty: {}
none: []
`,
  ],
  [
    'empty values, nulls, anchored and tagged empties',
    `config:
  description:
  tilde: ~
  word: null
  quoted: ""
  anchored: &e
  aliasOfEmpty: *e
  tagged: !!str
? explicit
last:
`,
  ],
  [
    'block lists and deep paths',
    `ignore:
  - description
  - tags
  -
  - - nested
    - list
a:
  b:
    c:
      d:
        e: deep
    c2: [1, 2, 3]
`,
  ],
  [
    'numeric and odd keys',
    `1: one
"0": zero
0x10: hex
true: yes
? [complex, key]
: value
"with.dot": dotted
"with space": spaced
__proto__: proto
toString: shadow
constructor:
  x: 1
`,
  ],
  ['a recursive alias', `a: &r { self: *r, leaf: 1 }\nb: *r\n`],
  ['CRLF and a byte-order mark', '\uFEFFkind: VM\r\nname: a\r\nconfig:\r\n  memory: 1\r\n  tags: [x, y]\r\n'],
  ['a later document of a file', `kind: Cluster\nname: c\n---\n# comment\n\nkind: VM\nconfig:\n  net0:\n    model: virtio\n`],
  [
    'block scalars and comments',
    `# head\nkind: VM # trailing\ndescription: |\n  line 1\n  line 2\nconfig: >-\n  folded\n  text\nafter: 1\n`,
  ],
  ['duplicate keys (first one wins)', `a: 1\na: { b: 2 }\n`],
  ['a document that is a list', `- a\n- { b: c }\n`],
  ['a document that is a scalar', `just text\n`],
  ['an empty document', `---\n# nothing\n`],
  ['an alias to an unknown anchor', `a: *missing\nb: 1\n`],
];

const EXTRA_SEGMENTS: (string | number)[] = ['missing', 0, 1, 5, -1, '0', '<<', 'Symbol(<<)', 'length', '__proto__', 'toString'];

/** Every path through the YAML tree (following aliases a few levels), each with every extra segment appended. */
function pathsOf(doc: Document): DocPath[] {
  const paths: DocPath[] = [[]];
  const visit = (node: unknown, path: DocPath, depth: number): void => {
    if (depth > 8) return;
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isScalar(pair.key)) continue;
        const raw = pair.key.value;
        const segment = typeof raw === 'number' ? raw : String(raw);
        paths.push([...path, segment]);
        if (typeof segment === 'number') paths.push([...path, String(segment)]);
        visit(pair.value, [...path, segment], depth + 1);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => {
        paths.push([...path, index]);
        visit(item, [...path, index], depth + 1);
      });
    }
  };
  visit(doc.contents, [], 0);
  // Merged keys exist only in the JavaScript value: walk it too.
  const visitValue = (value: unknown, path: DocPath, depth: number): void => {
    if (depth > 6 || value === null || typeof value !== 'object') return;
    for (const [key, child] of Object.entries(value)) {
      const segment = Array.isArray(value) ? Number(key) : key;
      paths.push([...path, segment]);
      visitValue(child, [...path, segment], depth + 1);
    }
  };
  try {
    visitValue(doc.toJS({ maxAliasCount: 1000 }), [], 0);
  } catch {
    // Not every document here can become a value; its tree paths are enough.
  }
  return paths.flatMap((path) => [path, ...EXTRA_SEGMENTS.map((extra) => [...path, extra])]);
}

interface Answers {
  start: DocumentPositions['start'];
  key: Record<string, unknown>;
  value: Record<string, unknown>;
  keysOf: Record<string, unknown>;
}

function answers(positions: DocumentPositions, paths: readonly DocPath[]): Answers {
  const label = (path: DocPath): string => JSON.stringify(path);
  const result: Answers = { start: positions.start, key: {}, value: {}, keysOf: {} };
  for (const path of paths) {
    result.key[label(path)] = positions.key(path);
    result.value[label(path)] = positions.value(path);
    result.keysOf[label(path)] = { ...positions.keysOf(path) };
  }
  return result;
}

function parse(text: string): { docs: Document[]; lineCounter: LineCounter } {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, merge: true });
  return { docs: Array.isArray(docs) ? docs : [], lineCounter };
}

describe('tablePositions answers exactly as documentPositions', () => {
  it.each(DOCUMENTS)('%s', (_name, text) => {
    const { docs, lineCounter } = parse(text);
    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) {
      const paths = pathsOf(doc);
      const lazy = answers(documentPositions('f.yaml', doc, lineCounter), paths);
      // Through a structured clone, as the table travels from a worker thread.
      const table = structuredClone(buildPositionTable(doc));
      const counter = lineCounterFrom(structuredClone(lineCounter.lineStarts));
      expect(answers(tablePositions('f.yaml', table, counter), paths)).toEqual(lazy);
    }
  });
});

describe('tablePositions: the rules, spelled out', () => {
  const text = DOCUMENTS[0]![1];
  const { docs, lineCounter } = parse(text);
  const at = tablePositions('f.yaml', buildPositionTable(docs[0]!), lineCounter);
  const where = (ref: { line: number; col: number }): string => `${ref.line}:${ref.col}`;

  it.each<[string, 'key' | 'value', DocPath, string]>([
    ['a written key', 'key', ['config', 'cores'], '11:3'],
    ['a written value', 'value', ['config', 'cores'], '11:10'],
    ['a key merged in with <<: the key of the mapping it was merged into', 'key', ['config', 'memory'], '7:1'],
    ['a value merged in with <<: the mapping value', 'value', ['config', 'memory'], '8:3'],
    ['an alias value: where the alias is written', 'value', ['config', 'net1'], '9:9'],
    ['inside an alias: the anchored node', 'value', ['config', 'net1', 'bridge'], '6:39'],
    ['a list item through an alias', 'value', ['again', 2, 'model'], '6:23'],
    ['a missing key: its nearest written ancestor', 'value', ['config', 'nope', 'deeper'], '8:3'],
    ['a list index out of range: the list', 'value', ['list', 9], '13:13'],
  ])('%s', (_name, method, path, expected) => {
    expect(where(at[method](path))).toBe(expected);
  });

  it('points an empty value at its key', () => {
    const empty = parse('config:\n  description:\n');
    const positions = tablePositions('f.yaml', buildPositionTable(empty.docs[0]!), empty.lineCounter);
    expect(positions.value(['config', 'description'])).toEqual({ file: 'f.yaml', line: 2, col: 3 });
    expect(positions.key(['config', 'description'])).toEqual({ file: 'f.yaml', line: 2, col: 3 });
  });

  it('lists the written keys of a mapping, merged ones excluded', () => {
    expect(Object.keys(at.keysOf(['config'])).sort()).toEqual(['Symbol(<<)', 'cores', 'net1', 'net2'].sort());
  });
});
