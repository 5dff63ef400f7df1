import { describe, expect, it } from 'vitest';
import { codeSpan, escapeText, fitList, markdownTable, resolveMaxChars, shorten, assertMarker } from './markdown-format.js';

/** Splits a table row into cells the way GitHub's table extension does: `\x` is one escaped unit. */
function splitRow(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  for (let i = 0; i < line.length; i += 1) {
    const ch = line[i];
    if (ch === '\\' && i + 1 < line.length) {
      cell += ch + line[i + 1];
      i += 1;
    } else if (ch === '|') {
      cells.push(cell);
      cell = '';
    } else cell += ch;
  }
  cells.push(cell);
  return cells.slice(1, -1).map((c) => c.trim());
}

/** What a code span cell shows: fence and padding removed, escaped pipes unescaped. */
function codeContent(cell: string): string {
  const fence = /^`+/.exec(cell)?.[0] ?? '';
  let inner = cell.slice(fence.length, cell.length - fence.length);
  if (inner.startsWith(' ') && inner.endsWith(' ') && inner.trim() !== '') inner = inner.slice(1, -1);
  return inner.replace(/\\\|/g, '|');
}

describe('codeSpan in a table cell', () => {
  it.each([
    ['plain', 'virtio,bridge=vmbr0', 'virtio,bridge=vmbr0'],
    ['pipe', 'a|b', 'a|b'],
    ['backtick', 'a`b', 'a`b'],
    ['double backticks', 'a``b`', 'a``b`'],
    ['leading backtick', '`x', '`x'],
    ['newlines', 'line1\nline2\r\nline3', 'line1⏎line2⏎line3'],
    ['html', '</details><script>x</script>', '</details><script>x</script>'],
    ['spaces both sides', ' padded ', ' padded '],
  ])('%s stays one cell and shows the value', (_name, value, shown) => {
    const row = `| ${codeSpan(value)} | next |`;
    const cells = splitRow(row);
    expect(cells).toHaveLength(2);
    expect(cells[1]).toBe('next');
    expect(codeContent(cells[0] ?? '')).toBe(shown);
    expect(row).not.toContain('\n');
  });

  it.each(['a\\|b', 'a\\\\|b', 'x\\'])('backslashes before a pipe never unescape it (%s)', (value) => {
    const cells = splitRow(`| ${codeSpan(value)} | next |`);
    expect(cells).toHaveLength(2);
    expect(cells[1]).toBe('next');
  });

  it('shows an empty value as a label, not an empty code span', () => {
    expect(codeSpan('')).toBe('*(empty)*');
  });
});

describe('escapeText', () => {
  it.each([
    ['markdown emphasis', '*bold* _it_', '\\*bold\\* \\_it\\_'],
    ['html', '<b>x</b>', '\\<b\\>x\\</b\\>'],
    ['link', '[a](b)', '\\[a\\](b)'],
    ['pipe', 'a|b', 'a\\|b'],
    ['newline', 'a\nb', 'a b'],
    ['backslash then pipe', 'a\\|b', 'a\\\\\\|b'],
  ])('%s', (_name, text, expected) => {
    expect(escapeText(text)).toBe(expected);
    expect(splitRow(`| ${escapeText(text)} | next |`)).toHaveLength(2);
  });
});

describe('shorten', () => {
  it.each([
    ['short', 'abc', 5, 'abc'],
    ['exact', 'abcde', 5, 'abcde'],
    ['long', 'abcdefgh', 5, 'abcd… (cut: 8 characters in all)'],
    ['surrogate pair at the cut', 'abc😀def', 5, 'abc… (cut: 7 characters in all)'],
    ['never cut', 'abcdefgh', Number.POSITIVE_INFINITY, 'abcdefgh'],
  ])('%s', (_name, text, max, expected) => {
    expect(shorten(text, max)).toBe(expected);
  });

  it('cuts long values in a code span to 120 characters and says so, with the length', () => {
    const span = codeSpan('x'.repeat(5_000));
    expect(codeContent(span)).toBe(`${'x'.repeat(119)}… (cut: 5,000 characters in all)`);
  });

  it.each([
    ['ESC', 'a\u001b[31mred', 'a\\x1b[31mred'],
    ['right-to-left override', 'safe\u202Eexe.sh', 'safe\\u202eexe.sh'],
    ['isolates and marks', '\u2066x\u2069\u200f', '\\u2066x\\u2069\\u200f'],
    ['zero-width space and BOM', 'a\u200bb\ufeff', 'a\\u200bb\\ufeff'],
    ['line separator', 'a\u2028b', 'a\\u2028b'],
    ['tab and NUL', 'a\tb\u0000', 'a\\tb\\x00'],
  ])('shows %s as an escape in a code span and in prose', (_name, value, shown) => {
    expect(codeContent(codeSpan(value))).toBe(shown);
    expect(escapeText(value)).toBe(shown.replace(/\\/g, '\\\\').replace(/\[/g, '\\['));
  });
});

describe('limits', () => {
  it.each([65_536, 100_000, 999, 1.5])('rejects maxChars %s', (value) => {
    expect(() => resolveMaxChars(value)).toThrow(RangeError);
  });

  it('defaults to 65,000', () => {
    expect(resolveMaxChars(undefined)).toBe(65_000);
  });

  it.each(['pve-gitops:plan', '<!-- a --> visible <!-- b -->', '<!-- open'])('rejects marker %j', (marker) => {
    expect(() => assertMarker(marker)).toThrow(RangeError);
  });

  it('builds a table with right-aligned columns', () => {
    expect(markdownTable(['a', 'b'], [['1', '2']], ['left', 'right'])).toBe('| a | b |\n| --- | ---: |\n| 1 | 2 |');
  });

  it('fits a list and says how many items were left out', () => {
    const items = Array.from({ length: 100 }, (_v, i) => `item ${i}`);
    const out = fitList(items, 200, (n) => `${n} more`);
    expect(out.length).toBeLessThanOrEqual(200);
    const shown = out.split('\n').filter((line) => line.startsWith('- item')).length;
    expect(out).toContain(`- ${100 - shown} more`);
    expect(fitList(items.slice(0, 2), 200, (n) => `${n} more`)).toBe('- item 0\n- item 1\n');
  });
});
