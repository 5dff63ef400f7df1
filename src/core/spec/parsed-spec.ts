/**
 * The shape of a parsed spec text: what `parse-spec-file.ts` (and its fast path,
 * `common-yaml.ts`) produce and loading consumes. Plain data, so it crosses worker threads, and a
 * file of its own, so the two parsers share it without importing each other.
 */
import type { PositionTable } from './position-table.js';

/** A problem found while parsing, at an offset of the file's text. */
export interface ParseProblem {
  offset: number;
  message: string;
}

/** What one YAML document of a spec file turned out to be. */
export type ParsedDocument =
  /** Invalid YAML, or YAML over a limit: the document is dropped. */
  | { kind: 'yaml-errors'; errors: ParseProblem[] }
  /** No content: skipped. */
  | { kind: 'empty' }
  /** Content that is not a mapping: an error at offset `start`. */
  | { kind: 'not-a-mapping'; start: number }
  /** A mapping: its value (`Document.toJS()`) and where its parts were written. */
  | { kind: 'mapping'; raw: Record<string, unknown>; positions: PositionTable };

/** One spec text, parsed. Plain data (structured-cloneable across threads), independent of the file's path. */
export interface ParsedSpecText {
  /** The parser's line starts, to turn offsets into lines and columns. */
  lineStarts: number[];
  documents: ParsedDocument[];
  /** Nodes of the file with every alias expanded: the repository's total is bounded too. */
  expandedNodes: number;
}

/** A parsed text under the path it was loaded from. */
export interface ParsedSpecFile extends ParsedSpecText {
  path: string;
}
