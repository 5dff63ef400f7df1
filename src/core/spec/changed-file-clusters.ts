/**
 * The clusters a pull request's changed files name, from the files' text alone: what `plan --base`
 * needs to request the clusters' listings before it has loaded either tree (a listing of 10,000
 * guests is the slowest read of a plan, and its wait is hidden under the loading). A file is
 * changed when its text differs between base and head, or it is in one of them only; identical
 * bytes hold identical documents, so they can bring no cluster into the plan that a changed file
 * does not. The answer is a guess that costs only speed when wrong: the plan's scope is decided
 * later, from the loaded specs, and a cluster missed here is listed then, as before.
 */
import { parseCached, prepareSpecFiles } from './load-specs.js';
import type { SpecParseCache } from './parse-cache.js';
import type { ParsedDocument } from './parsed-spec.js';
import type { SpecLimits } from './spec-limits.js';
import { type SpecFileInput, utf8Length } from './spec-text.js';

/**
 * Most bytes of changed text parsed for the guess: a change larger than this is a large plan whose
 * reading dominates anyway, and its files are not parsed twice.
 */
const MAX_CHANGED_BYTES = 1024 * 1024;

/**
 * The names of the clusters named by documents of files that differ between `head` and `base`
 * (`cluster:` of a guest or another kind's document, `name:` of a Cluster document), sorted; empty
 * when no file differs. Undefined when the changed text is over `maxBytes`: not guessed. With
 * `cache`, the one the trees are then loaded with, each changed text is parsed once for both.
 */
export function changedFileClusters(
  head: readonly SpecFileInput[],
  base: readonly SpecFileInput[],
  limits: SpecLimits,
  maxBytes = MAX_CHANGED_BYTES,
  cache?: SpecParseCache,
): string[] | undefined {
  const changed = [...changedTexts(head, base), ...changedTexts(base, head)];
  let bytes = 0;
  for (const text of changed) {
    bytes += utf8Length(text);
    if (bytes > maxBytes) return undefined;
  }
  const names = new Set<string>();
  // Loading parses these texts under the same limits: the cache's entries are the parses it makes.
  const prepared = prepareSpecFiles([], { limits, ...(cache ? { cache } : {}) });
  for (const text of changed) {
    for (const doc of parseCached(text, prepared, cache).documents) {
      const name = clusterOf(doc);
      if (name !== undefined) names.add(name);
    }
  }
  return [...names].sort();
}

/** Texts of the files of `from` whose path holds other bytes in `other`, or nothing. A file that is not UTF-8 names no cluster. */
function changedTexts(from: readonly SpecFileInput[], other: readonly SpecFileInput[]): string[] {
  const others = new Map(other.map((file) => [file.path, file]));
  const texts: string[] = [];
  for (const file of from) {
    if (!('text' in file)) continue;
    const counterpart = others.get(file.path);
    if (counterpart !== undefined && 'text' in counterpart && counterpart.text === file.text) continue;
    texts.push(file.text);
  }
  return texts;
}

function clusterOf(doc: ParsedDocument): string | undefined {
  if (doc.kind !== 'mapping') return undefined;
  const named = doc.raw.kind === 'Cluster' ? doc.raw.name : doc.raw.cluster;
  return typeof named === 'string' ? named : undefined;
}
