import { describe, expect, it } from 'vitest';
import { characterCount, clipText, utf8Bytes } from './text-limits.js';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
/** A lone surrogate left by a cut would reach GitHub as U+FFFD. */
const hasLoneSurrogate = (text: string) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

describe('clipText by UTF-8 bytes', () => {
  it.each([
    ['plain ASCII', 'a'],
    ['accented Latin (2 bytes)', 'é'],
    ['CJK (3 bytes)', '日本語'],
    ['emoji (4 bytes, a surrogate pair)', '🚀'],
    ['mixed', 'a日🚀é'],
  ])('%s: a long text is cut within 65,535 bytes, on a character boundary, ending with an ellipsis', (_name, unit) => {
    const text = unit.repeat(Math.ceil(200_000 / unit.length));
    const clipped = clipText(text, { bytes: 65_535 });
    expect(bytes(clipped)).toBeLessThanOrEqual(65_535);
    expect(clipped.endsWith('…')).toBe(true);
    expect(text.startsWith(clipped.slice(0, -1))).toBe(true);
    expect(hasLoneSurrogate(clipped)).toBe(false);
    // As long as it can be: the next character would not have fitted beside the ellipsis.
    const next = String.fromCodePoint(text.codePointAt(clipped.length - 1) ?? 0);
    expect(bytes(clipped) + bytes(next)).toBeGreaterThan(65_535);
  });

  it('leaves a text of exactly the limit whole, and cuts one byte more', () => {
    const exact = `${'a'.repeat(65_531)}🚀`;
    expect(bytes(exact)).toBe(65_535);
    expect(clipText(exact, { bytes: 65_535 })).toBe(exact);
    const over = `${exact}a`;
    expect(clipText(over, { bytes: 65_535 })).toBe(`${'a'.repeat(65_531)}…`);
  });

  it('never splits an emoji, whatever the budget', () => {
    const text = '🚀'.repeat(100);
    for (let max = 4; max < 40; max++) {
      const clipped = clipText(text, { bytes: max });
      expect(bytes(clipped)).toBeLessThanOrEqual(max);
      expect(hasLoneSurrogate(clipped)).toBe(false);
    }
  });

  it('counts a lone surrogate as the three bytes of the replacement character it becomes', () => {
    expect(utf8Bytes('\ud800')).toBe(bytes('\ud800'));
    expect(utf8Bytes('a\udc00🚀日é')).toBe(bytes('a\udc00🚀日é'));
  });
});

describe('clipText by characters', () => {
  it('counts an emoji as one character and never splits it', () => {
    const title = '🚀'.repeat(300);
    const clipped = clipText(title, { characters: 255 });
    expect(characterCount(clipped)).toBe(255);
    expect(clipped).toBe(`${'🚀'.repeat(254)}…`);
    expect(clipText('🚀'.repeat(255), { characters: 255 })).toBe('🚀'.repeat(255));
  });
});
