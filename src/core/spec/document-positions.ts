/**
 * Finds where a part of a spec document was written, so every error points at the offending YAML
 * node: the key for an unknown key, the value for a bad value, the document start for a missing
 * key. Positions are computed lazily: only documents with errors pay for the lookup.
 */
import { isAlias, isMap, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';
import type { SourceRef } from '../model.js';

/** A path into a document: mapping keys and list indexes, e.g. `['config', 'net0']`, `['ignore', 2]`. */
export type DocPath = readonly (string | number)[];

/** Where the parts of one document are. Missing paths fall back to the nearest written ancestor. */
export interface DocumentPositions {
  /** Start of the document's content (its first key). */
  readonly start: SourceRef;
  /** The key node of the path's last mapping entry. */
  key(path: DocPath): SourceRef;
  /** The value node at the path. */
  value(path: DocPath): SourceRef;
  /** The key positions of every entry of the mapping at the path (one walk, for many keys). */
  keysOf(path: DocPath): Record<string, SourceRef>;
}

/** Positions that all resolve to one place, for specs built without a YAML document. */
export function fixedPositions(at: SourceRef): DocumentPositions {
  return { start: at, key: () => at, value: () => at, keysOf: () => ({}) };
}

interface Found {
  key?: Node;
  value?: Node;
}

/** Walks the YAML tree along `path`, stopping at the deepest node that exists. */
function walk(doc: Document, path: DocPath): Found {
  let node: unknown = doc.contents;
  let found: Found = isNode(node) ? { value: node } : {};
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === String(segment));
      if (!pair) return found;
      // An entry written without a value (`key:`) has an empty null node after the colon; the
      // key is the better place to point at.
      const value = isNode(pair.value) && !isEmptyScalar(pair.value) ? pair.value : undefined;
      found = { ...(isNode(pair.key) ? { key: pair.key } : {}), ...(value ? { value } : {}) };
      if (!value) return { ...found, value: found.key };
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment];
      if (!isNode(item)) return found;
      found = { value: item };
      node = item;
    } else {
      return found;
    }
  }
  return found;
}

function isEmptyScalar(node: Node): boolean {
  return isScalar(node) && node.value === null && (!node.range || node.range[0] === node.range[1]);
}

function isNode(value: unknown): value is Node {
  return isScalar(value) || isMap(value) || isSeq(value) || isAlias(value);
}

/**
 * Positions of one parsed document of `file`, walking the YAML tree on each question. Loading
 * answers from a `PositionTable` instead (plain data, so documents can be parsed in worker
 * threads); this walk is the reference its answers are tested against, path by path.
 */
export function documentPositions(file: string, doc: Document, lineCounter: LineCounter): DocumentPositions {
  const ref = (offset: number): SourceRef => {
    const { line, col } = lineCounter.linePos(offset);
    return { file, line, col };
  };
  const contents = doc.contents;
  const start = ref(isNode(contents) && contents.range ? contents.range[0] : (doc.range?.[0] ?? 0));
  const at = (node: Node | undefined): SourceRef => (node?.range ? ref(node.range[0]) : start);
  return {
    start,
    key: (path) => {
      const found = walk(doc, path);
      return at(found.key ?? found.value);
    },
    value: (path) => at(walk(doc, path).value),
    keysOf: (path) => {
      let node: unknown = walk(doc, path).value;
      if (isAlias(node)) node = node.resolve(doc);
      const keys: Record<string, SourceRef> = {};
      if (!isMap(node)) return keys;
      for (const item of node.items) {
        if (isScalar(item.key) && item.key.range) keys[String(item.key.value)] = ref(item.key.range[0]);
      }
      return keys;
    },
  };
}
