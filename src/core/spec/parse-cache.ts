/**
 * A content-addressed cache of parsed spec texts. Parsing is most of the cost of loading, and the
 * texts loaded together are mostly the same: a pull request's base and head share all files but
 * the ones it edits, and the App loads the same repository again for every push. A text's parse
 * does not depend on its path (see `parse-spec-file.ts`), so the text itself is the key: equal
 * bytes parse once, whatever file they are in.
 *
 * Entries are plain data that loading never mutates, so one entry can serve any number of loads.
 * Least recently used entries are dropped beyond `maxBytes` of text or `maxEntries` texts. The
 * bytes bound is the one that holds memory: a count alone let each push of new large files add its
 * whole size (times the parse's overhead) until the process ran out of heap.
 */
import type { ParsedSpecText } from './parsed-spec.js';
import { utf8Length } from './spec-text.js';

/**
 * Default bound on the bytes of text cached: a 10,000-guest repository is about 5 MB, so base and
 * head of one fit three times over; a parsed text takes about 10 times its size in memory.
 */
const DEFAULT_PARSE_CACHE_BYTES = 16 * 1024 * 1024;

/** Options of {@link createSpecParseCache}. */
export interface SpecParseCacheOptions {
  /**
   * Most parsed texts kept. Default 20,000 (a 10,000-guest repository written one file per guest,
   * twice over for base and head).
   */
  maxEntries?: number;
  /**
   * Most bytes of text (UTF-8) whose parses are kept; default {@link DEFAULT_PARSE_CACHE_BYTES}.
   * A text larger than this alone is parsed but not kept.
   */
  maxBytes?: number;
}

/** Parsed spec texts by content; pass one to `loadSpecs` / `loadSpecFiles` calls that should share work. */
export interface SpecParseCache {
  /** The parse of `text`, if cached (and marks it recently used). */
  get(text: string): ParsedSpecText | undefined;
  set(text: string, parsed: ParsedSpecText): void;
  /** Entries held. */
  readonly size: number;
  /** Bytes (UTF-8) of the texts held. */
  readonly bytes: number;
  /** Lookups answered from the cache, and lookups that were not, since creation. */
  readonly hits: number;
  readonly misses: number;
  clear(): void;
}

/** A new, empty cache. */
export function createSpecParseCache(options: SpecParseCacheOptions = {}): SpecParseCache {
  const maxEntries = options.maxEntries ?? 20_000;
  const maxBytes = options.maxBytes ?? DEFAULT_PARSE_CACHE_BYTES;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 0)
    throw new RangeError(`maxEntries must be a non-negative integer, got ${maxEntries}`);
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  // A Map keeps insertion order: re-inserting on use makes its first key the least recently used.
  const entries = new Map<string, { parsed: ParsedSpecText; bytes: number }>();
  let bytes = 0;
  let hits = 0;
  let misses = 0;
  const drop = (text: string): void => {
    const entry = entries.get(text);
    if (entry === undefined) return;
    entries.delete(text);
    bytes -= entry.bytes;
  };
  return {
    get(text) {
      const entry = entries.get(text);
      if (entry === undefined) {
        misses += 1;
        return undefined;
      }
      hits += 1;
      entries.delete(text);
      entries.set(text, entry);
      return entry.parsed;
    },
    set(text, parsed) {
      drop(text);
      const size = utf8Length(text);
      if (maxEntries === 0 || size > maxBytes) return;
      entries.set(text, { parsed, bytes: size });
      bytes += size;
      while (entries.size > maxEntries || bytes > maxBytes) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        drop(oldest.value);
      }
    },
    get size() {
      return entries.size;
    },
    get bytes() {
      return bytes;
    },
    get hits() {
      return hits;
    },
    get misses() {
      return misses;
    },
    clear() {
      entries.clear();
      bytes = 0;
    },
  };
}
