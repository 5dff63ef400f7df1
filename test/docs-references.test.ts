/**
 * References between the code and the documentation, checked: every pointer at a section — a
 * markdown anchor (`docs/design.md#the-spec-repository`, `[…](#identity)`) or a section named by
 * its title (`README "How apply decides"`, `docs/github-app.md, "Text limits"`) — in `src/`,
 * `docs/` and the README must name a file that exists and a heading it has. A comment that sends
 * the reader to a section that was renamed or never written is worse than none.
 *
 * It checks pointers at sections only; a plain mention of a file (`docs/design.md`) is not read.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function filesUnder(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path, ext);
    return ext.test(entry.name) ? [path] : [];
  });
}

/** The headings of a markdown file (outside code blocks), as written, markdown syntax kept. */
function headings(markdown: string): string[] {
  const found: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (m?.[1]) found.push(m[1]);
  }
  return found;
}

/** A heading's plain text: inline code, emphasis and links reduced to their words. */
function plainHeading(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*_]/g, '')
    .trim();
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const heading of headings(markdown)) {
    const base = plainHeading(heading)
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** One pointer at a section, found in `from`. */
interface Reference {
  from: string;
  /** The file pointed at, as written (empty: the file it is in). */
  file: string;
  anchor?: string;
  title?: string;
}

/** A source or markdown text as one line per paragraph: a reference may wrap across comment lines. */
function flattened(text: string, markdown: boolean): string {
  // Comment continuation (` * `, `// `) and line breaks are only wrapping; `""` keeps a title apart.
  return markdown ? text.replace(/\n(?!\n)/g, ' ') : text.replace(/\n\s*(?:\*(?!\/)|\/\/)?\s*/g, ' ');
}

/** Every pointer at a section in `text` (the contents of `from`). */
function referencesIn(from: string, text: string): Reference[] {
  const markdown = from.endsWith('.md');
  const flat = flattened(text, markdown);
  const found: Reference[] = [];
  for (const m of flat.matchAll(/([\w./-]*\.md)#([\w-]+)/g)) found.push({ from, file: m[1] ?? '', anchor: m[2] ?? '' });
  if (markdown) for (const m of flat.matchAll(/\]\(#([\w-]+)\)/g)) found.push({ from, file: '', anchor: m[1] ?? '' });
  for (const m of flat.matchAll(/\b(README(?:\.md)?|[\w./-]+\.md),? +["“]([^"”]+)["”]/g)) {
    found.push({ from, file: m[1] === 'README' ? 'README.md' : (m[1] ?? ''), title: m[2] ?? '' });
  }
  return found;
}

/** The markdown file a reference names: beside the referring file, else from the project root (the README by its name alone). */
function target(ref: Reference): string | undefined {
  if (ref.file === '') return ref.from;
  const candidates = [join(dirname(ref.from), ref.file), ref.file, ...(/^README(\.md)?$/.test(ref.file) ? ['README.md'] : [])];
  return candidates.map((c) => relative(ROOT, resolve(ROOT, c))).find((c) => existsSync(join(ROOT, c)));
}

/** Why `ref` points nowhere, or undefined when it holds. */
function broken(ref: Reference, read: (file: string) => string): string | undefined {
  const what = ref.anchor !== undefined ? `${ref.file}#${ref.anchor}` : `${ref.file} "${ref.title}"`;
  const file = target(ref);
  if (file === undefined) return `${ref.from}: ${what}: no such file`;
  const text = read(file);
  if (ref.anchor !== undefined && !anchorsOf(text).has(ref.anchor)) return `${ref.from}: ${what}: ${file} has no such heading`;
  if (ref.title !== undefined) {
    const wanted = ref.title.toLowerCase();
    if (!headings(text).some((h) => plainHeading(h).toLowerCase() === wanted)) return `${ref.from}: ${what}: ${file} has no such heading`;
  }
  return undefined;
}

const SOURCES = [...filesUnder('src', /\.ts$/), ...filesUnder('docs', /\.md$/), 'README.md'];
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

describe('references to sections of the documentation', () => {
  const references = SOURCES.flatMap((file) => referencesIn(file, read(file)));

  it('finds the references there are (the check is not vacuous)', () => {
    expect(references.filter((r) => r.anchor !== undefined).length).toBeGreaterThan(20);
    expect(references.filter((r) => r.title !== undefined).length).toBeGreaterThan(10);
    expect(references.some((r) => r.from.startsWith('src/') && r.file === 'README.md')).toBe(true);
  });

  it('each names a file that exists and a heading it has', () => {
    expect(references.map((r) => broken(r, read)).filter((why) => why !== undefined)).toEqual([]);
  });

  it('reads anchors and titles as GitHub and a reader do', () => {
    const doc = '# Top\n## How `apply` decides\n## Tokens, and privileges\n```\n# not a heading\n```\n## Top\n';
    expect([...anchorsOf(doc)]).toEqual(['top', 'how-apply-decides', 'tokens-and-privileges', 'top-1']);
    const refs = referencesIn(
      'src/x.ts',
      '/**\n * see docs/design.md#the-spec-repository and README "How apply\n * decides", or\n * (docs/github-app.md,\n * "Text limits")\n */',
    );
    expect(refs).toEqual([
      { from: 'src/x.ts', file: 'docs/design.md', anchor: 'the-spec-repository' },
      { from: 'src/x.ts', file: 'README.md', title: 'How apply decides' },
      { from: 'src/x.ts', file: 'docs/github-app.md', title: 'Text limits' },
    ]);
  });

  it.each([
    ['an anchor no heading has', { from: 'src/x.ts', file: 'docs/design.md', anchor: 'no-such-section' }, 'no such heading'],
    ['a title no heading has', { from: 'src/x.ts', file: 'README.md', title: 'No such section' }, 'no such heading'],
    ['a file that does not exist', { from: 'src/x.ts', file: 'docs/no-such-file.md', anchor: 'x' }, 'no such file'],
    ['a same-file anchor no heading has', { from: 'docs/design.md', file: '', anchor: 'nowhere' }, 'no such heading'],
  ])('fails on %s', (_what, ref: Reference, why) => {
    expect(broken(ref, read)).toContain(why);
  });

  it('holds for a reference that is right (the failures above are not everything failing)', () => {
    expect(broken({ from: 'src/x.ts', file: 'docs/design.md', anchor: 'the-picture' }, read)).toBeUndefined();
    expect(broken({ from: 'docs/github-app.md', file: 'design.md', anchor: 'the-picture' }, read)).toBeUndefined();
  });
});

/** The folders the tree drawing under "The picture" in docs/design.md shows, as `src/…` paths. */
function picturedFolders(design: string): string[] {
  const section = design.split(/^## The picture$/m)[1]?.split(/^## /m)[0] ?? '';
  const drawing = /^```text\n([\s\S]*?)^```$/m.exec(section)?.[1] ?? '';
  const folders: string[] = [];
  const stack: string[] = [];
  for (const line of drawing.split('\n')) {
    const m = /^([│├└─\s]*?)([\w.-]+)\/(?:\s|$)/u.exec(line);
    if (!m) continue;
    // Each level of the drawing is four columns wide: `│   ├── name/`.
    const depth = [...(m[1] ?? '')].length / 4;
    stack.length = depth;
    stack.push(m[2] ?? '');
    folders.push(stack.join('/'));
  }
  return folders;
}

function foldersUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      const path = `${dir}/${entry.name}`;
      return [path, ...foldersUnder(path)];
    });
}

/** What is wrong between the folders there are and the picture: a folder missing from it, or one it shows that is not there. */
function pictureProblems(folders: readonly string[], pictured: readonly string[]): string[] {
  const shown = new Set(pictured);
  const there = new Set(folders);
  return [
    ...folders.filter((f) => !shown.has(f)).map((f) => `${f}: not in the picture of docs/design.md`),
    ...pictured.filter((f) => !there.has(f)).map((f) => `${f}: in the picture, but there is no such folder`),
  ];
}

describe('the picture in docs/design.md', () => {
  const design = read('docs/design.md');

  it('reads the drawing as paths (the check is not vacuous)', () => {
    const pictured = picturedFolders(design);
    expect(pictured[0]).toBe('src');
    expect(pictured).toContain('src/queue/apply');
    expect(pictured).toContain('src/pve/sim/kinds/vm');
    expect(pictured.length).toBeGreaterThan(25);
  });

  it('shows every folder under src/, and none that is not there', () => {
    expect(pictureProblems(['src', ...foldersUnder('src')], picturedFolders(design))).toEqual([]);
  });

  it('fails when a folder is missing from the picture', () => {
    const without = design.replace(/^.*── config-update\/.*\n/m, '');
    expect(without).not.toBe(design);
    expect(pictureProblems(['src', ...foldersUnder('src')], picturedFolders(without))).toEqual([
      'src/pve/sim/config-update: not in the picture of docs/design.md',
    ]);
  });

  it('fails when the picture shows a folder that is not there', () => {
    expect(pictureProblems(['src'], ['src', 'src/gone'])).toEqual(['src/gone: in the picture, but there is no such folder']);
  });
});
