/**
 * Reads the spec repository from a local directory (the CLI's `validate`, `plan`, `drift`): a thin
 * layer over `loadSpecFiles`, which takes files in memory (the App reads the same files from a git
 * archive). The directory is untrusted input like the files in it:
 *
 * - its bounds are checked from the listing, before anything is read: too many files or bytes
 *   refuse the repository, a file over the per-file limit is an error and is never opened;
 * - a symbolic link is read only when it resolves to a regular file inside the spec root; one
 *   that leads outside (`/etc/shadow`, `/proc/self/environ`, which holds the tokens) or nowhere is
 *   an error and its target is never opened. Links to directories are not followed;
 * - files are opened one at a time, so a repository of more files than the process may hold open
 *   loads (instead of failing with EMFILE), and read as bytes decoded strictly as each is read (so
 *   the bytes do not outlive it): a file that is not UTF-8 keeps its bytes, and loading reports
 *   where, rather than a silently replaced character. They are read synchronously: nothing else
 *   runs while a command reads its specs, and four thread-pool round trips per file (open, stat,
 *   read, close) cost 250 files about three times the CPU of reading them in place.
 */
import { closeSync, constants, type Dirent, fstatSync, openSync, readSync } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { compareSpecErrors, SpecError } from '../core/spec/errors.js';
import type { LoadedSpecs } from '../core/spec/load-specs.js';
import type { SpecFileInput } from '../core/spec/spec-text.js';
import { formatBytes, limitHint, resolveSpecLimits, type SpecLimits } from '../core/spec/spec-limits.js';
import { decodeSpecFile } from '../core/spec/spec-text.js';
import { loadSpecFiles, type LoadSpecFilesOptions } from './load-spec-files.js';

/** Thrown when the spec root is missing or not a directory: an empty estate must never be assumed. */
export class SpecDirError extends Error {
  override readonly name = 'SpecDirError';
  constructor(
    readonly root: string,
    reason: string,
  ) {
    super(`cannot read specs from ${root}: ${reason}`);
  }
}

const SPEC_FILE = /\.ya?ml$/i;

/** Options of {@link readSpecDir} and {@link loadSpecDir}. */
interface ReadSpecDirOptions {
  limits?: Partial<SpecLimits>;
}

/** What was read: the files, and `file: message` errors for what was refused. */
export interface SpecDirContents {
  files: SpecFileInput[];
  /** Links leading outside the root or nowhere, files over the size limit, a repository over its bounds. */
  errors: SpecError[];
  /** True when the repository as a whole is over a bound: nothing was read. */
  refused: boolean;
}

/**
 * Every `*.yaml` / `*.yml` file under `root`, recursively, as text (as bytes when it is not UTF-8), with paths relative to `root`
 * using `/` and sorted by code unit, so results (and error order) do not depend on the file system.
 * Hidden entries (`.github/`, `.pre-commit-config.yaml`) and `node_modules` are skipped: they hold
 * other tools' YAML. Errors name files relative to the root, and the repository as `label`.
 */
export async function collectSpecDir(root: string, options: ReadSpecDirOptions & { label?: string } = {}): Promise<SpecDirContents> {
  const limits = resolveSpecLimits(options.limits);
  const label = options.label ?? root;
  const rootStat = await stat(root).catch((error: NodeJS.ErrnoException) => {
    throw new SpecDirError(root, error.code === 'ENOENT' ? 'no such directory' : error.message);
  });
  if (!rootStat.isDirectory()) throw new SpecDirError(root, 'not a directory');
  const realRoot = await realpath(root);
  const listing: Listing = { entries: [], errors: [], tooMany: false };
  await list(realRoot, '', listing, limits);
  const whole = (message: string): SpecDirContents => ({
    files: [],
    errors: [new SpecError({ file: label, line: 0, col: 0 }, message)],
    refused: true,
  });
  if (listing.tooMany) return whole(`more than ${limits.maxFiles.toLocaleString('en-US')} spec files; ${limitHint(limits, 'maxFiles')}`);

  listing.entries.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  // Sizes come from each open file, so a file is measured and read in one go; reading stops once
  // the total is over its bound (at most that much is ever held).
  const budget = { left: limits.maxTotalBytes, over: false };
  const read = listing.entries.map((entry) => readBounded(entry, limits, budget));
  if (budget.over) return whole(`more than ${formatBytes(limits.maxTotalBytes)} of spec files; ${limitHint(limits, 'maxTotalBytes')}`);
  const errors = [...listing.errors];
  const files: SpecFileInput[] = [];
  read.forEach((result, index) => {
    const entry = listing.entries[index];
    if (entry === undefined) return;
    if (result instanceof Uint8Array) files.push({ path: entry.rel, bytes: result });
    else if (typeof result === 'object') files.push({ path: entry.rel, text: result.text });
    else errors.push(fileError(entry.rel, result));
  });
  errors.sort(compareSpecErrors);
  return { files, errors, refused: false };
}

