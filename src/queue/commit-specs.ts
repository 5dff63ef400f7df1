/**
 * The specs of a commit, read from its archive and loaded — once: a commit never changes, so what
 * was loaded for it is kept (in this worker's memory) and reused by every plan against it. The base
 * branch's commit is shared by every pull request on it, so after the first plan a push costs one
 * archive download (its head) and one load; a re-plan of the same head (`/pve plan`, "Re-run")
 * costs neither. Concurrent plans of one commit share one read.
 *
 * Below that, loading goes through {@link loadCommitSpecFiles} with one content-addressed parse
 * cache per worker process (`createSpecParseCache`): a push re-parses only the files it changed —
 * the rest were parsed for the base, or an earlier push — while cross-file checks still see every
 * guest.
 */
import type { ProbotOctokit } from 'probot';
import type { LoadedSpecs, SpecFile } from '../core/spec/load-specs.js';
import { specFileBytes } from '../core/spec/spec-text.js';
import { type ArchiveLimits, DEFAULT_ARCHIVE_LIMITS, readRepoArchive } from '../github/read-archive.js';
import type { RepoConfig } from '../github/repo-config.js';
import { baseSpecFiles, headSpecFiles, specFileFilter } from '../github/spec-repo.js';
import { loadSpecFiles } from '../spec-files/load-spec-files.js';
import { createSpecParseCache, type SpecParseCache } from '../core/spec/parse-cache.js';
import type { RepoRef } from './schema.js';

/** One commit's specs, loaded. */
export interface CommitSpecs {
  sha: string;
  /** Spec root in the repository (`''`: the root). */
  specRoot: string;
  fileCount: number;
  /** Bytes of the commit's spec files: what it costs to keep (its loaded specs take about 7 times that). */
  bytes: number;
  loaded: LoadedSpecs;
  /** `.github/pve-gitops.yml` of a base commit (the drift report's allow-list); absent for heads. */
  config?: RepoConfig;
}

/**
 * Loads spec files — texts in `cache` are not parsed again, the rest on worker threads when there
 * is enough of it; the one place the App parses specs.
 */
function loadCommitSpecFiles(
  files: readonly SpecFile[],
  cache: SpecParseCache,
  onWorkerFailure?: (error: Error) => void,
): Promise<LoadedSpecs> {
  return loadSpecFiles(files, { cache, ...(onWorkerFailure ? { onWorkerFailure } : {}) });
}

/**
 * Default bound on the spec bytes of the commits kept: four commits of a 10,000-guest repository
 * (5 MB each), about 170 MB of loaded specs.
 */
const DEFAULT_COMMIT_SPECS_BYTES = 24 * 1024 * 1024;

/** Options of {@link CommitSpecsCache}. */
interface CommitSpecsOptions {
  /** Commits kept; each holds a whole loaded spec set (tens of MB for 10,000 guests). Default 6. */
  maxEntries?: number;
  /**
   * Most bytes of spec files, over all commits kept; default {@link DEFAULT_COMMIT_SPECS_BYTES}. A
   * commit larger than this alone is loaded for the plans that asked for it, but not kept.
   */
  maxBytes?: number;
  limits?: ArchiveLimits;
  /** Parsed texts shared by every commit loaded here; default a cache of 20,000 texts. */
  parseCache?: SpecParseCache;
  /**
   * Loads a commit's files instead of this thread: the App passes a `SpecLoadThread`, so a costly
   * repository is validated off the event loop, within a time budget. Default: here, with `parseCache`.
   */
  load?: (files: readonly SpecFile[]) => Promise<LoadedSpecs>;
  onWorkerFailure?: (error: Error) => void;
}

/**
 * Loaded specs by commit, least recently used dropped first. Bounded by bytes as well as by count:
 * with a count alone, each push of new large files kept its whole loaded spec set until the heap ran out.
 */
