/**
 * The spec repository at one commit, from one tarball download (`GET /repos/{o}/{r}/tarball/{sha}`,
 * not a request per file), read in memory: the gzip stream goes through tar-stream and only the
 * files asked for are kept; nothing is written to disk, so no entry can land outside anything.
 *
 * The archive is untrusted input — a pull request chooses its content. It is bounded in
 * compressed bytes, unpacked bytes, entries and size per kept file, and reading stops at the first
 * bound crossed. Links (symbolic or hard) are never followed: they are listed, and the caller
 * refuses those where a spec or the App's config could be (`spec-repo.ts`), because skipping them
 * would silently drop specs and following them could read outside the repository.
 */
import { posix } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';
import type { ProbotOctokit } from 'probot';
import { extract } from 'tar-stream';

/** Bounds on one archive. */
export interface ArchiveLimits {
  /** Compressed bytes downloaded. */
  maxBytes: number;
  /** Bytes after gunzip (a gzip bomb stops here). */
  maxUnpackedBytes: number;
  /** Entries in the archive, kept or not. */
  maxEntries: number;
  /** Size of one kept file. */
  maxFileBytes: number;
}

/**
 * Default bounds: generous for a spec repository (10,000 guests are about 5 MB of YAML), small
 * enough that a hostile archive costs a worker seconds and megabytes, not the host.
 */
export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = {
  maxBytes: 64 * 1024 * 1024,
  maxUnpackedBytes: 256 * 1024 * 1024,
  maxEntries: 100_000,
  maxFileBytes: 1024 * 1024,
};

/** The archive cannot be used: too large, a link where a spec would be, not a tarball. `path` names the entry. */
export class ArchiveError extends Error {
  override name = 'ArchiveError';
  constructor(
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

/** Which files to keep, by their path inside the repository (the archive's top folder removed). */
type KeepFile = (path: string) => boolean;

/** A symbolic or hard link found in the archive; never followed. */
export interface ArchiveLink {
  path: string;
  kind: 'symlink' | 'link';
  target: string;
}

/** What {@link readTarball} found. */
export interface ArchiveContents {
  /** Text of the kept files, by repository path. */
  files: Map<string, string>;
  /** Every link of the archive. */
  links: ArchiveLink[];
}

/** Counts bytes through a stream and fails past a bound. */
function byteLimit(max: number, what: () => ArchiveError): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      seen += chunk.length;
      if (seen > max) callback(what());
      else callback(null, chunk);
    },
  });
}

/**
 * The path of an entry inside the repository: GitHub's tarballs put everything under one
 * `<owner>-<repo>-<sha>/` folder, which is removed. Undefined for the folder itself; an error for
 * a path that climbs out (`..`) or is absolute — never produced by GitHub, so the archive is not one.
 */
export function repoPath(entryName: string): string | undefined {
  // Checked before the top folder is cut off: cutting at the first slash would turn `/abs.yaml`
  // (an empty top folder) or `../abs.yaml` into the repository's `abs.yaml`.
  const top = entryName.split('/', 1)[0] ?? '';
  if (posix.isAbsolute(entryName) || top === '..') {
    throw new ArchiveError(`archive entry '${entryName.slice(0, 200)}' points outside the repository`, entryName);
  }
  const slash = entryName.indexOf('/');
  if (slash < 0) return undefined;
  const rest = entryName.slice(slash + 1).replace(/\/+$/, '');
  if (rest === '') return undefined;
  const normal = posix.normalize(rest);
  if (normal.startsWith('../') || normal === '..' || posix.isAbsolute(rest)) {
    throw new ArchiveError(`archive entry '${entryName.slice(0, 200)}' points outside the repository`, entryName);
  }
  return normal;
}

/**
 * Reads a gzipped tarball stream: the text of the kept files by repository path, and the links.
 * Throws {@link ArchiveError} on any bound crossed or a stream that is not a gzipped tarball.
 */
export async function readTarball(
  source: Readable,
  keep: KeepFile,
  limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
): Promise<ArchiveContents> {
  const files = new Map<string, string>();
  const links: ArchiveLink[] = [];
  const tar = extract();
  let entries = 0;
  tar.on('entry', (header, stream, next) => {
    // A failing archive destroys the entry stream too; the error is reported once, by the pipeline.
    stream.on('error', () => {});
    const fail = (error: Error): void => {
      stream.resume();
      next(error);
    };
    entries += 1;
    if (entries > limits.maxEntries) return fail(new ArchiveError(`the archive has more than ${limits.maxEntries} entries`));
    let path: string | undefined;
    try {
      path = repoPath(header.name);
    } catch (error) {
      return fail(error as Error);
    }
    if (path === undefined) {
      stream.resume();
      return next();
    }
    if (header.type === 'symlink' || header.type === 'link') {
      links.push({ path, kind: header.type, target: String(header.linkname ?? '').slice(0, 200) });
      stream.resume();
      return next();
    }
    if (header.type !== 'file' && header.type !== 'contiguous-file') {
      stream.resume();
      return next();
    }
    if (!keep(path)) {
      stream.resume();
      return next();
    }
    if ((header.size ?? 0) > limits.maxFileBytes) {
      return fail(new ArchiveError(`${path} is ${header.size} bytes; spec files may be at most ${limits.maxFileBytes} bytes`, path));
    }
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
    stream.on('end', () => {
      files.set(path, Buffer.concat(chunks).toString('utf8'));
      next();
    });
  });
  try {
    await pipeline(
      source,
      byteLimit(limits.maxBytes, () => new ArchiveError(`the archive is larger than ${limits.maxBytes} bytes`)),
      createGunzip(),
      byteLimit(limits.maxUnpackedBytes, () => new ArchiveError(`the archive unpacks to more than ${limits.maxUnpackedBytes} bytes`)),
      tar,
    );
  } catch (error) {
    if (error instanceof ArchiveError) throw error;
    throw new ArchiveError(`the archive could not be read: ${(error as Error).message}`);
  }
  return { files, links };
}

/** Where a repository lives, for the API. */
interface RepoCoordinates {
  owner: string;
  name: string;
}

/**
 * Downloads the repository at `sha` as a tarball with the installation's token (GitHub answers
 * with a redirect to a short-lived archive URL, which fetch follows) and reads it with
 * {@link readTarball}. The body is streamed, never buffered whole, so the byte bound holds.
 */
export async function readRepoArchive(
  octokit: ProbotOctokit,
  repo: RepoCoordinates,
  sha: string,
  keep: KeepFile,
  limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
): Promise<ArchiveContents> {
  const response = await octokit.request('GET /repos/{owner}/{repo}/tarball/{ref}', {
    owner: repo.owner,
    repo: repo.name,
    ref: sha,
    request: { parseSuccessResponseBody: false },
  });
  const body = response.data as unknown as WebReadableStream<Uint8Array> | null;
  if (body === null || typeof (body as { getReader?: unknown }).getReader !== 'function') {
    throw new ArchiveError(`the archive of ${sha} came back empty`);
  }
  const declared = Number(response.headers['content-length'] ?? 0);
  if (declared > limits.maxBytes) {
    await body.cancel().catch(() => {});
    throw new ArchiveError(`the archive is larger than ${limits.maxBytes} bytes`);
  }
  return readTarball(Readable.fromWeb(body), keep, limits);
}
