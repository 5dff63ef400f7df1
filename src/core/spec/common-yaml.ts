/**
 * A fast reader for the common subset of YAML that spec files are written in: block mappings of
 * plain keys, block lists, one-line flow collections, one-line plain and quoted scalars, comments
 * and `---` separators. It exists for speed: the YAML library builds a token stream, a concrete
 * syntax tree and a document of node objects before the value, and on 10,000 guests that was most
 * of a command's time and memory; this reader goes from text to value and positions in one pass.
 *
 * It never decides anything the library would decide differently. For any text it either returns
 * exactly what the library path of `parseSpecText` returns — the same values, positions, line
 * starts and node count — or `undefined` when the text holds anything outside the subset (an
 * anchor, a tag, a block scalar, a multi-line scalar, an escape, a tab, a duplicate key, a value
 * over a limit, anything it does not recognise), and the whole text is then parsed by the library.
 * Invalid YAML is always outside the subset, so every error message is the library's. Scalars are
 * resolved by the library's own schema tags (YAML 1.2 core: `true`, `0x1F`, `1e3`, `~`, …), so a
 * value never means something else here. `common-yaml.test.ts` compares both paths on the estate
 * the benchmarks generate and on randomly generated texts in and around the subset.
 */
import { Document, isScalar, type ScalarTag } from 'yaml';
import type { ParsedDocument, ParsedSpecText } from './parsed-spec.js';
import type { TableMap, TableNode, TableSeq } from './position-table.js';
import type { SpecLimits } from './spec-limits.js';
import { keyedRecord } from './keyed-record.js';

/** Thrown inside the reader when the text leaves the subset; caught at its entry point. */
class OutsideSubset extends Error {}
const OUTSIDE = new OutsideSubset('outside the common YAML subset');

/** The documents the library builds: its schema and options resolve scalars here too. */
const reference = new Document(null, { merge: true });
const SCALAR_TAGS: readonly ScalarTag[] = reference.schema.tags.filter((tag): tag is ScalarTag => !('collection' in tag && tag.collection));

/**
 * First characters of every plain scalar a default tag of the core schema can match (null `~`,
 * `null`; booleans; numbers with sign, digit or dot; `<<` for keys). Any other plain scalar is a
 * string without asking the tags; the test pins the tags these were read from.
 */
const TAGGED_FIRST = new Set('~nNtTfF+-.0123456789<');

/** Characters no text of the subset holds: controls other than newline (tabs, CR too), BOM, line separators, surrogates. */
const OUTSIDE_CHARS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\ufeff\u2028\u2029\ud800-\udfff]/;