/**
 * The spec files under `root` (see {@link collectSpecDir}). Throws {@link SpecDirError} for a
 * missing root, and for anything refused: a link outside the root, a file or repository over a bound.
 */
export async function readSpecDir(root: string, options: ReadSpecDirOptions = {}): Promise<SpecFileInput[]> {
  const contents = await collectSpecDir(root, options);
  const first = contents.errors[0];
  if (first)
    throw new SpecDirError(
      root,
      `${first.file}: ${first.message}${contents.errors.length > 1 ? ` (and ${contents.errors.length - 1} more)` : ''}`,
    );
  return contents.files;
}

/**
 * Reads and loads the spec repository under `root`: {@link collectSpecDir}, then `loadSpecFiles`
 * with the same options (limits, a parse cache shared with other loads, threads). What the
 * directory refused is reported among the spec errors, as `file: message`.
 */
export async function loadSpecDir(root: string, options: LoadSpecFilesOptions & ReadSpecDirOptions = {}): Promise<LoadedSpecs> {
  const label = options.label ?? root;
  return loadSpecDirContents(await collectSpecDir(root, { ...options, label }), { ...options, label });
}

/**
 * The second half of {@link loadSpecDir}: loads what {@link collectSpecDir} read. Apart, so a caller
 * can look at the files before they are parsed (`plan --base` compares the base's with the head's).
 */
export async function loadSpecDirContents(contents: SpecDirContents, options: LoadSpecFilesOptions = {}): Promise<LoadedSpecs> {
  if (contents.refused) return { specs: { clusters: [], guests: [] }, errors: contents.errors, positions: new Map() };
  const loaded = await loadSpecFiles(contents.files, options);
  if (contents.errors.length === 0) return loaded;
  return { ...loaded, errors: [...contents.errors, ...loaded.errors].sort(compareSpecErrors) };
}

interface Entry {
  rel: string;
  /** The file to open: the entry itself, or the target of a link inside the root. */
  file: string;
}

interface Listing {
  entries: Entry[];
  errors: SpecError[];
  tooMany: boolean;
}

async function list(realRoot: string, rel: string, listing: Listing, limits: SpecLimits): Promise<void> {
  const entries: Dirent[] = await readdir(path.join(realRoot, rel), { withFileTypes: true });
  for (const entry of entries) {
    if (listing.tooMany) return;
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
    const full = path.join(realRoot, child);
    if (entry.isDirectory()) {
      await list(realRoot, child, listing, limits);
      continue;
    }
    if (!SPEC_FILE.test(entry.name) || !(entry.isFile() || entry.isSymbolicLink())) continue;
    // Counted before anything else is asked of the entry: a huge listing stops here.
    if (listing.entries.length + listing.errors.length >= limits.maxFiles) {
      listing.tooMany = true;
      return;
    }
    if (entry.isFile()) {
      listing.entries.push({ rel: child, file: full });
      continue;
    }
    const target = await realpath(full).catch(() => undefined);
    if (target === undefined) {
      listing.errors.push(fileError(child, 'a symbolic link to nothing (its target does not exist)'));
      continue;
    }
    const inside = target.startsWith(realRoot + path.sep);
    const targetStat = inside ? await stat(target).catch(() => undefined) : undefined;
    if (!inside) {
      listing.errors.push(
        fileError(child, 'a symbolic link to a file outside the spec root is not read; copy the file into the repository'),
      );
    } else if (targetStat?.isFile()) {
      listing.entries.push({ rel: child, file: target });
    }
    // A link to a directory inside the root: not followed (its files are read where they are).
  }
}

/** The file's bytes (never more than the per-file limit, or than is left of the total), or why not. */
function readBounded(entry: Entry, limits: SpecLimits, budget: { left: number; over: boolean }): Uint8Array | { text: string } | string {
  if (budget.over) return 'not read';
  let handle: number;
  try {
    // O_NOFOLLOW: a file swapped for a link after the listing is refused, not followed.
    handle = openSync(entry.file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    return `cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
  try {
    const info = fstatSync(handle);
    if (!info.isFile()) return 'is not a regular file';
    if (info.size > limits.maxFileBytes)
      return `${formatBytes(info.size)} is more than a spec file may hold; ${limitHint(limits, 'maxFileBytes')}`;
    budget.left -= info.size;
    if (budget.left < 0) {
      budget.over = true;
      return 'not read';
    }
    const buffer = Buffer.alloc(info.size);
    let filled = 0;
    while (filled < buffer.length) {
      const bytesRead = readSync(handle, buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    const bytes = buffer.subarray(0, filled);
    // Decoded at once, so the bytes are garbage while young; a file that is not UTF-8 keeps its
    // bytes, and loading reports where.
    const decoded = decodeSpecFile({ path: entry.rel, bytes });
    return decoded.ok ? { text: decoded.text } : bytes;
  } finally {
    closeSync(handle);
  }
}

function fileError(file: string, message: string): SpecError {
  return new SpecError({ file, line: 0, col: 0 }, message);
}
