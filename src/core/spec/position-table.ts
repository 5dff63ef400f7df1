/**
 * Document positions as plain data, so a document parsed in one thread can report its errors in
 * another: `buildPositionTable` walks a parsed YAML document once and records where every node
 * was written; `tablePositions` answers `DocumentPositions` questions from that record with
 * exactly the answers of the lazy `documentPositions` (same walk rules: aliases resolved when
 * descending, `<<` merges not followed, empty values pointing at their key, missing paths falling
 * back to the nearest written ancestor).
 *
 * Positions are stored as source offsets and turned into line and column only when asked, with the
 * file's line starts (`LineCounter.lineStarts`) — most documents never report an error.
 */
import { isAlias, isMap, isScalar, isSeq, LineCounter, type Document, type Node } from 'yaml';
import type { SourceRef } from '../model.js';
import type { DocPath, DocumentPositions } from './document-positions.js';

/** An offset that the parser left without a range: it resolves to the document start, as in the lazy walk. */
const NO_RANGE = -1;

/**
 * One written node. A scalar is just its offset; a mapping or list carries its parts. An alias has
 * its own offset (where `*name` is written) and the parts of the node it names — shared, not
 * copied, so a document full of aliases stays as small as its text (structured clone keeps the
 * sharing).
 */
export type TableNode = number | TableMap | TableSeq;

/** A mapping: entries with a scalar key in written order, as parallel arrays (compact to clone). */
export interface TableMap {
  at: number;
  /** `String(key)` — how the walk compares keys with path segments. */
  keys: string[];
  keyAt: number[];
  /** `null` where the entry has no value node or an empty one (`key:`): the key stands in for it. */
  values: (TableNode | null)[];
}

/** A list; `null` for an item that is no node. */
export interface TableSeq {
  at: number;
  items: (TableNode | null)[];
}

/** Where the parts of one document were written, as offsets into its file. */
export interface PositionTable {
  /** Offset of the document's content (or of the document when it has none). */
  start: number;
  root: TableNode | null;
}

/** Records the positions of every node of `doc` (one walk; aliased nodes once). */
export function buildPositionTable(doc: Document): PositionTable {
  const contents = doc.contents;
  const root = isNode(contents) ? tableNode(doc, contents, new Map()) : null;
  return { start: documentStart(doc), root };
}

/** Offset of the document's content (its first key), or of the document when it has none. */
export function documentStart(doc: Document): number {
  const contents = doc.contents;
  return isNode(contents) && contents.range ? contents.range[0] : (doc.range?.[0] ?? 0);
}

function tableNode(doc: Document, node: Node, built: Map<Node, TableNode>): TableNode {
  const at = offsetOf(node);
  if (isAlias(node)) {
    const target = node.resolve(doc);
    if (target === undefined) return at;
    const resolved = tableNode(doc, target, built);
    if (typeof resolved === 'number') return at;
    return 'keys' in resolved ? { at, keys: resolved.keys, keyAt: resolved.keyAt, values: resolved.values } : { at, items: resolved.items };
  }
  const done = built.get(node);
  if (done !== undefined) return done;
  if (isMap(node)) {
    // Registered before its entries are filled in, so an alias inside the mapping to the mapping
    // itself shares these arrays instead of recursing forever.
    const map: TableMap = { at, keys: [], keyAt: [], values: [] };
    built.set(node, map);
    for (const pair of node.items) {
      if (!isScalar(pair.key)) continue;
      map.keys.push(String(pair.key.value));
      map.keyAt.push(offsetOf(pair.key));
      // An entry written without a value (`key:`) has an empty null node after the colon; the key
      // is the better place to point at.
      map.values.push(isNode(pair.value) && !isEmptyScalar(pair.value) ? tableNode(doc, pair.value, built) : null);
    }
    return map;
  }
  if (isSeq(node)) {
    const seq: TableSeq = { at, items: [] };
    built.set(node, seq);
    for (const item of node.items) seq.items.push(isNode(item) ? tableNode(doc, item, built) : null);
    return seq;
  }
  return at;
}

