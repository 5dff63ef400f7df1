/**
 * The order of text in plans and reports: `localeCompare`'s (the default locale's collation),
 * through one collator made once. `a.localeCompare(b)` sets a collation up for every call, which
 * a sort of a thousand guests pays some ten thousand times.
 */
export const compareText: (a: string, b: string) => number = new Intl.Collator().compare;
