/** Terminal building blocks: values from a cluster must not carry escape sequences to a terminal. */
import { showInvisible } from '../visible-text.js';
import { shorten } from './markdown-format.js';

/** Longest value printed in the terminal; `--format json` has the full text. */
const MAX_TERMINAL_VALUE_CHARS = 200;

/**
 * Makes text safe and single-line for a terminal: line breaks become `\n`, other control
 * characters (ESC above all, which could rewrite the screen) `\xNN`, bidirectional overrides and
 * zero-width characters `\uNNNN` (see `visible-text.ts`). Longer than `max` characters, it is cut
 * and says so, with its length; `Infinity` never cuts (values of options that reach the host).
 */
export function terminalSafe(text: string, max: number = MAX_TERMINAL_VALUE_CHARS): string {
  return showInvisible(shorten(text, max));
}

/** ANSI styles the renderers use. */
export type Style = 'bold' | 'dim' | 'red' | 'green' | 'yellow' | 'magenta' | 'cyan';

const SGR: Record<Style, string> = { bold: '1', dim: '2', red: '31', green: '32', yellow: '33', magenta: '35', cyan: '36' };

/** Styles text with ANSI escapes, or returns it unchanged when colour is off. */
export type Painter = (text: string, ...styles: Style[]) => string;

/** A painter that colours only when asked, so piped output and tests stay plain. */
export function painter(color: boolean): Painter {
  if (!color) return (text) => text;
  return (text, ...styles) => (styles.length === 0 ? text : `\u001b[${styles.map((s) => SGR[s]).join(';')}m${text}\u001b[0m`);
}
