/**
 * The per-file half of loading (see `load-specs.ts`): parse one spec file's YAML documents and
 * turn each into its spec and the errors it alone decides (`build-spec.ts`), as plain data — specs,
 * errors and position tables, no YAML library objects — so files can be parsed in worker threads
 * and assembled in the main one. This is most of the work of loading; everything that needs more
 * than one file happens in `assembleSpecs`.
 */
import { isMap, isScalar, LineCounter, parseAllDocuments } from 'yaml';
import type { SourceRef } from '../model.js';
import { buildDocument, type BuiltDocument } from './build-spec.js';
import { withEnvSnapshot } from './env-snapshot.js';
import type { SpecProblem } from './errors.js';
import type { SpecFile } from './load-specs.js';
import { documentStart, PositionTableBuilder, tablePositions, type PositionTable } from './position-table.js';

/** A problem found while parsing, already placed in the file. */
export type ParseProblem = SpecProblem;

/** What one YAML document of a spec file turned out to be. */
export type ParsedDocument =
  /** Invalid YAML (or YAML that cannot become a value, e.g. too many aliases): the document is dropped. */
  | { kind: 'yaml-errors'; errors: ParseProblem[] }
  /** No content: skipped. */
  | { kind: 'empty' }
  /** Content that is not a mapping: an error at `start`. */
  | { kind: 'not-a-mapping'; start: SourceRef }
  /** An invalid spec: its errors (see `build-spec.ts`). */
  | Extract<BuiltDocument, { kind: 'invalid' }>
  /**
   * A cluster or guest spec, with where its parts were written (kept for `LoadedSpecs.positions`
   * and the checks across documents).
   */
  | (Extract<BuiltDocument, { kind: 'cluster' | 'guest' }> & { positions: PositionTable });

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
  // One store for the file's tables: one buffer to send.
  const tables = new PositionTableBuilder();
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      documents.push({ kind: 'yaml-errors', errors: doc.errors.map((error) => ({ at: at(error.pos[0]), message: `YAML: ${error.message}` })) });
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
    const positions = tables.add(doc);
    const built = buildDocument(raw, tablePositions(file.path, positions, lineCounter));
    documents.push(built.kind === 'invalid' ? built : { ...built, positions });
  }
  tables.finish();
  return { path: file.path, lineStarts: lineCounter.lineStarts, documents };
}