function offsetOf(node: Node): number {
  return node.range ? node.range[0] : NO_RANGE;
}

function isEmptyScalar(node: Node): boolean {
  return isScalar(node) && node.value === null && (!node.range || node.range[0] === node.range[1]);
}

function isNode(value: unknown): value is Node {
  return isScalar(value) || isMap(value) || isSeq(value) || isAlias(value);
}

interface Found {
  key?: number;
  /** The value's offset; the key's when the value is empty. */
  value?: number;
  /** The value node, for `keysOf`; absent when the value is empty. */
  node?: TableNode;
}

const nodeAt = (node: TableNode): number => (typeof node === 'number' ? node : node.at);

/** Mappings with more keys than this are searched through an index, built once when first asked. */
const INDEXED_KEYS = 32;
const keyIndexes = new WeakMap<TableMap, Map<string, number>>();

/** Position of `key` among a mapping's keys (the first, as `indexOf`): an error per key of a large mapping was quadratic. */
function keyIndex(node: TableMap, key: string): number {
  if (node.keys.length <= INDEXED_KEYS) return node.keys.indexOf(key);
  let index = keyIndexes.get(node);
  if (!index) {
    index = new Map();
    for (let i = node.keys.length - 1; i >= 0; i--) index.set(node.keys[i] ?? '', i);
    keyIndexes.set(node, index);
  }
  return index.get(key) ?? -1;
}

/** The same walk as the lazy positions: stop at the deepest node that exists. */
function walk(table: PositionTable, path: DocPath): Found {
  let node = table.root;
  let found: Found = node === null ? {} : { value: nodeAt(node), node };
  for (const segment of path) {
    if (node !== null && typeof node === 'object' && 'keys' in node) {
      const index = keyIndex(node, String(segment));
      if (index < 0) return found;
      const key = node.keyAt[index] ?? NO_RANGE;
      const value = node.values[index] ?? null;
      if (value === null) return { key, value: key };
      found = { key, value: nodeAt(value), node: value };
      node = value;
    } else if (node !== null && typeof node === 'object' && typeof segment === 'number') {
      const item = node.items[segment];
      if (item === undefined || item === null) return found;
      found = { value: nodeAt(item), node: item };
      node = item;
    } else {
      return found;
    }
  }
  return found;
}

/** A line counter over line starts recorded by the parser, for offset → line and column. */
export function lineCounterFrom(lineStarts: readonly number[]): LineCounter {
  const counter = new LineCounter();
  counter.lineStarts = lineStarts as number[];
  return counter;
}

/** Positions of one document of `file`, answered from its table; `lineCounter` is the file's. */
export function tablePositions(file: string, table: PositionTable, lineCounter: LineCounter): DocumentPositions {
  return new TablePositions(file, table, lineCounter);
}

/** A class rather than closures: one is made per document, and most are never asked anything. */
class TablePositions implements DocumentPositions {
  readonly start: SourceRef;

  constructor(
    private readonly file: string,
    private readonly table: PositionTable,
    private readonly lineCounter: LineCounter,
  ) {
    this.start = this.ref(table.start);
  }

  key(path: DocPath): SourceRef {
    const found = walk(this.table, path);
    return this.at(found.key ?? found.value);
  }

  value(path: DocPath): SourceRef {
    return this.at(walk(this.table, path).value);
  }

  keysOf(path: DocPath): Record<string, SourceRef> {
    const node = walk(this.table, path).node;
    const keys: Record<string, SourceRef> = {};
    if (node === undefined || typeof node === 'number' || !('keys' in node)) return keys;
    for (let index = 0; index < node.keys.length; index++) {
      const offset = node.keyAt[index] ?? NO_RANGE;
      if (offset !== NO_RANGE) keys[node.keys[index] ?? ''] = this.ref(offset);
    }
    return keys;
  }

  private ref(offset: number): SourceRef {
    const { line, col } = this.lineCounter.linePos(offset);
    return { file: this.file, line, col };
  }

  private at(offset: number | undefined): SourceRef {
    return offset === undefined || offset === NO_RANGE ? this.start : this.ref(offset);
  }
}
