/**
 * The spec files of a repository at one commit, from its archive: the same files the CLI reads
 * from a directory (`readSpecDir`): every `*.yaml`/`*.yml` under the spec root, hidden entries and
 * `node_modules` skipped, paths relative to the root with `/`, sorted. The spec root comes from
 * `.github/pve-gitops.yml` at the BASE commit; the head is read with the base's root.
 */
import type { SpecFile } from '../core/spec/load-specs.js';
import { ArchiveError, type ArchiveContents, type ArchiveLink } from './read-archive.js';
import { parseRepoConfig, REPO_CONFIG_PATHS, type RepoConfig } from './repo-config.js';

/** A commit's specs as read. */
interface SpecRepoFiles {
  /** Spec root in the repository: `''` for the root, else `dir/sub`. */
  specRoot: string;
  /** Spec files, paths relative to the root, sorted by code unit. */
  files: SpecFile[];
  /** The App config of the commit (base commits only: a head's config is never read). */
  config?: RepoConfig;
}

const SPEC_FILE = /\.ya?ml$/i;

/** The path of `path` relative to `root`, or undefined when it is not under it. */
function underRoot(root: string, path: string): string | undefined {
  if (root === '') return path;
  return path.startsWith(`${root}/`) ? path.slice(root.length + 1) : undefined;
}

/** Whether `relative` (to the spec root) is a spec file: YAML, no hidden segment, not in node_modules. */
function isSpecFile(relative: string): boolean {
  if (!SPEC_FILE.test(relative)) return false;
  return relative.split('/').every((segment) => !segment.startsWith('.') && segment !== 'node_modules');
}

/** Whether a file at `path` would be a spec under `root` (or, `root` undefined, under any root). */
export function specFileFilter(root: string | undefined): (path: string) => boolean {
  if (root === undefined) {
    // The root is not known yet (the config is in the same archive): keep every YAML file that
    // is not hidden, and the config. What is not under the root is dropped once it is known.
    return (path) => (REPO_CONFIG_PATHS as readonly string[]).includes(path) || isSpecFile(path);
  }
  return (path) => {
    const relative = underRoot(root, path);
    return relative !== undefined && isSpecFile(relative);
  };
}

/**
 * Refuses a link where a spec or the config would be read: a link named like a spec file under
 * the spec root, or at a config path. The CLI reads such a link's target; the App never follows a
 * link, and skipping it would silently drop a spec. Other links (a directory link, a link to a
 * README) are ignored, as the CLI does not descend into directory links either.
 */
function refuseLinks(root: string, links: readonly ArchiveLink[]): void {
  for (const link of links) {
    const relative = underRoot(root, link.path);
    const guarded = (REPO_CONFIG_PATHS as readonly string[]).includes(link.path) || (relative !== undefined && isSpecFile(relative));
    if (!guarded) continue;
    const kind = link.kind === 'symlink' ? 'a symbolic link' : 'a hard link';
    throw new ArchiveError(
      `${link.path} is ${kind} (to ${link.target || '?'}): links are never followed in the spec repository; commit the file itself`,
      link.path,
    );
  }
}

function specFiles(root: string, contents: ArchiveContents): SpecFile[] {
  const files: SpecFile[] = [];
  for (const [path, text] of contents.files) {
    const relative = underRoot(root, path);
    if (relative !== undefined && isSpecFile(relative)) files.push({ path: relative, text });
  }
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * Reads the base commit: the config (spec root) and the spec files under that root. Throws
 * `RepoConfigError` for an unusable config and `ArchiveError` for a link where a spec could be.
 */
export function baseSpecFiles(contents: ArchiveContents): SpecRepoFiles {
  const configPath = REPO_CONFIG_PATHS.find((path) => contents.files.has(path)) ?? REPO_CONFIG_PATHS[0];
  const config = parseRepoConfig(configPath, contents.files.get(configPath));
  refuseLinks(config.specRoot, contents.links);
  const { specRoot, ...repoConfig } = config;
  return { specRoot, files: specFiles(specRoot, contents), config: repoConfig };
}

/** Reads the head commit with the base's spec root. Throws `ArchiveError` for a link where a spec could be. */
export function headSpecFiles(contents: ArchiveContents, specRoot: string): SpecRepoFiles {
  refuseLinks(specRoot, contents.links);
  return { specRoot, files: specFiles(specRoot, contents) };
}

/** A spec file's path in the repository, for annotations: the root joined with the path relative to it. */
export function repoFilePath(specRoot: string, file: string): string {
  return specRoot === '' ? file : `${specRoot}/${file}`;
}
