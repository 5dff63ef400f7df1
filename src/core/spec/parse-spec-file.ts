/**
 * The per-file half of loading (see `load-specs.ts`): parse one spec file's YAML documents into
 * plain data — JavaScript values and position tables, no YAML library objects — so files can be
 * parsed in worker threads and assembled in the main one. Parsing is most of the work of loading;
 * everything that needs more than one file happens in `assembleSpecs`.
 *
 * The result depends on the text alone, not on the file's path (problems carry offsets, the path
 * is added when the file is assembled): files with the same bytes parse once (`parse-cache.ts`).
 *
 * Every document is inspected before its value is built: nesting depth, alias count and size
 * with aliases expanded are bounded (`spec-limits.ts`), a recursive alias is refused, and an
 * integer written beyond 2^53 is an error instead of a silently rounded number.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseAllDocuments, type Document, type Node } from 'yaml';
import { parseCommonYaml } from './common-yaml.js';
import type { ParsedDocument, ParseProblem, ParsedSpecText } from './parsed-spec.js';
import { buildPositionTable, documentStart } from './position-table.js';
import { limitHint, resolveSpecLimits, type SpecLimits } from './spec-limits.js';

/**
 * Parses every YAML document of `text`. The YAML library reads `process.env.LOG_TOKENS` for each
 * token; callers that parse a lot should run this with `process.env` snapshotted (the edge that
 * owns the process does: `src/spec-files/env-snapshot.ts`).
 */
export function parseSpecText(text: string, limits: SpecLimits = resolveSpecLimits()): ParsedSpecText {
  // Most spec files are written in a subset of YAML that a single pass reads with the library's
  // exact result (`common-yaml.ts`); anything else, including every invalid text, goes to the library.
  return parseCommonYaml(text, limits) ?? parseWithLibrary(text, limits);
}

/**
 * {@link parseSpecText} by the YAML library alone: the reference the fast reader is compared with,
 * and the parser of every text outside its subset.
 */
export function parseWithLibrary(text: string, limits: SpecLimits = resolveSpecLimits()): ParsedSpecText {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, merge: true });
  const documents: ParsedDocument[] = [];
  let expandedNodes = 0;
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      documents.push({
        kind: 'yaml-errors',
        errors: doc.errors.map((error) => ({ offset: error.pos[0], message: yamlMessage(error.message, limits) })),
      });
      continue;
    }
    const contents = doc.contents;
    if (contents === null || (isScalar(contents) && contents.value === null)) {
      documents.push({ kind: 'empty' });
      continue;
    }
    const inspected = inspectDocument(doc, limits, limits.maxExpandedNodes - expandedNodes);
    if (inspected.problems.length > 0) {
      // A refused document has no value for anything to walk: it does not count toward the total.
      documents.push({ kind: 'yaml-errors', errors: inspected.problems });
      continue;
    }
    expandedNodes += inspected.nodes;
    if (!isMap(contents)) {
      documents.push({ kind: 'not-a-mapping', start: documentStart(doc) });
      continue;
    }
    let raw: Record<string, unknown>;
    try {
      // Expansion is bounded by the inspection above; the library's own heuristic is not needed.
      raw = doc.toJS({ maxAliasCount: -1 }) as Record<string, unknown>;
    } catch (error) {
      documents.push({ kind: 'yaml-errors', errors: [{ offset: documentStart(doc), message: `YAML: ${(error as Error).message}` }] });
      continue;
    }
    documents.push({ kind: 'mapping', raw, positions: buildPositionTable(doc) });
  }
  return { lineStarts: lineCounter.lineStarts, documents, expandedNodes };
}

/** The library's message, except for nesting so deep that its own recursion gave up. */
function yamlMessage(message: string, limits: SpecLimits): string {
  if (/Maximum call stack size exceeded/.test(message))
    return `YAML: nested deeper than ${limits.maxDepth} levels; ${limitHint(limits, 'maxDepth')}`;
  return `YAML: ${message}`;
}

/** A written integer: YAML 1.2 core schema decimal, octal and hexadecimal forms. */
const INTEGER_SOURCE = /^[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-f]+)$/i;

class LimitExceeded extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

interface Measure {
  nodes: number;
  height: number;
}

const SCALAR: Measure = Object.freeze({ nodes: 1, height: 1 });

/**
 * Walks a document once: depth, aliases, expanded size and integers beyond 2^53. Sizes of anchored
 * nodes are remembered, so a chain of aliases costs its text, not its expansion; only anchored
 * nodes can be named by an alias, so only they are remembered (most documents have none).
 * Recursion never goes deeper than the depth limit, so a deeply nested document cannot exhaust
 * the stack here either.
 */
