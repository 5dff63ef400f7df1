/**
 * The per-file half of loading (see `load-specs.ts`): parse one spec file's YAML documents into
 * plain data — JavaScript values and position tables, no YAML library objects — so files can be
 * parsed in worker threads and assembled in the main one. Parsing is most of the work of loading;
 * everything that needs more than one file happens in `assembleSpecs`.
 */
import { isMap, isScalar, LineCounter, parseAllDocuments } from 'yaml';
import type { SourceRef } from '../model.js';
import { withEnvSnapshot } from './env-snapshot.js';
import type { SpecFile } from './load-specs.js';
import { buildPositionTable, documentStart, type PositionTable } from './position-table.js';

/** A problem found while parsing, already placed in the file. */
export interface ParseProblem {
  at: SourceRef;
  message: string;
}

/** What one YAML document of a spec file turned out to be. */
export type ParsedDocument =
  /** Invalid YAML (or YAML that cannot become a value, e.g. too many aliases): the document is dropped. */
  | { kind: 'yaml-errors'; errors: ParseProblem[] }
  /** No content: skipped. */
  | { kind: 'empty' }
  /** Content that is not a mapping: an error at `start`. */
  | { kind: 'not-a-mapping'; start: SourceRef }
  /** A mapping: its value (`Document.toJS()`) and where its parts were written. */
  | { kind: 'mapping'; raw: Record<string, unknown>; positions: PositionTable };

/** One spec file, parsed. Plain data: structured-cloneable across threads. */
export interface ParsedSpecFile {
  path: string;
  /** The parser's line starts, to turn the tables' offsets into lines and columns. */
  lineStarts: number[];
  documents: ParsedDocument[];
}

/**
 * Parses spec files, with `process.env` snapshotted for the duration (see `env-snapshot.ts`: the
 * YAML lexer reads it per token, and that costs as much in a worker thread as in the main one).
 */
export function parseSpecFiles(files: readonly SpecFile[]): ParsedSpecFile[] {
  return withEnvSnapshot(() => files.map((file) => parseSpecFile(file)));
}

/** Parses every YAML document of `file`. Prefer `parseSpecFiles` for more than one file. */
export function parseSpecFile(file: SpecFile): ParsedSpecFile {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(file.text, { lineCounter, prettyErrors: false, merge: true });
  const at = (offset: number): SourceRef => ({ file: file.path, ...lineCounter.linePos(offset) });
  const documents: ParsedDocument[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      documents.push({
        kind: 'yaml-errors',
        errors: doc.errors.map((error) => ({ at: at(error.pos[0]), message: `YAML: ${error.message}` })),
      });
      continue;
    }
    const contents = doc.contents;
    if (contents === null || (isScalar(contents) && contents.value === null)) {
      documents.push({ kind: 'empty' });
      continue;
    }
    if (!isMap(contents)) {
      documents.push({ kind: 'not-a-mapping', start: at(documentStart(doc)) });
      continue;
    }
    let raw: Record<string, unknown>;
    try {
      raw = doc.toJS({ maxAliasCount: 1000 }) as Record<string, unknown>;
    } catch (error) {
      documents.push({ kind: 'yaml-errors', errors: [{ at: at(documentStart(doc)), message: `YAML: ${(error as Error).message}` }] });
      continue;
    }
    documents.push({ kind: 'mapping', raw, positions: buildPositionTable(doc) });
  }
  return { path: file.path, lineStarts: lineCounter.lineStarts, documents };
}
