import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatSpecError } from '../core/spec/errors.js';
import type { SpecFileInput } from '../core/spec/spec-text.js';
import { collectSpecDir, loadSpecDir, readSpecDir, SpecDirError } from './read-spec-dir.js';

const text = (file: SpecFileInput): { path: string; text: string } => ({
  path: file.path,
  text: 'text' in file ? file.text : Buffer.from(file.bytes).toString('utf8'),
});

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100000, upper: 199999 }\nnodes: [pve-01]\n';
const vm = (name: string): string => `kind: VM\nname: ${name}\ncluster: lab\nnode: pve-01\n`;

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

  const write = async (rel: string, content: string | Uint8Array): Promise<void> => {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), content);
  };

  it('reads YAML files recursively, decoded strictly as UTF-8, with sorted, /-separated relative paths', async () => {
    await write('prod/web.yaml', 'b');
    await write('clusters.yaml', '\ufeffa');
    await write('lab/deep/x.yml', 'c');
    await write('Lab2/UPPER.YAML', 'd');
    await write('lab/latin1.yaml', new Uint8Array([0x6e, 0x61, 0x6d, 0x65, 0x3a, 0x20, 0xe9]));
    await write('lab/notes.md', 'not yaml');
    await write('lab/web.yaml.bak', 'not yaml');
    const files = await readSpecDir(root);
    expect(files.map(text)).toEqual([
      { path: 'Lab2/UPPER.YAML', text: 'd' },
      { path: 'clusters.yaml', text: 'a' },
      { path: 'lab/deep/x.yml', text: 'c' },
      { path: 'lab/latin1.yaml', text: 'name: \ufffd' },
      { path: 'prod/web.yaml', text: 'b' },
    ]);
    // A file that is not UTF-8 keeps its bytes: loading reports where, never a replaced character.
    expect(files.map((file) => [file.path, 'bytes' in file])).toEqual([
      ['Lab2/UPPER.YAML', false],
      ['clusters.yaml', false],
      ['lab/deep/x.yml', false],
      ['lab/latin1.yaml', true],
      ['prod/web.yaml', false],
    ]);
    const loaded = await loadSpecDir(root);
    expect(loaded.errors.map(formatSpecError)).toContain('lab/latin1.yaml:1:7: not valid UTF-8 at byte 6 (0xe9); spec files must be UTF-8');
  });

  it('skips hidden entries and node_modules', async () => {
    await write('.github/workflows/ci.yml', 'x');
    await write('.pre-commit-config.yaml', 'x');
    await write('node_modules/pkg/a.yaml', 'x');
    await write('lab/node_modules/b.yaml', 'x');
    await write('ok.yaml', 'y');
    expect((await readSpecDir(root)).map((f) => f.path)).toEqual(['ok.yaml']);
  });

  it('reads a link to a file inside the spec root, and does not follow linked directories', async () => {
    await write('shared/base.yaml', 'inside');
    await symlink(path.join(root, 'shared', 'base.yaml'), path.join(root, 'link.yaml'));
    await symlink('shared/base.yaml', path.join(root, 'relative.yaml'));
    await mkdir(path.join(outside, 'dir'));
    await writeFile(path.join(outside, 'dir', 'inner.yaml'), 'x');
    await symlink(path.join(outside, 'dir'), path.join(root, 'linked-dir'));
    await symlink(path.join(root, 'shared'), path.join(root, 'loop'));
    expect((await readSpecDir(root)).map(text)).toEqual([
      { path: 'link.yaml', text: 'inside' },
      { path: 'relative.yaml', text: 'inside' },
      { path: 'shared/base.yaml', text: 'inside' },
    ]);
  });

  it('never opens a link that leads outside the spec root, directly or through another link, and says so', async () => {
    // Stands for /etc/shadow or /proc/self/environ (which holds the tokens).
    const secret = path.join(outside, 'shadow');
    await writeFile(secret, 'root:$6$SECRET-HASH:19000:0:99999:7:::\n');
    await write('ok.yaml', `${CLUSTER}---\n${vm('web-01')}`);
    await symlink(secret, path.join(root, 'shadow.yaml'));
    await symlink(path.join(outside, 'shadow'), path.join(outside, 'hop.yaml'));
    await symlink(path.join(outside, 'hop.yaml'), path.join(root, 'hop.yaml'));
    await symlink(path.join(root, 'missing.yaml.txt'), path.join(root, 'dangling.yaml'));

    const contents = await collectSpecDir(root, { label: 'specs' });
    expect(contents.files.map((f) => f.path)).toEqual(['ok.yaml']);
    expect(contents.errors.map(formatSpecError)).toEqual([
      'dangling.yaml: a symbolic link to nothing (its target does not exist)',
      'hop.yaml: a symbolic link to a file outside the spec root is not read; copy the file into the repository',
      'shadow.yaml: a symbolic link to a file outside the spec root is not read; copy the file into the repository',
    ]);
    await expect(readSpecDir(root)).rejects.toThrow(
      /dangling\.yaml: a symbolic link to nothing \(its target does not exist\) \(and 2 more\)/,
    );

    const loaded = await loadSpecDir(root, { label: 'specs', workers: 0 });
    const lines = loaded.errors.map(formatSpecError);
    expect(lines).toContain('shadow.yaml: a symbolic link to a file outside the spec root is not read; copy the file into the repository');
    expect(JSON.stringify(loaded)).not.toContain('SECRET-HASH');
  });

  it('refuses a repository with more files than allowed, before reading any', async () => {
    for (let i = 0; i < 4; i++) await write(`g-${i}.yaml`, vm(`g-${i}`));
    const loaded = await loadSpecDir(root, { label: 'specs', limits: { maxFiles: 3 } });
    expect(loaded.errors.map(formatSpecError)).toEqual(['specs: more than 3 spec files; the limit is 3 (PVE_GITOPS_MAX_FILES)']);
    expect(loaded.specs.guests).toEqual([]);
    expect((await loadSpecDir(root, { limits: { maxFiles: 4 } })).errors.map((e) => e.message).join('\n')).not.toMatch(/spec files/);
  });

  it('refuses a repository over the total bytes allowed, and a file over the per-file limit alone', async () => {
    await write('clusters.yaml', CLUSTER);
    await write('small.yaml', vm('small'));
    await write('big.yaml', `${vm('big')}description: ${'x'.repeat(3000)}\n`);
    const total = await loadSpecDir(root, { label: 'specs', limits: { maxTotalBytes: 1024 } });
    expect(total.errors.map(formatSpecError)).toEqual([
      'specs: more than 1 KiB of spec files; the limit is 1 KiB (PVE_GITOPS_MAX_TOTAL_BYTES)',
    ]);

    const perFile = await loadSpecDir(root, { label: 'specs', limits: { maxFileBytes: 2048 } });
    expect(perFile.errors.map(formatSpecError)).toEqual([
      'big.yaml: 3.0 KiB is more than a spec file may hold; the limit is 2 KiB (PVE_GITOPS_MAX_FILE_BYTES)',
    ]);
    // The other files were loaded (and checked): only the big one is refused.
    expect(perFile.specs.guests.map((g) => g.name)).toEqual(['small']);
  });

  it('reports a file that is not UTF-8 at the offending byte, instead of replacing it', async () => {
    await write('clusters.yaml', CLUSTER);
    await write(
      'latin1.yaml',
      Buffer.concat([Buffer.from(`${vm('web')}config:\n  description: caf`), Buffer.from([0xe9]), Buffer.from('\n')]),
    );
    const loaded = await loadSpecDir(root, { workers: 0 });
    expect(loaded.errors.map(formatSpecError)).toEqual(['latin1.yaml:6:19: not valid UTF-8 at byte 71 (0xe9); spec files must be UTF-8']);
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

  it('loads 2,500 files in a process that may hold only 256 open at once (no EMFILE)', async () => {
    await write('clusters.yaml', CLUSTER);
    await Promise.all(
      Array.from({ length: 2_500 }, (_, i) => writeFile(path.join(root, `vm-${String(i).padStart(4, '0')}.yaml`), vm(`vm-${i}`))),
    );
    const module = fileURLToPath(new URL('./read-spec-dir.ts', import.meta.url));
    const script = `import { loadSpecDir } from ${JSON.stringify(module)};
const loaded = await loadSpecDir(${JSON.stringify(root)}, { workers: 0 });
console.log(JSON.stringify({ guests: loaded.specs.guests.length, errors: loaded.errors.map((e) => e.message).slice(0, 3) }));`;
    const child = spawn('sh', ['-c', 'ulimit -n 256 && exec "$0" --import tsx --input-type=module -e "$1"', process.execPath, script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(stdout)).toEqual({ guests: 2_500, errors: [] });
  }, 60_000);
});
