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
import { isAlias, isMap, isScalar, isSeq, LineCounter, type Document, type Node, type Scalar } from 'yaml';
import type { SourceRef } from '../model.js';
import type { DocPath, DocumentPositions } from './document-positions.js';

/** An offset that the parser left without a range: it resolves to the document start, as in the lazy walk. */
const NO_RANGE = -1;

/**
 * The written nodes of one file's documents, flattened into numbers so that sending them between
 * threads is a copy of one buffer: as objects (a mapping with arrays of keys, offsets and values)
 * the tables of 10,000 guests took about 100 ms to receive, as this about 2 ms.
 *
 * A node is referred to by a number `ref`: 0 for no node (an empty value: the key stands in for
 * it), `offset + 2` for a scalar written at `offset` (`NO_RANGE` included), and `-(index + 1)` for
 * a mapping or list whose header starts at `data[index]`: `[MAP | SEQ, offset, count, entries]`.
 * A mapping's entries are `count` triples `[name, keyOffset, valueRef]` at `data[entries]`, for
 * entries with a scalar key in written order (`name` indexes `names`: `String(key)`, as the walk
 * compares keys with path segments); a list's are `count` item refs. An alias has its own header
 * (where `*name` is written) sharing the entries of the node it names, so a document full of
 * aliases stays as small as its text.
 */
export interface TableStore {
  data: Int32Array;
  names: string[];
}

/** Where the parts of one document were written, as offsets into its file. */
export interface PositionTable {
  /** Offset of the document's content (or of the document when it has none). */
  start: number;
  /** The content node (`ref`, see `TableStore`). */
  root: number;
  /** Shared by the documents of one file (one buffer to send). */
  store: TableStore;
}

const MAP = 0;
const SEQ = 1;
const NONE = 0;

const scalarRef = (offset: number): number => offset + 2;

/**
 * Records the positions of every node of the documents of one file (one walk per document;
 * aliased nodes once), in one store. Each table can be asked as soon as it is added; `finish`
 * trims the store to what was written, before it is sent to another thread.
 */
export class PositionTableBuilder {
  private length = 0;
  private readonly ids = new Map<string, number>();
  private readonly store: TableStore = { data: new Int32Array(1024), names: [] };

  /** The table of one document of the file. */
  add(doc: Document): PositionTable {
    const contents = doc.contents;
    const root = isNode(contents) ? this.node(doc, contents, new Map()) : NONE;
    return { start: documentStart(doc), root, store: this.store };
  }

  /** Trims the store shared by the tables added to what they use. */
  finish(): void {
    // A copy, not a view: a view would send the whole spare buffer along.
    this.store.data = this.store.data.slice(0, this.length);
  }

  /** Appends `count` numbers (zero) and returns where they start. */
  private reserve(count: number): number {
    const start = this.length;
    this.length += count;
    if (this.length > this.store.data.length) {
      const grown = new Int32Array(Math.max(this.length, this.store.data.length * 2));
      grown.set(this.store.data);
      this.store.data = grown;
    }
    return start;
  }

  private set(index: number, value: number): void {
    this.store.data[index] = value;
  }

  private get(index: number): number {
    return this.store.data[index] ?? 0;
  }

  private name(key: string): number {
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.store.names.length;
      this.store.names.push(key);
      this.ids.set(key, id);
    }
    return id;
  }

  private header(kind: number, at: number, count: number, entries: number): number {
    const index = this.reserve(4);
    this.set(index, kind);
    this.set(index + 1, at);
    this.set(index + 2, count);
    this.set(index + 3, entries);
    return -(index + 1);
  }

  private node(doc: Document, node: Node, built: Map<Node, number>): number {
    const at = offsetOf(node);
    if (isAlias(node)) {
      const target = node.resolve(doc);
      if (target === undefined) return scalarRef(at);
      const resolved = this.node(doc, target, built);
      if (resolved >= 0) return scalarRef(at);
      const index = -resolved - 1;
      return this.header(this.get(index), at, this.get(index + 2), this.get(index + 3));
    }
    const done = built.get(node);
    if (done !== undefined) return done;
    if (isMap(node)) {
      const pairs = node.items.filter((pair) => isScalar(pair.key));
      // The header and entries are reserved, and the mapping registered, before its values are
      // walked, so an alias inside the mapping to the mapping itself shares these entries instead
      // of recursing forever.
      const entries = this.length + 4;
      const ref = this.header(MAP, at, pairs.length, entries);
      built.set(node, ref);
      this.reserve(3 * pairs.length);
      pairs.forEach((pair, k) => {
        const key = pair.key as Scalar;
        this.set(entries + 3 * k, this.name(String(key.value)));
        this.set(entries + 3 * k + 1, offsetOf(key));
        // An entry written without a value (`key:`) has an empty null node after the colon; the
        // key is the better place to point at.
        this.set(entries + 3 * k + 2, isNode(pair.value) && !isEmptyScalar(pair.value) ? this.node(doc, pair.value, built) : NONE);
      });
      return ref;
    }
    if (isSeq(node)) {
      const entries = this.length + 4;
      const ref = this.header(SEQ, at, node.items.length, entries);
      built.set(node, ref);
      this.reserve(node.items.length);
      node.items.forEach((item, k) => {
        this.set(entries + k, isNode(item) ? this.node(doc, item, built) : NONE);
      });
      return ref;
    }
    return scalarRef(at);
  }
}

