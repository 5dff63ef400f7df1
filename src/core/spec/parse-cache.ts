/**
 * A content-addressed cache of parsed spec texts. Parsing is most of the cost of loading, and the
 * texts loaded together are mostly the same: a pull request's base and head share all files but
 * the ones it edits, and the App loads the same repository again for every push. A text's parse
 * does not depend on its path (see `parse-spec-file.ts`), so the text itself is the key: equal
 * bytes parse once, whatever file they are in.
 *
 * Entries are plain data that loading never mutates, so one entry can serve any number of loads.
 * Least recently used entries are dropped beyond `maxEntries`.
 */
import type { ParsedSpecText } from './parse-spec-file.js';

/** Options of {@link createSpecParseCache}. */
export interface SpecParseCacheOptions {
  /**
   * Most parsed texts kept. Default 20,000 (a 10,000-guest repository written one file per guest,
   * twice over for base and head); a parsed text takes about 10 times its size in memory.
   */
  maxEntries?: number;
}

/** Parsed spec texts by content; pass one to `loadSpecs` / `loadSpecFiles` calls that should share work. */
export interface SpecParseCache {
  /** The parse of `text`, if cached (and marks it recently used). */
  get(text: string): ParsedSpecText | undefined;
  set(text: string, parsed: ParsedSpecText): void;
  /** Entries held. */
  readonly size: number;
  /** Lookups answered from the cache, and lookups that were not, since creation. */
  readonly hits: number;
  readonly misses: number;
  clear(): void;
}

/** A new, empty cache. */
export function createSpecParseCache(options: SpecParseCacheOptions = {}): SpecParseCache {
  const maxEntries = options.maxEntries ?? 20_000;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 0)
    throw new RangeError(`maxEntries must be a non-negative integer, got ${maxEntries}`);
  // A Map keeps insertion order: re-inserting on use makes its first key the least recently used.
  const entries = new Map<string, ParsedSpecText>();
  let hits = 0;
  let misses = 0;
  return {
    get(text) {
      const parsed = entries.get(text);
      if (parsed === undefined) {
        misses += 1;
        return undefined;
      }
      hits += 1;
      entries.delete(text);
      entries.set(text, parsed);
      return parsed;
    },
    set(text, parsed) {
      if (maxEntries === 0) return;
      entries.delete(text);
      entries.set(text, parsed);
      while (entries.size > maxEntries) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        entries.delete(oldest.value);
      }
    },
    get size() {
      return entries.size;
    },
    get hits() {
      return hits;
    },
    get misses() {
      return misses;
    },
    clear() {
      entries.clear();
    },
  };
}
