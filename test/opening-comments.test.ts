/**
 * Every source file opens with a comment that says what the module is for (and what it is not):
 * a block comment at the top, or one right after the imports that stands apart from the first
 * declaration (a blank line between them). A doc comment glued to the first declaration documents
 * that declaration, not the file, and does not count.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Whether `source` opens with a comment about the module. */
function hasOpeningComment(source: string): boolean {
  const text = source.replace(/^#!.*\n/, '');
  if (/^\s*\/\*/.test(text)) return true;
  const file = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true);
  const first = file.statements.find((statement) => !ts.isImportDeclaration(statement));
  if (!first) return false;
  const comments = ts.getLeadingCommentRanges(text, first.pos) ?? [];
  return comments.some((comment, i) => {
    if (comment.kind !== ts.SyntaxKind.MultiLineCommentTrivia) return false;
    const next = comments[i + 1]?.pos ?? first.getStart(file);
    return /\n[ \t]*\n/.test(text.slice(comment.end, next));
  });
}

describe('opening comments', () => {
  const files = sourceFiles('src');
  const missing = files.filter((file) => !hasOpeningComment(readFileSync(join(ROOT, file), 'utf8')));

  it('reads every source file (the check is not vacuous)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain('src/engine/apply-guest.ts');
  });

  it('every source file has one', () => {
    expect(missing).toEqual([]);
  });

  it.each([
    ['a comment at the top', '/** What this is for. */\nimport { x } from "./x.js";\nexport const y = x;\n', true],
    ['a comment after a shebang', '#!/usr/bin/env node\n/** The executable. */\nmain();\n', true],
    [
      'a comment after the imports, apart from the first declaration',
      'import { x } from "./x.js";\n\n/** The module. */\n\n/** y. */\nexport const y = x;\n',
      true,
    ],
    ['no comment at all', 'import { x } from "./x.js";\n\nexport const y = x;\n', false],
    ['only the first declaration’s doc comment', 'import { x } from "./x.js";\n\n/** y. */\nexport const y = x;\n', false],
    ['only a line comment', '// The module.\nexport const y = 1;\n', false],
  ])('tells %s', (_what, source, expected) => {
    expect(hasOpeningComment(source)).toBe(expected);
  });
});
