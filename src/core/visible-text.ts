/**
 * Text from specs and clusters shown to people must show what it is. Control characters can
 * rewrite a terminal (ESC sequences) or hide a line (CR); bidirectional overrides (U+202E and its
 * kin, "Trojan Source") and zero-width characters make text read differently from what it holds
 * — `args: -evil ‮ foo` can display as something harmless. Each such character is shown as a
 * visible escape instead, in terminal, text and markdown output alike.
 */

/**
 * C0 and C1 controls and DEL; bidirectional marks, embeddings, overrides and isolates (U+061C,
 * U+200E–U+200F, U+202A–U+202E, U+2066–U+2069); zero-width characters and the BOM (U+200B–U+200D,
 * U+2060, U+FEFF); the line and paragraph separators (U+2028, U+2029), which some terminals and
 * editors break lines at.
 */
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/g;

/**
 * `text` with every invisible or reordering character replaced by an escape that shows it: `\n`,
 * `\r`, `\t`, `\x1b` for controls, `\u202e` for the rest.
 */
export function showInvisible(text: string): string {
  return text.replace(INVISIBLE, (ch) => {
    if (ch === '\n') return '\\n';
    if (ch === '\r') return '\\r';
    if (ch === '\t') return '\\t';
    const code = ch.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
