import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { pack } from 'tar-stream';
import { ArchiveError, DEFAULT_ARCHIVE_LIMITS, readTarball, repoPath } from './read-archive.js';
import { baseSpecFiles, headSpecFiles, specFileFilter } from './spec-repo.js';

type Entry = { name: string; type?: 'file' | 'symlink' | 'link' | 'directory'; text?: string; linkname?: string };

async function tarOf(entries: Entry[]): Promise<Buffer> {
  const archive = pack();
  const chunks: Buffer[] = [];
  archive.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
  const ended = new Promise<void>((resolve) => archive.on('end', () => resolve()));
  for (const e of entries) {
    if (e.type === 'symlink' || e.type === 'link') archive.entry({ name: e.name, type: e.type, linkname: e.linkname ?? '' });
    else if (e.type === 'directory') archive.entry({ name: e.name, type: 'directory' });
    else archive.entry({ name: e.name }, e.text ?? '');
  }
  archive.finalize();
  await ended;
  return Buffer.concat(chunks);
}

const read = async (tar: Buffer, keep = specFileFilter(undefined), limits = DEFAULT_ARCHIVE_LIMITS) =>
  readTarball(Readable.from([gzipSync(tar)]), keep, limits);

describe('readTarball', () => {
  it('keeps the wanted files by repository path (top folder removed) and lists links without following them', async () => {
    const tar = await tarOf([
      { name: 'acme-estate-abc1234/', type: 'directory' },
      { name: 'acme-estate-abc1234/lab/web.yaml', text: 'kind: VM\n' },
      { name: 'acme-estate-abc1234/README.md', text: '# hi' },
      { name: 'acme-estate-abc1234/.github/pve-gitops.yml', text: 'specs: lab\n' },
      { name: 'acme-estate-abc1234/.hidden/x.yaml', text: 'no' },
      { name: 'acme-estate-abc1234/lab/link.yaml', type: 'symlink', linkname: '/etc/passwd' },
    ]);
    const contents = await read(tar);
    expect([...contents.files.keys()].sort()).toEqual(['.github/pve-gitops.yml', 'lab/web.yaml']);
    expect(contents.links).toEqual([{ path: 'lab/link.yaml', kind: 'symlink', target: '/etc/passwd' }]);
  });

  it.each([
    ['compressed bytes', { maxBytes: 100 }, /larger than 100 bytes/],
    ['unpacked bytes (a gzip bomb)', { maxUnpackedBytes: 50_000 }, /unpacks to more than 50000 bytes/],
    ['entries', { maxEntries: 5 }, /more than 5 entries/],
    ['one kept file', { maxFileBytes: 1000 }, /big\.yaml is 100000 bytes; spec files may be at most 1000 bytes/],
  ])('stops at the bound on %s with an ArchiveError', async (_, limits, message) => {
    const entries: Entry[] = [{ name: 'top/big.yaml', text: 'a'.repeat(100_000) }];
    for (let i = 0; i < 10; i++) entries.push({ name: `top/f${i}.txt`, text: 'x' });
    const error = await read(await tarOf(entries), specFileFilter(undefined), { ...DEFAULT_ARCHIVE_LIMITS, ...limits }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ArchiveError);
    expect((error as Error).message).toMatch(message);
  });

  it('refuses what is not a gzipped tarball', async () => {
    await expect(readTarball(Readable.from([Buffer.from('not gzip')]), () => true)).rejects.toThrow(/the archive could not be read/);
  });

  it.each([
    ['top/../../etc/passwd', /points outside the repository/],
    ['top//etc/passwd', /points outside the repository/],
    ['/abs.yaml', /points outside the repository/],
    ['../abs.yaml', /points outside the repository/],
  ])('refuses an entry path %s that climbs out', (name, message) => {
    expect(() => repoPath(name)).toThrow(message);
  });

  it('refuses an archive with an absolute entry instead of reading it as a file of the repository', async () => {
    const tar = await tarOf([
      { name: 'acme-estate-abc1234/lab/web.yaml', text: 'kind: VM\n' },
      { name: '/abs.yaml', text: 'kind: VM\n' },
    ]);
    const error = await read(tar).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ArchiveError);
    expect((error as ArchiveError).message).toBe("archive entry '/abs.yaml' points outside the repository");
    expect((error as ArchiveError).path).toBe('/abs.yaml');
  });
});

describe('spec files of a commit', () => {
  const contents = (files: Record<string, string>, links: { path: string; kind: 'symlink' | 'link'; target: string }[] = []) => ({
    files: new Map(Object.entries(files)),
    links,
  });

  it('takes the spec root from the base config and keeps only spec files under it, relative and sorted', () => {
    const base = baseSpecFiles(
      contents({
        '.github/pve-gitops.yml': 'specs: ./estate/\n',
        'estate/b.yaml': 'b',
        'estate/a/x.yml': 'x',
        'other/c.yaml': 'c',
        'estate/node_modules/m.yaml': 'm',
      }),
    );
    expect(base).toEqual({
      config: { specs: './estate/' },
      specRoot: 'estate',
      files: [
        { path: 'a/x.yml', text: 'x' },
        { path: 'b.yaml', text: 'b' },
      ],
    });
  });

  it.each([
    ['an unknown key', 'spec: x\n', /\.github\/pve-gitops\.yml: unknown key spec\b/],
    ['a path that climbs out', 'specs: ../elsewhere\n', /specs: must be a path inside the repository/],
    ['an absolute path', 'specs: /etc\n', /specs: must be a path inside the repository/],
    ['invalid YAML', 'specs: [\n', /not valid YAML/],
  ])('refuses a base config with %s', (_, text, message) => {
    expect(() => baseSpecFiles(contents({ '.github/pve-gitops.yml': text }))).toThrow(message);
  });

  it('refuses a link named like a spec under the root, or at the config path, and ignores other links', () => {
    expect(() => headSpecFiles(contents({}, [{ path: 'lab/x.yaml', kind: 'link', target: 'top/y.yaml' }]), 'lab')).toThrow(
      'lab/x.yaml is a hard link (to top/y.yaml): links are never followed in the spec repository; commit the file itself',
    );
    expect(() => baseSpecFiles(contents({}, [{ path: '.github/pve-gitops.yml', kind: 'symlink', target: '/x' }]))).toThrow(
      /is a symbolic link/,
    );
    expect(
      headSpecFiles(
        contents({}, [
          { path: 'lab/docs', kind: 'symlink', target: '/etc' },
          { path: 'x.yaml', kind: 'symlink', target: 'y' },
        ]),
        'lab',
      ).files,
    ).toEqual([]);
  });
});
