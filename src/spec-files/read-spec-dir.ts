/**
 * Reads the spec repository from a local directory (the CLI's `validate` and `plan`). The GitHub
 * side reads the same files at a commit through the API; both feed `loadSpecs` (or `loadSpecFiles`,
 * which parses large repositories on worker threads).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { SpecFile } from '../core/spec/load-specs.js';

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

/**
 * Every `*.yaml` / `*.yml` file under `root`, recursively, with paths relative to `root` using `/`
 * and sorted by code unit, so results (and error order) do not depend on the file system.
 * Hidden entries (`.github/`, `.pre-commit-config.yaml`) and `node_modules` are skipped: they hold
 * other tools' YAML. Symbolic links to files are read; links to directories are not followed,
 * so a link cannot loop or pull in files from outside the tree.
 */
export async function readSpecDir(root: string): Promise<SpecFile[]> {
  const rootStat = await stat(root).catch((error: NodeJS.ErrnoException) => {
    throw new SpecDirError(root, error.code === 'ENOENT' ? 'no such directory' : error.message);
  });
  if (!rootStat.isDirectory()) throw new SpecDirError(root, 'not a directory');
  const relPaths: string[] = [];
  await collect(root, '', relPaths);
  relPaths.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return Promise.all(relPaths.map(async (rel) => ({ path: rel, text: await readFile(path.join(root, ...rel.split('/')), 'utf8') })));
}

async function collect(root: string, rel: string, out: string[]): Promise<void> {
  const entries = await readdir(path.join(root, rel), { withFileTypes: true });
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
    if (entry.isDirectory()) {
      await collect(root, child, out);
    } else if (SPEC_FILE.test(entry.name)) {
      if (entry.isFile()) out.push(child);
      else if (entry.isSymbolicLink() && (await isFile(path.join(root, child)))) out.push(child);
    }
  }
}

async function isFile(file: string): Promise<boolean> {
  return stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
}
