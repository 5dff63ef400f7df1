/**
 * GitHub's limits on the text the App sends, and cutting text to them. GitHub counts some fields
 * in UTF-8 bytes and others in characters (docs/github-app.md, "The REST API the worker uses"): a
 * check run's summary counted in UTF-16 units passes at 65,535 units and is refused at up to
 * 196,605 bytes of CJK text, so each limit says which it counts.
 */

/** A limit in UTF-8 bytes or in characters (code points). */
export type TextLimit = { readonly bytes: number } | { readonly characters: number };

/** A check run's `output.summary` and `output.text`: 65,535 UTF-8 bytes. */
export const CHECK_OUTPUT_MAX_BYTES = 65_535;

/** An annotation's `message` (and `raw_details`): "64 KB"; one byte less, so either reading of KB holds. */
export const ANNOTATION_MESSAGE_MAX_BYTES = 64 * 1024 - 1;

/** A check run's `output.title` and an annotation's `title`: 255 characters. */
export const CHECK_TITLE_MAX_CHARACTERS = 255;

/** What ends a cut text: one character, three bytes in UTF-8. */
const ELLIPSIS = '…';
const ELLIPSIS_BYTES = 3;

/** UTF-8 bytes of the character starting at UTF-16 index `i` and its UTF-16 length; a lone surrogate is sent as U+FFFD (3 bytes). */
function characterAt(text: string, i: number): { bytes: number; units: number } {
  const code = text.charCodeAt(i);
  if (code < 0x80) return { bytes: 1, units: 1 };
  if (code < 0x800) return { bytes: 2, units: 1 };
  if (code >= 0xd800 && code <= 0xdbff) {
    const next = text.charCodeAt(i + 1);
    if (next >= 0xdc00 && next <= 0xdfff) return { bytes: 4, units: 2 };
  }
  return { bytes: 3, units: 1 };
}

/** The UTF-8 length of `text`, as GitHub measures a byte limit. */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; ) {
    const c = characterAt(text, i);
    bytes += c.bytes;
    i += c.units;
  }
  return bytes;
}

/** The number of characters (code points) of `text`, as GitHub measures a character limit. */
export function characterCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; count++) i += characterAt(text, i).units;
  return count;
}

/**
 * `text` as is when it is within `limit`; otherwise its longest prefix that leaves room for an
 * ellipsis, cut between characters — never inside a surrogate pair or a UTF-8 sequence, which
 * GitHub would show as a replacement character — and the ellipsis.
 */
export function clipText(text: string, limit: TextLimit): string {
  const byBytes = 'bytes' in limit;
  const max = byBytes ? limit.bytes : limit.characters;
  // A UTF-16 unit is at most 3 UTF-8 bytes and at most one character: short texts need no count.
  if ((byBytes ? text.length * 3 : text.length) <= max) return text;
  if ((byBytes ? utf8Bytes(text) : characterCount(text)) <= max) return text;
  const budget = max - (byBytes ? ELLIPSIS_BYTES : 1);
  let used = 0;
  let end = 0;
  while (end < text.length) {
    const c = characterAt(text, end);
    const cost = byBytes ? c.bytes : 1;
    if (used + cost > budget) break;
    used += cost;
    end += c.units;
  }
  return `${text.slice(0, end)}${ELLIPSIS}`;
}
