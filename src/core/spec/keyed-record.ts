/**
 * An empty object for keys a repository chooses (a guest's config keys). V8 gives an ordinary
 * object a new hidden class for every property name it has not seen in that position before:
 * 176,000 distinct unknown keys in a hostile repository made as many classes, in the parser's
 * mapping and in each copy the loader makes of it, at several times the cost of the copies
 * themselves. An object whose properties have been deleted keeps them in a dictionary instead, so
 * a new key costs a hash insert. Its prototype is Object's: it reads, copies and compares as `{}`.
 */
export function keyedRecord<T>(): Record<string, T> {
  const record: Record<string, unknown> = { dictionary: 0, mode: 0 };
  delete record.dictionary;
  delete record.mode;
  return record as Record<string, T>;
}
