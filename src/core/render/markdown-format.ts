/**
 * Markdown building blocks that stay well-formed whatever the value: a config value from the
 * cluster (an operator's description, a secret, a value with `|` or backticks) must never break a
 * table, open an HTML tag or ping someone, and never hide what it holds: control characters and
 * bidirectional overrides are shown as escapes (`visible-text.ts`), and a value cut to fit says
 * that it was cut and how long it is.
 */
import { showInvisible } from '../visible-text.js';

/** Longest value shown in a comment; the JSON plan has the full text. */
const MAX_VALUE_CHARS = 120;

/** Longest message (error, warning, step detail) shown in a comment. */
const MAX_MESSAGE_CHARS = 500;

/**
 * `text` as is when it has at most `max` characters; otherwise its first `max - 1`, an ellipsis
 * and a note that it was cut and how long it is (`… (cut: 5,000 characters in all)`), so a reader
 * never takes a part for the whole. `Infinity` never cuts.
 */
export function shorten(text: string, max: number = MAX_VALUE_CHARS): string {
  if (text.length <= max) return text;
  let end = Math.max(1, max - 1);
  // Never leave half a surrogate pair: it would render as a replacement character.
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${cutNote(characters(text))}`;
}

/** What ends a cut value. */
function cutNote(length: number): string {
  return `… (cut: ${length.toLocaleString('en-US')} characters in all)`;
}

/** Characters (code points) of `text`: what a reader counts, not UTF-16 units. */
function characters(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xdc00 && code <= 0xdfff && i > 0) {
      const before = text.charCodeAt(i - 1);
      if (before >= 0xd800 && before <= 0xdbff) count -= 1;
    }
  }
  return count;
}

/** Collapses line breaks, which would end a table row or a list item; shows other invisible characters. */
function singleLine(text: string, marker: string): string {
  return showInvisible(text.replace(/\r\n|\r|\n/g, marker));
}

/**
 * Escapes prose (messages, names) for inline markdown, table cells included: markdown
 * punctuation and `<` are backslash-escaped so nothing becomes emphasis, a link or an HTML tag.
 */
export function escapeText(text: string, max: number = MAX_MESSAGE_CHARS): string {
  return singleLine(shorten(text, max), ' ').replace(/[\\`*_[\]<>|~#!&]/g, (ch) => `\\${ch}`);
}

/**
 * A value as an inline code span that is also safe in a table cell. Pipes are escaped (GitHub
 * splits cells on them even inside code), with any backslashes before them doubled so the pipe
 * stays escaped; backticks inside get a longer fence.
 */
export function codeSpan(value: string, max: number = MAX_VALUE_CHARS): string {
  if (value === '') return '*(empty)*';
  const content = singleLine(shorten(value, max), '⏎').replace(/(\\*)\|/g, (_m, slashes: string) => `${slashes}${slashes}\\|`);
  const longestRun = Math.max(0, ...(content.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longestRun + 1);
  // CommonMark strips one space from each side when both are present, and a fence next to a
  // backtick in the content would merge with it: padding both sides avoids both.
  const pad = /^[`\s]|[`\s]$/.test(content) ? ' ' : '';
  return `${fence}${pad}${content}${pad}${fence}`;
}

/** A link destination cannot hold spaces, angle brackets or parentheses: they are percent-encoded. */
export function safeUrl(url: string): string {
  return url.replace(/[\s()<>]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** Column alignment of a markdown table. */
type Align = 'left' | 'right';

/** A GitHub table; cells must already be escaped (see {@link escapeText}, {@link codeSpan}). */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[], align?: readonly Align[]): string {
  const rule = headers.map((_h, i) => (align?.[i] === 'right' ? '---:' : '---'));
  const lines = [headers, rule, ...rows].map((cells) => `| ${cells.join(' | ')} |`);
  return lines.join('\n');
}

/** Escapes text placed inside raw HTML (a `<summary>`), where markdown escapes do not apply. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** A hidden marker must be one complete HTML comment, or it would hide the comment body. */
export function assertMarker(marker: string): void {
  if (!/^<!--(?:(?!-->)[\s\S])*-->$/.test(marker)) {
    throw new RangeError(`marker must be a single HTML comment like "<!-- pve-gitops:plan -->", got ${JSON.stringify(marker)}`);
  }
}

/** GitHub rejects issue and pull-request comments longer than this many characters. */
export const GITHUB_COMMENT_LIMIT = 65_536;

/** Default size budget: comfortably under {@link GITHUB_COMMENT_LIMIT}. */
export const DEFAULT_MAX_CHARS = 65_000;

/** Smallest budget that still holds a summary table and the omission note. */
const MIN_MAX_CHARS = 1_000;

/** Validates a caller's `maxChars`: it must keep the body postable. */
export function resolveMaxChars(maxChars: number | undefined): number {
  const max = maxChars ?? DEFAULT_MAX_CHARS;
  if (!Number.isInteger(max) || max < MIN_MAX_CHARS || max >= GITHUB_COMMENT_LIMIT) {
    throw new RangeError(`maxChars must be an integer from ${MIN_MAX_CHARS} to ${GITHUB_COMMENT_LIMIT - 1}, got ${max}`);
  }
  return max;
}

/**
 * Joins `blocks` (already in priority order) while they fit in `budget` characters and stops at
 * the first that does not, so a more important block is never dropped for a less important one.
 * Blocks are produced lazily: a 10,000-guest plan renders only what fits.
 */
function takeWhileFits(blocks: Iterable<string>, budget: number): { text: string; taken: number } {
  const parts: string[] = [];
  let used = 0;
  for (const block of blocks) {
    if (used + block.length > budget) break;
    parts.push(block);
    used += block.length;
  }
  return { text: parts.join(''), taken: parts.length };
}

/**
 * A section of per-item blocks under `heading`, as many as fit in `budget` in the given order
 * (the heading only when at least one block fits). Blocks are rendered lazily.
 */
export function fitSection<T>(
  heading: string,
  items: readonly T[],
  render: (item: T) => string,
  budget: number,
): { text: string; shown: number } {
  if (items.length === 0) return { text: '', shown: 0 };
  const fitted = takeWhileFits(
    (function* blocks() {
      for (const item of items) yield render(item);
    })(),
    budget - heading.length,
  );
  return { text: fitted.taken > 0 ? heading + fitted.text : '', shown: fitted.taken };
}

/**
 * A bulleted list that fits in `budget`: items in order, then a line saying how many were left out.
 * Room for that line is reserved up front so the list never overflows.
 */
export function fitList(items: readonly string[], budget: number, moreLine: (omitted: number) => string): string {
  const reserve = moreLine(items.length).length + 3;
  const { text, taken } = takeWhileFits(
    items.map((item) => `- ${item}\n`),
    Math.max(0, budget - reserve),
  );
  const omitted = items.length - taken;
  return omitted > 0 ? `${text}- ${moreLine(omitted)}\n` : text;
}
