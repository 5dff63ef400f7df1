/**
 * "Did you mean" without a search over every candidate. Comparing an unknown key with each known
 * name cost a full edit-distance table per pair: 3 MB of unknown config keys took more than 12 s
 * to validate, almost all of it here. The names are indexed instead by every string that deleting
 * up to two characters makes of them; two strings within two edits (a substitution, insertion,
 * deletion or swap of neighbours each counting one) always share such a string, so a key is
 * compared only with the few names it shares one with. A key costs a number of lookups bounded by
 * the square of the longest name, whatever it is and however many names there are; a key longer
 * than any name by more than two costs nothing.
 */

/** Most edits a suggestion may be away. */
const MAX_EDITS = 2;

/** Work done by every index since the process started, in lookups and table cells: what tests bound. */
let workUnits = 0;

/** Units of work all "did you mean" searches have done so far (for tests and benchmarks). */
export function suggestionWork(): number {
  return workUnits;
}

/** Every string made of `word` by deleting at most `edits` characters, `word` included. */
function deletions(word: string, edits: number): Set<string> {
  const out = new Set<string>([word]);
  let frontier = [word];
  for (let round = 0; round < edits; round++) {
    const next: string[] = [];
    for (const text of frontier) {
      for (let i = 0; i < text.length; i++) {
        const shorter = text.slice(0, i) + text.slice(i + 1);
        if (!out.has(shorter)) {
          out.add(shorter);
          next.push(shorter);
        }
      }
    }
    frontier = next;
  }
  workUnits += out.size;
  return out;
}

/**
 * Edit distance counting a swap of neighbours as one edit (optimal string alignment), or
 * `limit + 1` as soon as it is sure to be over `limit`: rows stop once their smallest cell is.
 */
export function boundedEditDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before: number[] = [];
  let above: number[] = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let smallest = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((above[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (above[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, (before[j - 2] ?? 0) + 1);
      row[j] = best;
      if (best < smallest) smallest = best;
    }
    workUnits += b.length;
    if (smallest > limit) return limit + 1;
    before = above;
    above = row;
  }
  return Math.min(above[b.length] ?? 0, limit + 1);
}

/** The closest of a fixed list of names to a word, within two edits. */
export class NearestNames {
  /** Deletion variant → the names (by position in the list) that make it. */
  private readonly variants = new Map<string, number[]>();
  private readonly longest: number;

  /** `names` in order of preference: of equally close names, the first wins. */
  constructor(readonly names: readonly string[]) {
    this.longest = names.reduce((n, name) => Math.max(n, name.length), 0);
    names.forEach((name, index) => {
      for (const variant of deletions(name, MAX_EDITS)) {
        const list = this.variants.get(variant);
        if (list === undefined) this.variants.set(variant, [index]);
        else if (list[list.length - 1] !== index) list.push(index);
      }
    });
  }

  /** The closest name 1 or 2 edits from `word` (an exact match is not a suggestion), or undefined. */
  nearest(word: string): string | undefined {
    const found = this.find(word);
    return found === undefined ? undefined : this.names[found.index];
  }

  /**
   * The closest name within two edits of `word` — by its position in the list and its distance —
   * or undefined. An exact match counts only with `exact` (a word that differs in case only, say).
   */
  find(word: string, exact = false): { index: number; distance: number } | undefined {
    if (word.length === 0 || word.length > this.longest + MAX_EDITS) return undefined;
    let best: { index: number; distance: number } | undefined;
    let checked: Set<number> | undefined;
    const consider = (variant: string): void => {
      workUnits += 1;
      const found = this.variants.get(variant);
      if (found === undefined) return;
      for (const index of found) {
        checked ??= new Set();
        if (checked.has(index)) continue;
        checked.add(index);
        const distance = boundedEditDistance(word, this.names[index] ?? '', MAX_EDITS);
        if ((distance === 0 && !exact) || distance > MAX_EDITS) continue;
        if (!best || distance < best.distance || (distance === best.distance && index < best.index)) best = { index, distance };
      }
    };
    // The word with no, one and two characters deleted; repeats only cost a lookup.
    consider(word);
    for (let i = 0; i < word.length; i++) {
      const once = word.slice(0, i) + word.slice(i + 1);
      consider(once);
      for (let j = i; j < once.length; j++) consider(once.slice(0, j) + once.slice(j + 1));
    }
    return best;
  }
}