/** Plain keys of the subset: a letter or `_`, then letters, digits, `_`, `-`, `.`. */
const KEY_CHAR = new Uint8Array(128);
for (const c of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.') KEY_CHAR[c.charCodeAt(0)] = 1;

/** Characters that may not start a plain scalar here (YAML indicators the subset leaves to the library). */
const NOT_PLAIN_START = new Set('&*!|>%@`,?:#[]{}\'"');

const SPACE = 0x20;
const HASH = 0x23;
const COLON = 0x3a;
const DASH = 0x2d;
const PIPE = 0x7c;
const GREATER = 0x3e;

/**
 * Parses `text` as the library path would, or returns `undefined` when it holds anything outside
 * the common subset (then only the library may parse it).
 */
export function parseCommonYaml(text: string, limits: SpecLimits): ParsedSpecText | undefined {
  if (OUTSIDE_CHARS.test(text)) return undefined;
  try {
    return new Reader(text, limits).read();
  } catch (error) {
    if (error === OUTSIDE) return undefined;
    throw error;
  }
}

/** One line of the text: where its content starts (after the indentation) and where it ends. */
interface Line {
  start: number;
  indent: number;
  /** Offset of the first character after the indentation. */
  at: number;
  /** Offset of the newline, or the text's length. */
  end: number;
}

class Reader {
  /** Start of the line the reader is at. */
  private pos = 0;
  /** The next line with content, once looked at (`null`: the end of the text). */
  private peeked: Line | null | undefined;
  private nodes = 0;
  private budget = 0;
  // Entries of the collections being read, nested ones above their parents: each collection takes
  // its own off the top when it is complete, as arrays of exactly its length (a pushed-to array
  // keeps room for 17, which made the position tables of 10,000 guests three times their size).
  private readonly keys: string[] = [];
  private readonly keyAt: number[] = [];
  private readonly values: (TableNode | null)[] = [];
  private readonly items: unknown[] = [];
  private readonly itemTables: (TableNode | null)[] = [];

  constructor(
    private readonly text: string,
    private readonly limits: SpecLimits,
  ) {}

  read(): ParsedSpecText {
    const documents: ParsedDocument[] = [];
    let expandedNodes = 0;
    // A `---` opens a document; content before the first one is a document too.
    let open = false;
    for (;;) {
      const line = this.peek();
      if (line === null) break;
      if (this.isMarker(line)) {
        if (open) documents.push({ kind: 'empty' });
        open = true;
        this.take(line);
        continue;
      }
      if (line.indent !== 0) throw OUTSIDE;
      this.nodes = 0;
      this.budget = this.limits.maxExpandedNodes - expandedNodes;
      const raw: Record<string, unknown> = {};
      const root = this.blockMap(line, raw, 1);
      expandedNodes += this.nodes;
      documents.push({ kind: 'mapping', raw, positions: { start: line.at, root } });
      open = false;
      const after = this.peek();
      if (after !== null && !this.isMarker(after)) throw OUTSIDE;
    }
    if (open) documents.push({ kind: 'empty' });
    return { lineStarts: lineStarts(this.text), documents, expandedNodes };
  }

  /** The next line with content (blank lines and comment lines skipped), without moving past it. */
  private peek(): Line | null {
    if (this.peeked !== undefined) return this.peeked;
    const { text } = this;
    let start = this.pos;
    while (start < text.length) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      let at = start;
      while (at < end && text.charCodeAt(at) === SPACE) at++;
      if (at < end && text.charCodeAt(at) !== HASH) {
        this.pos = start;
        this.peeked = { start, indent: at - start, at, end };
        return this.peeked;
      }
      start = end + 1;
    }
    this.pos = text.length;
    this.peeked = null;
    return null;
  }

  /** Moves past `line`. */
  private take(line: Line): void {
    this.pos = line.end + 1;
    this.peeked = undefined;
  }

  /** A `---` line (optionally followed by a comment); other directive-like lines are outside the subset. */
  private isMarker(line: Line): boolean {
    if (line.indent !== 0) return false;
    const { text } = this;
    const first = text.charCodeAt(line.at);
    if (first === 0x25 /* % */) throw OUTSIDE;
    if (!text.startsWith('---', line.at) && !text.startsWith('...', line.at)) return false;
    if (text.startsWith('...', line.at)) throw OUTSIDE;
    const rest = this.skipSpaces(line.at + 3, line.end);
    if (rest === line.at + 3 && rest < line.end) throw OUTSIDE; // `---x`
    if (rest < line.end && text.charCodeAt(rest) !== HASH) throw OUTSIDE; // content after `---`
    return true;
  }

  /** A collection at `depth` whose values (one deeper) the depth limit allows; nearer the limit the library decides. */
  private deeper(depth: number): void {
    if (depth >= this.limits.maxDepth) throw OUTSIDE;
  }

  private count(): void {
    if (++this.nodes > this.budget) throw OUTSIDE;
  }

  /** A block mapping whose first key is on `first`; every key at `first.indent`. */
  private blockMap(first: Line, raw: Record<string, unknown>, depth: number): TableMap {
    this.deeper(depth);
    this.count();
    const keysFrom = this.keys.length;
    const valuesFrom = this.values.length;
    const indent = first.indent;
    let line: Line | null = first;
    while (line !== null && line.indent === indent && !(indent === 0 && this.isMarker(line))) {
      const { text } = this;
      const keyEnd = this.plainKeyEnd(line.at, line.end);
      if (keyEnd >= line.end || text.charCodeAt(keyEnd) !== COLON) throw OUTSIDE;
      const afterColon = keyEnd + 1;
      if (afterColon < line.end && text.charCodeAt(afterColon) !== SPACE) throw OUTSIDE;
      const key = this.key(line.at, keyEnd, raw);
      this.count();
      this.keys.push(key);
      this.keyAt.push(line.at);
      const valueAt = this.skipSpaces(afterColon, line.end);
      if (valueAt < line.end && text.charCodeAt(valueAt) !== HASH) {
        const header = text.charCodeAt(valueAt);
        if (header === PIPE || header === GREATER) {
          raw[key] = this.blockScalar(valueAt, line, indent);
          this.values.push(valueAt);
        } else {
          const value = this.inline(valueAt, line.end, depth + 1);
          raw[key] = value.raw;
          this.values.push(value.table);
          this.take(line);
        }
        line = this.peek();
        // A more indented line would continue the scalar or be an error: the library decides.
        if (line !== null && line.indent > indent) throw OUTSIDE;
        continue;
      }
      // Nothing after the colon: a nested block, or an empty value.
      this.take(line);
      line = this.peek();
      if (line !== null && (line.indent > indent || (line.indent === indent && this.isSeqItem(line)))) {
        // A nested mapping, or a list (also at its key's own indentation: `key:\n- a`).
        if (this.isSeqItem(line)) {
          const seq = this.blockSeq(line, depth + 1);
          raw[key] = seq.raw;
          this.values.push(seq.table);
        } else {
          const nested = keyedRecord<unknown>();
          raw[key] = nested;
          this.values.push(this.blockMap(line, nested, depth + 1));
        }
      } else {
        this.count();
        raw[key] = null;
        this.values.push(null);
      }
      line = this.peek();
      if (line !== null && line.indent > indent) throw OUTSIDE;
    }
    return this.mapTable(first.at, keysFrom, valuesFrom);
  }

  /** The table of a mapping whose entries are on the stacks from `keysFrom` and `valuesFrom`, taken off them. */
  private mapTable(at: number, keysFrom: number, valuesFrom: number): TableMap {
    const table: TableMap = {
      at,
      keys: this.keys.slice(keysFrom),
      keyAt: this.keyAt.slice(keysFrom),
      values: this.values.slice(valuesFrom),
    };
    this.keys.length = keysFrom;
    this.keyAt.length = keysFrom;
    this.values.length = valuesFrom;
    return table;
  }

  /** A list's items and their table, taken off the stacks from `from`. */
  private seqOf(at: number, from: number): { raw: unknown[]; table: TableSeq } {
    const raw = this.items.slice(from);
    const table: TableSeq = { at, items: this.itemTables.slice(from) };
    this.items.length = from;
    this.itemTables.length = from;
    return { raw, table };
  }

  private isSeqItem(line: Line): boolean {
    return this.text.charCodeAt(line.at) === DASH && (line.at + 1 === line.end || this.text.charCodeAt(line.at + 1) === SPACE);
  }

  /** A block list of one-line items; its first `-` on `first`. */
  private blockSeq(first: Line, depth: number): { raw: unknown[]; table: TableSeq } {
    this.deeper(depth);
    this.count();
    const from = this.items.length;
    const indent = first.indent;
    let line: Line | null = first;
    while (line !== null && line.indent === indent && this.isSeqItem(line)) {
      const valueAt = this.skipSpaces(line.at + 1, line.end);
      // An empty item, a nested list or a comment in its place: left to the library.
      if (valueAt >= line.end || valueAt === line.at + 1) throw OUTSIDE;
      const value = this.inline(valueAt, line.end, depth + 1);
      this.items.push(value.raw);
      this.itemTables.push(value.table);
      this.take(line);
      line = this.peek();
      if (line !== null && line.indent > indent) throw OUTSIDE;
    }
    return this.seqOf(first.at, from);
  }

  /**
   * A literal (`|`) or folded (`>`) block scalar, clipped or stripped (`-`), whose header is at `at`
   * on `line` and whose content lines are indented more than `parent`. Kept (`+`) and explicitly
   * indented scalars, whitespace-only lines, blank lines before the content and more indented
   * lines in a folded scalar are left to the library. Moves past its last content line.
   */
  private blockScalar(at: number, line: Line, parent: number): string {
    const { text } = this;
    const folded = text.charCodeAt(at) === GREATER;
    let next = at + 1;
    const strip = text.charCodeAt(next) === DASH;
    if (strip) next += 1;
    if (next < line.end && text.charCodeAt(next) !== SPACE) throw OUTSIDE;
    this.lineRest(next, line.end);
    let value = '';
    let content = -1;
    let empties = 0;
    let start = line.end + 1;
    while (start < text.length) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      let at = start;
      while (at < end && text.charCodeAt(at) === SPACE) at++;
      if (at === end) {
        if (end > start || content < 0) throw OUTSIDE;
        empties += 1;
        start = end + 1;
        continue;
      }
      const indent = at - start;
      if (content < 0) {
        if (indent <= parent) break;
        content = indent;
      }
      if (indent < content) break;
      if (folded && indent > content) throw OUTSIDE;
      const part = text.slice(start + content, end);
      if (value === '') value = part;
      else if (folded) value += empties === 0 ? ` ${part}` : `${'\n'.repeat(empties)}${part}`;
      else value += `${'\n'.repeat(empties + 1)}${part}`;
      empties = 0;
      start = end + 1;
    }
    if (content < 0) throw OUTSIDE;
    this.pos = Math.min(start, text.length);
    this.peeked = undefined;
    this.count();
    return strip ? value : `${value}\n`;
  }

  /** A value that starts at `at` and ends on its line: a scalar or a flow collection, then at most a comment. */
  private inline(at: number, end: number, depth: number): { raw: unknown; table: TableNode } {
    const { text } = this;
    const first = text[at] ?? '';
    let value: { raw: unknown; table: TableNode; end: number };
    if (first === '[' || first === '{') value = this.flow(at, end, depth);
    else if (first === '"' || first === "'") value = this.quoted(at, end);
    else return this.plainBlock(at, end);
    this.lineRest(value.end, end);
    return value;
  }

  /** Only spaces, or spaces and a comment, may follow a value on its line. */
  private lineRest(from: number, end: number): void {
    const next = this.skipSpaces(from, end);
    if (next < end && (next === from || this.text.charCodeAt(next) !== HASH)) throw OUTSIDE;
  }

  /** A plain scalar in block context, up to a comment or the end of the line. */
  private plainBlock(at: number, end: number): { raw: unknown; table: TableNode } {
    const { text } = this;
    this.plainStart(at, end);
    let last = at;
    for (let i = at; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c === SPACE) {
        if (text.charCodeAt(i + 1) === HASH) break;
        continue;
      }
      // `a: b` in a value is an error, `a:` at its end a nested mapping: the library's to say.
      if (c === COLON && (i + 1 === end || text.charCodeAt(i + 1) === SPACE)) throw OUTSIDE;
      last = i;
    }
    this.count();
    return { raw: this.resolve(text.slice(at, last + 1)), table: at };
  }

  private plainStart(at: number, end: number): void {
    const { text } = this;
    const first = text[at] ?? '';
    if (NOT_PLAIN_START.has(first)) throw OUTSIDE;
    if (first === '-' && (at + 1 === end || text.charCodeAt(at + 1) === SPACE)) throw OUTSIDE;
  }

  /** A one-line quoted scalar without escapes. */
  private quoted(at: number, end: number): { raw: unknown; table: TableNode; end: number } {
    const { text } = this;
    const quote = text[at];
    let value: string;
    let close: number;
    if (quote === '"') {
      close = text.indexOf('"', at + 1);
      if (close < 0 || close >= end) throw OUTSIDE;
      value = text.slice(at + 1, close);
      if (value.includes('\\')) throw OUTSIDE;
    } else {
      close = at;
      for (;;) {
        close = text.indexOf("'", close + 1);
        if (close < 0 || close >= end) throw OUTSIDE;
        if (text[close + 1] !== "'") break;
        close += 1;
      }
      value = text.slice(at + 1, close).replaceAll("''", "'");
    }
    this.count();
    return { raw: value, table: at, end: close + 1 };
  }

  /** A flow collection that closes on its own line. */
  private flow(at: number, end: number, depth: number): { raw: unknown; table: TableNode; end: number } {
    this.deeper(depth);
    this.count();
    const { text } = this;
    const isMap = text[at] === '{';
    const close = isMap ? '}' : ']';
    const raw: Record<string, unknown> = {};
    const keysFrom = this.keys.length;
    const valuesFrom = this.values.length;
    const itemsFrom = this.items.length;
    const done = (next: number): { raw: unknown; table: TableNode; end: number } =>
      isMap ? { raw, table: this.mapTable(at, keysFrom, valuesFrom), end: next } : { ...this.seqOf(at, itemsFrom), end: next };
    let i = this.skipSpaces(at + 1, end);
    if (text[i] === close) return done(i + 1);
    for (;;) {
      if (i >= end) throw OUTSIDE;
      let item: { raw: unknown; table: TableNode; end: number };
      if (isMap) {
        const keyEnd = this.plainKeyEnd(i, end);
        if (text.charCodeAt(keyEnd) !== COLON || text.charCodeAt(keyEnd + 1) !== SPACE) throw OUTSIDE;
        const key = this.key(i, keyEnd, raw);
        this.count();
        this.keys.push(key);
        this.keyAt.push(i);
        item = this.flowItem(this.skipSpaces(keyEnd + 1, end), end, depth + 1);
        raw[key] = item.raw;
        this.values.push(item.table);
      } else {
        item = this.flowItem(i, end, depth + 1);
        this.items.push(item.raw);
        this.itemTables.push(item.table);
      }
      i = this.skipSpaces(item.end, end);
      if (text[i] === close) return done(i + 1);
      if (text[i] !== ',') throw OUTSIDE;
      i = this.skipSpaces(i + 1, end);
      // A trailing comma, an empty entry: the library's to judge.
      if (text[i] === close || text[i] === ',') throw OUTSIDE;
    }
  }

  private flowItem(at: number, end: number, depth: number): { raw: unknown; table: TableNode; end: number } {
    if (at >= end) throw OUTSIDE;
    const { text } = this;
    const first = text[at];
    if (first === '[' || first === '{') return this.flow(at, end, depth);
    if (first === '"' || first === "'") return this.quoted(at, end);
    this.plainStart(at, end);
    let last = at;
    let i = at;
    for (; i < end; i++) {
      const c = text[i];
      if (c === ',' || c === ']' || c === '}') break;
      // Colons, comments and nested openers inside a flow scalar: left to the library.
      if (c === ':' || c === '#' || c === '[' || c === '{') throw OUTSIDE;
      if (c !== ' ') last = i;
    }
    this.count();
    return { raw: this.resolve(text.slice(at, last + 1)), table: at, end: last + 1 };
  }

  /** End of a plain key starting at `at` (letters, digits, `_`, `-`, `.`; a letter or `_` first). */
  private plainKeyEnd(at: number, end: number): number {
    const { text } = this;
    const first = text.charCodeAt(at);
    if (first >= 128 || !KEY_CHAR[first] || first === DASH || first === 0x2e || (first >= 0x30 && first <= 0x39)) throw OUTSIDE;
    let i = at + 1;
    while (i < end) {
      const c = text.charCodeAt(i);
      if (c >= 128 || !KEY_CHAR[c]) break;
      i++;
    }
    return i;
  }

  /** A mapping key as the library resolves it: only keys that stay strings, each once, belong to the subset. */
  private key(at: number, end: number, raw: Record<string, unknown>): string {
    const key = this.text.slice(at, end);
    if (end - at > 1000 || key === '__proto__' || Object.hasOwn(raw, key)) throw OUTSIDE;
    if (TAGGED_FIRST.has(key[0] ?? '') && SCALAR_TAGS.some((tag) => tag.default !== false && tag.test?.test(key))) throw OUTSIDE;
    return key;
  }

  /** A plain scalar's value as the library's schema resolves it; integers it cannot hold exactly are left to it. */
  private resolve(source: string): unknown {
    if (!TAGGED_FIRST.has(source[0] ?? '')) return source;
    const tag = SCALAR_TAGS.find((t) => t.default === true && t.test?.test(source));
    if (!tag) return source;
    const resolved = tag.resolve(
      source,
      () => {
        throw OUTSIDE;
      },
      reference.options,
    );
    const value = isScalar(resolved) ? resolved.value : resolved;
    if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) throw OUTSIDE;
    if (typeof value === 'bigint' || (typeof value === 'object' && value !== null)) throw OUTSIDE;
    return value;
  }

  private skipSpaces(from: number, end: number): number {
    let i = from;
    while (i < end && this.text.charCodeAt(i) === SPACE) i++;
    return i;
  }
}

/** Offsets where lines start, as the library's line counter records them for the subset (newlines are `\n` only). */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}
