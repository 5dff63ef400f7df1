/**
 * Spec errors: a problem in the spec repository pinned to the YAML node that causes it, how one is
 * printed (`file:line:col: message`), the order errors are reported in and the cap per file. What
 * is an error is decided by the loader and the validator, not here.
 */
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
    // A spec error is about the repository, not the code: its stack says nothing, and capturing
    // one for each of 100,000 errors of a hostile repository was a fifth of validating it.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
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

/**
 * Most errors reported for one file. More are summed up in one line: nobody reads the 100,001st
 * error of a file, and every one costs an annotation on the check run and a line of output.
 */
export const MAX_ERRORS_PER_FILE = 100;

/**
 * Errors of one document that cannot be among those its file shows (see {@link ErrorsPerFile}),
 * counted rather than built: they stand for `count` errors in the file's "N more errors" line and
 * are never shown themselves.
 */
export class UnshownErrors extends SpecError {
  constructor(
    at: SourceRef,
    readonly count: number,
  ) {
    super(at, `${count} errors that are not shown`);
  }
}

/** How many errors `error` stands for. */
function errorCount(error: SpecError): number {
  return error instanceof UnshownErrors ? error.count : 1;
}

/**
 * The first {@link MAX_ERRORS_PER_FILE} errors of each file of `sorted` (ordered by
 * {@link compareSpecErrors}), then a `file: N more errors` line for a file that had more.
 */
export function capErrorsPerFile(sorted: readonly SpecError[]): SpecError[] {
  const out: SpecError[] = [];
  let file: string | undefined;
  let count = 0;
  const close = (): void => {
    if (file !== undefined && count > MAX_ERRORS_PER_FILE) {
      out.push(new SpecError({ file, line: 0, col: 0 }, `${count - MAX_ERRORS_PER_FILE} more errors in this file are not shown`));
    }
  };
  for (const error of sorted) {
    if (error.file !== file) {
      close();
      file = error.file;
      count = 0;
    }
    count += errorCount(error);
    if (count <= MAX_ERRORS_PER_FILE && !(error instanceof UnshownErrors)) out.push(error);
  }
  close();
  return out;
}

/**
 * The errors already found in each file, enough to tell that a document's errors cannot be among
 * the {@link MAX_ERRORS_PER_FILE} {@link capErrorsPerFile} shows: when that many lie on lines
 * before the document starts, its errors sort after them. Such a document's errors are still
 * counted in the file's "N more errors" line; only how they read is never seen, so they are
 * counted without their messages and positions (a "did you mean" search is the costliest part).
 */
export class ErrorsPerFile {
  private readonly files = new Map<string, { count: number; lastLine: number }>();

  /** Counts `errors` toward their files. */
  add(errors: readonly SpecError[]): void {
    for (const error of errors) {
      const tally = this.files.get(error.file);
      if (tally === undefined) this.files.set(error.file, { count: errorCount(error), lastLine: error.line });
      else {
        tally.count += errorCount(error);
        if (error.line > tally.lastLine) tally.lastLine = error.line;
      }
    }
  }

  /** Whether errors at `start` and after it are past what the file shows. */
  hides(start: SourceRef): boolean {
    const tally = this.files.get(start.file);
    return tally !== undefined && tally.count >= MAX_ERRORS_PER_FILE && tally.lastLine < start.line;
  }
}