export class CommitSpecsCache {
  private readonly entries = new Map<string, Promise<CommitSpecs>>();
  /** Bytes of each loaded entry (an entry still loading has none yet). */
  private readonly sizes = new Map<string, number>();
  private heldBytes = 0;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly limits: ArchiveLimits;
  /** Parsed spec texts, by content, across commits. */
  readonly parseCache: SpecParseCache;

  /** Archives downloaded so far (for measurements). */
  downloads = 0;

  constructor(private readonly options: CommitSpecsOptions = {}) {
    this.maxEntries = options.maxEntries ?? 6;
    this.maxBytes = options.maxBytes ?? DEFAULT_COMMIT_SPECS_BYTES;
    this.limits = options.limits ?? DEFAULT_ARCHIVE_LIMITS;
    this.parseCache = options.parseCache ?? createSpecParseCache();
  }

  /**
   * The base commit's specs: its `.github/pve-gitops.yml` decides the spec root. Throws
   * `ArchiveError` or `RepoConfigError` when the commit cannot be used.
   */
  base(octokit: ProbotOctokit, repo: RepoRef, sha: string): Promise<CommitSpecs> {
    return this.once(`${repo.id}:${sha}:base`, async () => {
      this.downloads += 1;
      const contents = await readRepoArchive(octokit, repo, sha, specFileFilter(undefined), this.limits);
      const { specRoot, files, config } = baseSpecFiles(contents);
      const loaded = await this.loadFiles(files);
      return { sha, specRoot, fileCount: files.length, bytes: filesBytes(files), loaded, ...(config ? { config } : {}) };
    });
  }

  /** The head commit's specs under the base's spec root. Throws `ArchiveError` when the commit cannot be used. */
  head(octokit: ProbotOctokit, repo: RepoRef, sha: string, specRoot: string): Promise<CommitSpecs> {
    return this.once(`${repo.id}:${sha}:root=${specRoot}`, async () => {
      this.downloads += 1;
      const contents = await readRepoArchive(octokit, repo, sha, specFileFilter(specRoot), this.limits);
      const { files } = headSpecFiles(contents, specRoot);
      return {
        sha,
        specRoot,
        fileCount: files.length,
        bytes: filesBytes(files),
        loaded: await this.loadFiles(files),
      };
    });
  }

  private loadFiles(files: readonly SpecFile[]): Promise<LoadedSpecs> {
    return this.options.load ? this.options.load(files) : loadCommitSpecFiles(files, this.parseCache, this.options.onWorkerFailure);
  }

  private once(key: string, load: () => Promise<CommitSpecs>): Promise<CommitSpecs> {
    const cached = this.entries.get(key);
    if (cached) {
      // Most recently used goes last.
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
    }
    const loading = load();
    this.entries.set(key, loading);
    loading.then(
      (specs) => {
        if (this.entries.get(key) !== loading) return;
        if (specs.bytes > this.maxBytes) return this.drop(key);
        this.sizes.set(key, specs.bytes);
        this.heldBytes += specs.bytes;
        this.evict();
      },
      // A failure is not kept: the next plan tries again (GitHub may have been down).
      () => {
        if (this.entries.get(key) === loading) this.drop(key);
      },
    );
    this.evict();
    return loading;
  }

  /** Bytes of spec files of the commits kept (loaded ones: an entry still loading counts once it is). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Commits kept or loading. */
  get size(): number {
    return this.entries.size;
  }

  private drop(key: string): void {
    this.entries.delete(key);
    this.heldBytes -= this.sizes.get(key) ?? 0;
    this.sizes.delete(key);
  }

  private evict(): void {
    while (this.entries.size > this.maxEntries || this.heldBytes > this.maxBytes) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.drop(oldest);
    }
  }
}

function filesBytes(files: readonly SpecFile[]): number {
  let bytes = 0;
  for (const file of files) bytes += specFileBytes(file);
  return bytes;
}
