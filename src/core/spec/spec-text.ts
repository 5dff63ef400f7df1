/**
 * Spec files as bytes or text, turned into text strictly: a file that is not valid UTF-8 is an
 * error, never silently repaired with replacement characters (a value that changed on the way in
 * would be planned and applied as something nobody wrote).
 */

/** One spec file as a front end has it: the CLI reads bytes from disk, the App from a git archive. */
export type SpecFileInput = { path: string; text: string } | { path: string; bytes: Uint8Array };

/** The text of a file, or where and why it is not text. */
type DecodedSpec = { ok: true; text: string } | { ok: false; line: number; col: number; message: string };

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Size of a file in bytes (UTF-8 for text given as a string). */
export function specFileBytes(file: SpecFileInput): number {
  return 'bytes' in file ? file.bytes.byteLength : utf8Length(file.text);
}

/** Bytes of `text` encoded as UTF-8. */
export function utf8Length(text: string): number {
  // Native and exact, a lone surrogate counted as the three bytes of U+FFFD as an encoder writes
  // it: a test of the text for ASCII took six times as long (a plan --base counts 5 MB three times).
  return Buffer.byteLength(text, 'utf8');
}

/** Decodes a file: bytes as strict UTF-8 (a leading BOM dropped); text must be well-formed UTF-16. */
export function decodeSpecFile(file: SpecFileInput): DecodedSpec {
  if ('text' in file) {
    // Native, and free for text in Latin-1 (V8 stores it one byte a character, with no surrogate
    // at all): every text read from disk comes here once more after its strict decoding.
    const lone = file.text.isWellFormed() ? -1 : firstLoneSurrogate(file.text);
    return lone < 0
      ? { ok: true, text: file.text }
      : { ok: false, ...lineCol(file.text, lone), message: 'text is not valid Unicode (a lone surrogate)' };
  }
  try {
    return { ok: true, text: decoder.decode(file.bytes) };
  } catch {
    const offset = firstInvalidUtf8(file.bytes);
    const before = decoder.decode(file.bytes.subarray(0, offset));
    return {
      ok: false,
      ...lineCol(before, before.length),
      message: `not valid UTF-8 at byte ${offset} (0x${(file.bytes[offset] ?? 0).toString(16).padStart(2, '0')}); spec files must be UTF-8`,
    };
  }
}

function lineCol(text: string, index: number): { line: number; col: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) {
    line += 1;
    start = i + 1;
  }
  return { line, col: index - start + 1 };
}

function firstLoneSurrogate(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0xd800 || code > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i += 1;
    else return i;
  }
  return -1;
}

/** Offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629, table 3-7 of Unicode). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] ?? 0;
    if (b < 0x80) {
      i += 1;
      continue;
    }
    let length: number;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) low = 0xa0;
      if (b === 0xed) high = 0x9f; // surrogates are not characters
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) low = 0x90;
      if (b === 0xf4) high = 0x8f;
    } else return i;
    for (let k = 1; k < length; k++) {
      const c = bytes[i + k];
      if (c === undefined || c < (k === 1 ? low : 0x80) || c > (k === 1 ? high : 0xbf)) return i;
    }
    i += length;
  }
  return -1;
}
