import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSpecDir, SpecDirError } from './read-spec-dir.js';

describe('readSpecDir', () => {
  let root: string;
  let outside: string;

  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'spec-dir-'));
    outside = await mkdtemp(path.join(tmpdir(), 'spec-outside-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  const write = async (rel: string, text: string): Promise<void> => {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), text);
  };

  it('reads YAML files recursively with sorted, /-separated relative paths', async () => {
    await write('prod/web.yaml', 'b');
    await write('clusters.yaml', 'a');
    await write('lab/deep/x.yml', 'c');
    await write('Lab2/UPPER.YAML', 'd');
    await write('lab/notes.md', 'not yaml');
    await write('lab/web.yaml.bak', 'not yaml');
    expect(await readSpecDir(root)).toEqual([
      { path: 'Lab2/UPPER.YAML', text: 'd' },
      { path: 'clusters.yaml', text: 'a' },
      { path: 'lab/deep/x.yml', text: 'c' },
      { path: 'prod/web.yaml', text: 'b' },
    ]);
  });

  it('skips hidden entries and node_modules', async () => {
    await write('.github/workflows/ci.yml', 'x');
    await write('.pre-commit-config.yaml', 'x');
    await write('node_modules/pkg/a.yaml', 'x');
    await write('lab/node_modules/b.yaml', 'x');
    await write('ok.yaml', 'y');
    expect((await readSpecDir(root)).map((f) => f.path)).toEqual(['ok.yaml']);
  });

  it('reads linked files but does not follow linked directories', async () => {
    await writeFile(path.join(outside, 'linked.yaml'), 'from a link');
    await mkdir(path.join(outside, 'dir'));
    await writeFile(path.join(outside, 'dir', 'inner.yaml'), 'x');
    await symlink(path.join(outside, 'linked.yaml'), path.join(root, 'link.yaml'));
    await symlink(path.join(outside, 'dir'), path.join(root, 'linked-dir'));
    await symlink(path.join(outside, 'missing.yaml'), path.join(root, 'dangling.yaml'));
    expect(await readSpecDir(root)).toEqual([{ path: 'link.yaml', text: 'from a link' }]);
  });

  it('returns nothing for an empty directory', async () => {
    expect(await readSpecDir(root)).toEqual([]);
  });

  it('refuses a missing root or a file instead of reporting an empty estate', async () => {
    await expect(readSpecDir(path.join(root, 'nope'))).rejects.toThrow(SpecDirError);
    await expect(readSpecDir(path.join(root, 'nope'))).rejects.toThrow(/no such directory/);
    await write('file.yaml', 'x');
    await expect(readSpecDir(path.join(root, 'file.yaml'))).rejects.toThrow(/not a directory/);
  });
});
