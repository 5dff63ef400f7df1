/**
 * Editing one YAML document of a spec file in place: a value set or a key removed at a path of
 * mappings, spliced into the text so that everything else — comments, blank lines, key order,
 * quoting, flow or block style — stays byte for byte as the person wrote it. The `yaml` library's
 * Document gives the positions; only the edited value's own characters change. Every edit is
 * checked by parsing the result again: a splice that does not read back as asked throws, and the
 * caller writes nothing.
 */
import { type Document, isMap, isScalar, isSeq, LineCounter, type Node, parseAllDocuments, stringify, type YAMLMap } from 'yaml';
import type { SourceRef } from '../model.js';

/**
 * A value a spec holds: what adopting writes. `null` is YAML's null (`ha: ~`, `pool: ~`). Lists
 * and mappings may nest (a firewall's rules are a list of mappings); what is inside a list item
 * or a mapping's value is written in flow style.
 */
export type SpecValue = string | number | boolean | null | readonly SpecValue[] | { readonly [key: string]: SpecValue };

/** One edit of a document: set `value` at `path`, or remove the key there (`value` undefined). */
export interface DocumentEdit {
  path: readonly string[];
  value?: SpecValue;
}

/** An edit that could not be made, with why. */
export class SpecEditError extends Error {
  override name = 'SpecEditError';
  constructor(
    readonly file: string,
    readonly path: readonly string[],
    message: string,
  ) {
    super(`${file}: ${path.join('.')}: ${message}`);
  }
}

/** How a value node is written now: decides how its replacement is written. */
type Shape = 'block-map' | 'flow-map' | 'block-seq' | 'flow-seq' | 'scalar' | 'none';

function shapeOf(node: unknown): Shape {
  if (isMap(node)) return node.flow ? 'flow-map' : 'block-map';
  if (isSeq(node)) return node.flow ? 'flow-seq' : 'block-seq';
  if (isScalar(node)) return 'scalar';
  return 'none';
}

/** A scalar as YAML writes it on one line (quoted where it must be). */
function scalarText(value: string | number | boolean | null): string {
  return stringify(value, { lineWidth: 0 }).replace(/\n$/, '');
}