function inspectDocument(doc: Document, limits: SpecLimits, nodeBudget: number): { nodes: number; problems: ParseProblem[] } {
  const measured = new Map<Node, Measure>();
  const inProgress = new Set<Node>();
  const problems: ParseProblem[] = [];
  let aliases = 0;
  let nodes = 0;
  const offset = (node: Node): number => node.range?.[0] ?? 0;
  const tooLarge = (node: Node): LimitExceeded =>
    new LimitExceeded(
      offset(node),
      `YAML: too large with its aliases expanded (over ${limits.maxExpandedNodes.toLocaleString('en-US')} values); ${limitHint(limits, 'maxExpandedNodes')}`,
    );
  const tooDeep = (node: Node): LimitExceeded =>
    new LimitExceeded(offset(node), `YAML: nested deeper than ${limits.maxDepth} levels; ${limitHint(limits, 'maxDepth')}`);

  // The keys from the document down to the node being measured, joined only when a problem names them.
  const path: string[] = [];
  const measure = (node: Node, depth: number): Measure => {
    if (depth > limits.maxDepth) throw tooDeep(node);
    if (isScalar(node)) {
      const value = node.value;
      if (typeof value === 'number' && !Number.isSafeInteger(value) && Number.isInteger(value) && INTEGER_SOURCE.test(node.source ?? '')) {
        // Line and column alone leave the reader to find which key in a long line or a flow mapping.
        const where = path.length > 0 ? `${path.join('.').replaceAll('.[', '[')}: ` : '';
        problems.push({
          offset: offset(node),
          message: `${where}integer ${node.source} is beyond 2^53 and cannot be kept exactly; quote it if it is text`,
        });
      }
      if (++nodes > nodeBudget) throw tooLarge(node);
      if (node.anchor !== undefined) measured.set(node, SCALAR);
      return SCALAR;
    }
    if (isAlias(node)) {
      aliases += 1;
      if (aliases > limits.maxAliases) {
        throw new LimitExceeded(
          offset(node),
          `YAML: more than ${limits.maxAliases.toLocaleString('en-US')} aliases in one document; ${limitHint(limits, 'maxAliases')}`,
        );
      }
      const target = node.resolve(doc);
      if (target === undefined) return SCALAR;
      if (inProgress.has(target))
        throw new LimitExceeded(offset(node), `YAML: alias *${node.source} refers to a value that contains it (a recursive alias)`);
      // Anchors come before their aliases, so the target has been measured on the way here.
      const found = measured.get(target) ?? measure(target, depth);
      if (depth + found.height - 1 > limits.maxDepth) throw tooDeep(node);
      nodes += found.nodes;
      if (nodes > nodeBudget) throw tooLarge(node);
      return found;
    }
    if (!isMap(node) && !isSeq(node)) {
      if (++nodes > nodeBudget) throw tooLarge(node);
      return SCALAR;
    }
    const anchored = node.anchor !== undefined;
    if (anchored) inProgress.add(node);
    const before = nodes;
    if (++nodes > nodeBudget) throw tooLarge(node);
    let height = 0;
    let index = 0;
    for (const item of node.items) {
      if (isPair(item)) {
        const key = item.key;
        const value = item.value;
        if (key !== null && typeof key === 'object' && isNode(key)) height = Math.max(height, measure(key, depth + 1).height);
        if (value !== null && typeof value === 'object' && isNode(value)) {
          path.push(keyLabel(key));
          height = Math.max(height, measure(value, depth + 1).height);
          path.pop();
        }
      } else if (isNode(item)) {
        path.push(`[${index}]`);
        height = Math.max(height, measure(item, depth + 1).height);
        path.pop();
      }
      index += 1;
    }
    const result: Measure = { nodes: nodes - before, height: height + 1 };
    if (anchored) {
      inProgress.delete(node);
      measured.set(node, result);
    }
    return result;
  };

  const contents = doc.contents;
  if (!isNode(contents)) return { nodes: 0, problems };
  try {
    measure(contents, 1);
  } catch (error) {
    if (!(error instanceof LimitExceeded)) throw error;
    problems.push({ offset: error.offset, message: error.message });
  }
  return { nodes, problems };
}

/** A key as a problem names it: a scalar key as written (clipped), anything else by its kind. */
function keyLabel(key: unknown): string {
  if (isScalar(key)) {
    const text = String(key.value);
    return text.length > 80 ? `${text.slice(0, 80)}…` : text;
  }
  return isMap(key) ? '{…}' : isSeq(key) ? '[…]' : '?';
}

function isNode(value: unknown): value is Node {
  return isScalar(value) || isMap(value) || isSeq(value) || isAlias(value);
}