/** Records the positions of every node of `doc` (one document in a store of its own). */
export function buildPositionTable(doc: Document): PositionTable {
  const builder = new PositionTableBuilder();
  const table = builder.add(doc);
  builder.finish();
  return table;
}

/** Offset of the document's content (its first key), or of the document when it has none. */
export function documentStart(doc: Document): number {
  const contents = doc.contents;
  return isNode(contents) && contents.range ? contents.range[0] : (doc.range?.[0] ?? 0);
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
  /** The value node (`ref`), for `keysOf`; absent when the value is empty. */
  node?: number;
}

/** The offset of the node `ref` (not `NONE`). */
function nodeAt(data: Int32Array, ref: number): number {
  return ref > 0 ? ref - 2 : (data[-ref] ?? NO_RANGE);
}

/** The same walk as the lazy positions: stop at the deepest node that exists. */
function walk(table: PositionTable, path: DocPath): Found {
  const { data, names } = table.store;
  let ref = table.root;
  let found: Found = ref === NONE ? {} : { value: nodeAt(data, ref), node: ref };
  for (const segment of path) {
    if (ref >= 0) return found;
    const index = -ref - 1;
    const count = data[index + 2] ?? 0;
    const entries = data[index + 3] ?? 0;
    if (data[index] === MAP) {
      const name = String(segment);
      let k = 0;
      while (k < count && names[data[entries + 3 * k] ?? -1] !== name) k++;
      if (k === count) return found;
      const key = data[entries + 3 * k + 1] ?? NO_RANGE;
      const value = data[entries + 3 * k + 2] ?? NONE;
      if (value === NONE) return { key, value: key };
      found = { key, value: nodeAt(data, value), node: value };
      ref = value;
    } else if (typeof segment === 'number' && Number.isInteger(segment) && segment >= 0 && segment < count) {
      const item = data[entries + segment] ?? NONE;
      if (item === NONE) return found;
      found = { value: nodeAt(data, item), node: item };
      ref = item;
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
    const ref = walk(this.table, path).node;
    const keys: Record<string, SourceRef> = {};
    const { data, names } = this.table.store;
    if (ref === undefined || ref >= 0) return keys;
    const index = -ref - 1;
    if (data[index] !== MAP) return keys;
    const count = data[index + 2] ?? 0;
    const entries = data[index + 3] ?? 0;
    for (let k = 0; k < count; k++) {
      const offset = data[entries + 3 * k + 1] ?? NO_RANGE;
      if (offset !== NO_RANGE) keys[names[data[entries + 3 * k] ?? -1] ?? ''] = this.ref(offset);
    }
    return keys;
  }

  /**
   * `lineCounter.linePos(offset)` with the file: the same binary search, written out so that the
   * main thread, which asks this for every config key of every guest (`keySources`), makes one
   * object per answer rather than two.
   */
  private ref(offset: number): SourceRef {
    const starts = this.lineCounter.lineStarts;
    let low = 0;
    let high = starts.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((starts[mid] ?? 0) < offset) low = mid + 1;
      else high = mid;
    }
    if (starts[low] === offset) return { file: this.file, line: low + 1, col: 1 };
    if (low === 0) return { file: this.file, line: 0, col: offset };
    return { file: this.file, line: low, col: offset - (starts[low - 1] ?? 0) + 1 };
  }

  private at(offset: number | undefined): SourceRef {
    return offset === undefined || offset === NO_RANGE ? this.start : this.ref(offset);
  }
}
