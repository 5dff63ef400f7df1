/**
 * The order of text in plans and reports: `localeCompare`'s (the default locale's collation),
 * through one collator. `a.localeCompare(b)` sets a collation up for every call, which a sort of
 * a thousand guests pays some ten thousand times. The collator is made at the first comparison,
 * not when this module loads: making it costs about 10 ms, which a command that sorts nothing
 * should not pay.
 */
let compare: ((a: string, b: string) => number) | undefined;

export function compareText(a: string, b: string): number {
  compare ??= new Intl.Collator().compare;
  return compare(a, b);
}
