import type { SourceRef } from '../model.js';
import { showInvisible } from '../visible-text.js';

/**
 * A problem in the spec repository, pinned to the YAML node that causes it so the CLI can print
 * `file:line:col: message` and the check run can annotate the line. Lines and columns are 1-based;
 * line 0 means the file (or the repository) as a whole: a file too large to parse, say.
 */
export class SpecError extends Error {
  override readonly name = 'SpecError';
  readonly file: string;
  readonly line: number;
  readonly col: number;

  constructor(at: SourceRef, message: string) {
    super(message);
    this.file = at.file;
    this.line = at.line;
    this.col = at.col;
  }
}

/**
 * `file:line:col: message`, the form editors and CI log parsers understand (`file: message` for a
 * file as a whole). File names and messages quote the repository: control characters and
 * bidirectional overrides in them are shown as escapes, so one line stays one line and reads as
 * what it holds.
 */
export function formatSpecError(error: SpecError): string {
  const file = showInvisible(error.file);
  const message = showInvisible(error.message);
  if (error.line === 0) return `${file}: ${message}`;
  return `${file}:${error.line}:${error.col}: ${message}`;
}

/** Orders errors by file, then position, so output is stable whatever order the checks ran in. */
export function compareSpecErrors(a: SpecError, b: SpecError): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  return a.line - b.line || a.col - b.col || (a.message < b.message ? -1 : a.message > b.message ? 1 : 0);
}