/** `value` written inline after `key: ` at `indent` (the column of the key), in the style of `shape`. */
function valueText(value: SpecValue, shape: Shape, indent: number): string {
  const inner = ' '.repeat(indent + 2);
  if (Array.isArray(value)) {
    const items = (value as readonly SpecValue[]).map(flowText);
    if (shape === 'block-seq' && items.length > 0) return `\n${items.map((item) => `${inner}- ${item}`).join('\n')}`;
    return `[${items.join(', ')}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => `${scalarText(k)}: ${flowText(v)}`);
    if (entries.length === 0) return '{}';
    if (shape === 'block-map') return `\n${entries.map((entry) => `${inner}${entry}`).join('\n')}`;
    return `{ ${entries.join(', ')} }`;
  }
  const text = scalarText(value as string | number | boolean | null);
  // A block scalar (a multi-line description): its lines indented under the key.
  return text.includes('\n') ? text.replace(/\n/g, `\n${inner}`) : text;
}

/** The only (first) document of a text holding one document of a spec file. */
function onlyDocument(text: string): Document | undefined {
  return parseAllDocuments(text).find((doc) => 'contents' in doc && doc.contents) as Document | undefined;
}

/** Column (0-based) of offset `at` in `text`. */
function columnOf(text: string, at: number): number {
  return at - (text.lastIndexOf('\n', at - 1) + 1);
}

/** Offset of the start of the line holding `at`. */
function lineStart(text: string, at: number): number {
  return text.lastIndexOf('\n', at - 1) + 1;
}

/** Offset just past the end of the line holding `at` (its newline included). */
function lineEnd(text: string, at: number): number {
  const nl = text.indexOf('\n', at);
  return nl < 0 ? text.length : nl + 1;
}

/** One splice: replace `text[from, to)` with `insert`. */
interface Splice {
  from: number;
  to: number;
  insert: string;
}

/** The splice that makes one edit on the parsed document. */
function spliceFor(text: string, doc: Document, edit: DocumentEdit, file: string): Splice | undefined {
  const fail = (message: string): never => {
    throw new SpecEditError(file, edit.path, message);
  };
  // The deepest mapping on the path that exists, and the keys below it that do not.
  let depth = edit.path.length - 1;
  let parent: unknown = depth === 0 ? doc.contents : doc.getIn(edit.path.slice(0, depth), true);
  while (!isMap(parent) && depth > 0) {
    if (parent !== undefined && parent !== null && !(isScalar(parent) && parent.value === null))
      fail('is inside a value that is not a mapping');
    depth -= 1;
    parent = depth === 0 ? doc.contents : doc.getIn(edit.path.slice(0, depth), true);
  }
  if (!isMap(parent)) return fail('the document is not a mapping');
  const map = parent as YAMLMap;
  const key = edit.path[depth] as string;
  const rest = edit.path.slice(depth + 1);
  const pair = map.items.find((p) => isScalar(p.key) && String(p.key.value) === key);

  if (edit.value === undefined) {
    if (rest.length > 0 || !pair) return undefined; // Nothing there to remove.
    if (map.flow) {
      const keyNode = pair.key as Node;
      const index = map.items.indexOf(pair);
      const start = keyNode.range?.[0] ?? fail('has no position');
      const valueEnd = (pair.value as Node | null)?.range?.[1] ?? keyNode.range?.[1] ?? start;
      // With its separating comma: the one after it, or for the last entry the one before it.
      const after = text.slice(valueEnd).match(/^\s*,\s*/);
      if (after) return { from: start, to: valueEnd + after[0].length, insert: '' };
      const before = index > 0 ? text.lastIndexOf(',', start) : -1;
      return { from: before >= 0 ? before : start, to: valueEnd, insert: '' };
    }
    const keyNode = pair.key as Node;
    const start = lineStart(text, keyNode.range?.[0] ?? fail('has no position'));
    const value = pair.value as Node | null;
    const end = lineEnd(text, Math.max((value?.range?.[1] ?? keyNode.range![1]) - 1, keyNode.range![0]));
    if (map.items.length === 1 && depth > 0) {
      // The mapping's last key: the mapping itself goes (`config:` with nothing under it is null).
      const outerPath = edit.path.slice(0, depth);
      return spliceFor(text, doc, { path: outerPath }, file);
    }
    return { from: start, to: end, insert: '' };
  }

  if (pair && rest.length > 0) {
    // `ha: ~` (null) becomes the mapping the rest of the path asks for.
    const nested = [...rest].reverse().reduce<unknown>((inner, k) => ({ [k]: inner }), edit.value);
    return spliceFor(text, doc, { path: edit.path.slice(0, depth + 1), value: nested as SpecValue }, file);
  }
  if (pair) {
    const value = pair.value as Node | null;
    const keyNode = pair.key as Node;
    if (!value?.range) {
      // `key:` with nothing after it: the value goes after the colon.
      const colon = text.indexOf(':', keyNode.range?.[1] ?? fail('has no position'));
      return { from: colon + 1, to: colon + 1, insert: ` ${valueText(edit.value, 'none', columnOf(text, keyNode.range![0]))}` };
    }
    const shape = shapeOf(value);
    const indent = columnOf(text, keyNode.range![0]);
    if (shape === 'block-map' || shape === 'block-seq') {
      // A block collection starts on the next line: replace from the end of `key:` on.
      const colon = text.indexOf(':', keyNode.range![1]);
      const to = value.range[1];
      const insert = valueText(edit.value, isBlockable(edit.value) ? shape : 'scalar', indent);
      return { from: colon + 1, to: trimEndOffset(text, to), insert: insert.startsWith('\n') ? insert : ` ${insert}` };
    }
    return { from: value.range[0], to: value.range[1], insert: valueText(edit.value, shape, indent) };
  }

  // A new key (and the mappings below it that do not exist yet): written after the mapping's last entry.
  if (map.flow) {
    const nested = [...rest].reverse().reduce<unknown>((inner, k) => ({ [k]: inner }), edit.value);
    const close = (map as unknown as Node).range?.[1] ?? fail('has no position');
    const brace = text.lastIndexOf('}', close);
    const entry = `${scalarText(key)}: ${flowText(nested)}`;
    const hasItems = map.items.length > 0;
    const head = text.slice(0, brace).trimEnd();
    return { from: head.length, to: brace, insert: `${hasItems ? ', ' : ' '}${entry} ` };
  }
  const last = map.items[map.items.length - 1];
  const indent =
    last && (last.key as Node | null)?.range
      ? columnOf(text, (last.key as Node).range![0])
      : depth === 0
        ? 0
        : fail('its mapping is empty');
  const lastEnd = last
    ? endOfPair(text, last.key as Node, last.value as Node | null)
    : ((map as unknown as Node).range?.[1] ?? text.length);
  const lines = blockLines(key, rest, edit.value, indent);
  const at = lineEnd(text, Math.max(lastEnd - 1, 0));
  const needsNewline = at > 0 && text[at - 1] !== '\n';
  return { from: at, to: at, insert: `${needsNewline ? '\n' : ''}${lines}\n` };
}

function isBlockable(value: SpecValue): boolean {
  return value !== null && typeof value === 'object';
}

function trimEndOffset(text: string, at: number): number {
  let end = at;
  while (end > 0 && /\s/.test(text[end - 1] ?? '')) end -= 1;
  return end;
}

/** Offset of the end of a pair's value (or its key), trailing space excluded. */
function endOfPair(text: string, key: Node, value: Node | null): number {
  return trimEndOffset(text, value?.range?.[1] ?? key.range?.[1] ?? 0);
}

function flowText(value: unknown): string {
  return valueText(value as SpecValue, 'flow-map', 0);
}

/** `key:` and the mappings of `rest` below it as blocks at `indent`, `value` at the end (a mapping of scalars in flow style). */
function blockLines(key: string, rest: readonly string[], value: SpecValue, indent: number): string {
  const pad = ' '.repeat(indent);
  const [next, ...deeper] = rest;
  if (next !== undefined) return `${pad}${scalarText(key)}:\n${blockLines(next, deeper, value, indent + 2)}`;
  return `${pad}${scalarText(key)}: ${valueText(value, 'flow-map', indent)}`;
}

function sameData(a: unknown, b: unknown): boolean {
  const plain = (v: unknown): unknown => (v !== null && typeof v === 'object' && 'toJSON' in v ? (v as { toJSON(): unknown }).toJSON() : v);
  return JSON.stringify(plain(a)) === JSON.stringify(b);
}

/** One edit and the document it is made in, by where the document's content starts. */
export interface PlacedEdit {
  at: SourceRef;
  edit: DocumentEdit;
}

/** One document's part of a file: from its start (the file's, for the first) to the next document's. */
interface DocumentSlot {
  start: number;
  end: number;
  line: number;
  col: number;
  doc: Document;
}

/**
 * A spec file, parsed once: where each document is, the shape of a value, and edits made document
 * by document — each edit parses only its own document again, so a file of many documents costs
 * one parse, not one per edit.
 */
export class SpecFileText {
  private readonly slots: DocumentSlot[] = [];

  constructor(
    readonly file: string,
    readonly text: string,
  ) {
    const lineCounter = new LineCounter();
    const docs = parseAllDocuments(text, { lineCounter });
    docs.forEach((doc, index) => {
      const start = index === 0 ? 0 : (doc.range?.[0] ?? 0);
      const next = docs[index + 1];
      const end = next ? next.range[0] : text.length;
      const content = 'contents' in doc && doc.contents ? (doc.contents as Node).range?.[0] : undefined;
      if (content === undefined) return;
      const pos = lineCounter.linePos(content);
      this.slots.push({ start, end, line: pos.line, col: pos.col, doc: doc as Document });
    });
  }

  private slot(at: SourceRef): DocumentSlot | undefined {
    return this.slots.find((s) => s.line === at.line && s.col === at.col);
  }

  /** How the value at `path` of the document at `at` is written, for choosing a value's form. */
  valueShape(at: SourceRef, path: readonly string[]): 'map' | 'seq' | 'bool' | 'scalar' | 'none' {
    const node = this.slot(at)?.doc.getIn(path, true);
    if (isMap(node)) return 'map';
    if (isSeq(node)) return 'seq';
    if (isScalar(node)) return typeof node.value === 'boolean' ? 'bool' : 'scalar';
    return 'none';
  }

  /**
   * The file's text with `edits` made, in order within each document, each checked by reading
   * its document back. Throws {@link SpecEditError} when a document is not there, is not valid
   * YAML, or an edit does not read back as asked.
   */
  edit(edits: readonly PlacedEdit[]): string {
    const bySlot = new Map<DocumentSlot, DocumentEdit[]>();
    for (const { at, edit } of edits) {
      const slot = this.slot(at);
      if (!slot) throw new SpecEditError(this.file, edit.path, `no document starts at line ${at.line}, column ${at.col}`);
      if (slot.doc.errors.length > 0) throw new SpecEditError(this.file, edit.path, 'the file is not valid YAML');
      const list = bySlot.get(slot) ?? [];
      list.push(edit);
      bySlot.set(slot, list);
    }
    let text = this.text;
    // From the last document to the first: an edit never moves the documents before it.
    for (const slot of [...bySlot.keys()].sort((a, b) => b.start - a.start)) {
      const edited = this.editSlot(text.slice(slot.start, slot.end), bySlot.get(slot) ?? []);
      text = text.slice(0, slot.start) + edited + text.slice(slot.end);
    }
    return text;
  }

  private editSlot(slotText: string, edits: readonly DocumentEdit[]): string {
    let current = slotText;
    for (const edit of edits) {
      const doc = onlyDocument(current);
      if (!doc) throw new SpecEditError(this.file, edit.path, 'the document is gone');
      const splice = spliceFor(current, doc, edit, this.file);
      if (!splice) continue;
      const next = current.slice(0, splice.from) + splice.insert + current.slice(splice.to);
      const back = onlyDocument(next)?.getIn(edit.path) as unknown;
      if (!sameData(back, edit.value === undefined ? undefined : edit.value)) {
        throw new SpecEditError(this.file, edit.path, 'the edited file did not read back as intended; edit it by hand');
      }
      current = next;
    }
    return current;
  }
}

/** {@link SpecFileText.edit} of one document's edits. */
export function editDocument(file: string, text: string, at: SourceRef, edits: readonly DocumentEdit[]): string {
  return new SpecFileText(file, text).edit(edits.map((edit) => ({ at, edit })));
}
