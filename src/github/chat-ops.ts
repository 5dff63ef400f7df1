/**
 * `/pve <command>` in pull request comments. Only a command a reader of the thread can see runs:
 * the first word of a line of plain text, outside fenced and indented code blocks and outside
 * quotes, so quoting someone's command or showing one in a code block never runs it, and outside
 * anything GitHub renders invisibly — HTML comments, tags and their attributes, the content of
 * HTML elements (a `<details>` is folded), link titles and image descriptions. Where GitHub's
 * renderer ends such a construct depends on the markdown around it, so the parser does not guess:
 * it fails closed (docs/github-app.md, "Which comments hold commands"). Pure: the webhook handler
 * uses it to decide whether to enqueue. The commands themselves are in `commands/registry.ts`.
 */
import { COMMANDS, DEFAULT_COMMAND } from './commands/registry.js';

/** One command found in a comment. */
interface ChatCommand {
  /** The word after `/pve`, lower-cased; `help` when there is none. */
  name: string;
  args: string[];
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const COMMAND = /^ {0,3}\/pve(?:[ \t]+(.*))?$/;
/** Characters that open something that may hide the following lines of its paragraph: links and images (titles, descriptions), code spans, HTML. */
const PARAGRAPH_HIDERS = /[[`<]/;
/** Elements without content: a tag of one of these hides only itself. */
const VOID_ELEMENTS = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
/** CommonMark autolinks (`<https://…>`, `<someone@example.com>`): rendered as visible links, not tags. */
const AUTOLINK =
  /^<(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)>/;

/**
 * Where a start tag beginning at `start` (`<` then a letter) ends, as a browser's tokenizer reads
 * it: at the first `>` outside a quoted attribute value. Undefined when it never ends.
 */
function tagEnd(body: string, start: number): number | undefined {
  let i = start + 1;
  const n = body.length;
  while (i < n && !/[\s/>]/.test(body[i]!)) i++;
  while (i < n) {
    const ch = body[i]!;
    if (ch === '>') return i + 1;
    if (/[\s/]/.test(ch)) {
      i++;
      continue;
    }
    // An attribute name (its first character may be `=`), then maybe `=` and a value.
    i++;
    while (i < n && !/[\s/>=]/.test(body[i]!)) i++;
    while (i < n && /\s/.test(body[i]!)) i++;
    if (body[i] !== '=') continue;
    i++;
    while (i < n && /\s/.test(body[i]!)) i++;
    const quote = body[i];
    if (quote === '"' || quote === "'") {
      const close = body.indexOf(quote, i + 1);
      if (close < 0) return undefined;
      i = close + 1;
    } else {
      while (i < n && !/[\s>]/.test(body[i]!)) i++;
    }
  }
  return undefined;
}

/**
 * The offset from which nothing of `body` counts as visible: the first HTML comment, declaration,
 * processing instruction, end tag, or start tag of an element with content, or a tag that spans
 * lines or never ends. GitHub may render everything after such a construct invisibly (an HTML
 * comment left open in an HTML block swallows the rest of the comment, whatever follows; a folded
 * `<details>` hides its content), and which it does depends on the markdown around it. The scan
 * ignores code blocks and code spans on purpose: HTML shown as code only makes later commands not
 * count, which is safe, whereas misjudging where a code block ends could let hidden text count.
 */
function htmlCutoff(body: string): number {
  for (let i = body.indexOf('<'); i >= 0; i = body.indexOf('<', i + 1)) {
    const next = body[i + 1];
    if (next === undefined) return body.length;
    if (next === '!' || next === '?' || next === '/') return i;
    if (!/[A-Za-z]/.test(next)) continue;
    if (AUTOLINK.test(body.slice(i, i + 400))) continue;
    const end = tagEnd(body, i);
    if (end === undefined || body.slice(i, end).includes('\n')) return i;
    const name = /^<([A-Za-z][A-Za-z0-9-]*)/.exec(body.slice(i, end))?.[1]?.toLowerCase() ?? '';
    if (!VOID_ELEMENTS.has(name)) return i;
    i = end - 1;
  }
  return body.length;
}

/**
 * The commands of a comment body, in order. Lines inside fenced code blocks (``` or ~~~, closed
 * by a fence of the same kind at least as long), indented code (four spaces or a tab) and block
 * quotes (`>`) are skipped; so is every line from the first HTML construct that could hide text on
 * ({@link htmlCutoff}), and a line whose paragraph has a link, an image, code or HTML on an earlier
 * line (a link's title, an image's description or a code span can run over several lines).
 */
export function parseCommands(body: string): ChatCommand[] {
  const commands: ChatCommand[] = [];
  const cutoff = htmlCutoff(body);
  let fence: string | undefined;
  let paragraphHides = false;
  let offset = 0;
  for (const line of body.split(/\r?\n/)) {
    const lineStart = offset;
    offset = lineStart + line.length + (body[lineStart + line.length] === '\r' ? 2 : 1);
    if (lineStart + line.length > cutoff) break;
    const fenceMatch = FENCE.exec(line);
    if (fence !== undefined) {
      if (fenceMatch?.[1] !== undefined && fenceMatch[1][0] === fence[0] && fenceMatch[1].length >= fence.length) fence = undefined;
      paragraphHides = false;
      continue;
    }
    if (fenceMatch?.[1] !== undefined) {
      fence = fenceMatch[1];
      paragraphHides = false;
      continue;
    }
    if (line.trim() === '') {
      paragraphHides = false;
      continue;
    }
    const hidden = paragraphHides;
    if (PARAGRAPH_HIDERS.test(line)) paragraphHides = true;
    if (hidden) continue;
    const match = COMMAND.exec(line.trimEnd());
    if (!match) continue;
    const words = (match[1] ?? '').trim().split(/\s+/).filter(Boolean);
    const [name = DEFAULT_COMMAND, ...args] = words;
    commands.push({ name: name.toLowerCase().slice(0, 40), args: args.slice(0, 10).map((arg) => arg.slice(0, 100)) });
  }
  return commands;
}

/** The reply to `/pve help` (and to a command the App does not know). */
export function helpText(unknown?: string): string {
  const lines = [
    // Typed by anyone: only word characters go back into the reply (no mentions, no markup).
    unknown !== undefined ? `\`/pve ${unknown.replace(/[^\w-]/g, '')}\` is not a pve-gitops command.` : undefined,
    'pve-gitops commands (comment on the pull request, one per line; collaborators with write, maintain or admin permission):',
    '',
    ...COMMANDS.map(({ name, help }) => `- \`/pve ${name}\` — ${help}`),
  ];
  return lines.filter((line) => line !== undefined).join('\n');
}
