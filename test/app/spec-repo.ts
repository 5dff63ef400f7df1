/**
 * Spec repositories for App tests: file maps turned into tarballs shaped like GitHub's
 * (`GET /repos/{o}/{r}/tarball/{sha}`: gzip, one `<owner>-<repo>-<sha7>/` top folder), with links
 * when a test needs a hostile one. Plus small specs to build them from.
 */
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';

/** A file's text, or a link entry. */
export type RepoEntry = string | { symlink: string } | { hardlink: string };

/** A repository at one commit: path → entry. */
export type RepoFiles = Record<string, RepoEntry>;

/** A fresh random commit SHA. */
export function newSha(): string {
  return randomBytes(20).toString('hex');
}

/** The gzipped tarball GitHub would serve for `files` at `sha`. */
export async function tarball(files: RepoFiles, options: { owner?: string; name?: string; sha?: string } = {}): Promise<Buffer> {
  const top = `${options.owner ?? 'acme'}-${options.name ?? 'estate'}-${(options.sha ?? newSha()).slice(0, 7)}`;
  const archive = pack();
  const chunks: Buffer[] = [];
  archive.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
  const ended = new Promise<void>((resolve, reject) => {
    archive.on('end', resolve);
    archive.on('error', reject);
  });
  archive.entry({ name: `${top}/`, type: 'directory' });
  const dirs = new Set<string>();
  for (const path of Object.keys(files).sort()) {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (!dirs.has(dir)) {
        dirs.add(dir);
        archive.entry({ name: `${top}/${dir}/`, type: 'directory' });
      }
    }
    const entry = files[path]!;
    if (typeof entry === 'string') archive.entry({ name: `${top}/${path}`, type: 'file' }, entry);
    else if ('symlink' in entry) archive.entry({ name: `${top}/${path}`, type: 'symlink', linkname: entry.symlink });
    else archive.entry({ name: `${top}/${path}`, type: 'link', linkname: `${top}/${entry.hardlink}` });
  }
  archive.finalize();
  await ended;
  return gzipSync(Buffer.concat(chunks));
}

/** A Cluster document for the `lab` simulator (nodes pve-01, pve-02). */
export function clusterDoc(name = 'lab', extra = ''): string {
  return [
    `kind: Cluster`,
    `name: ${name}`,
    'vmids: { lower: 100000, upper: 199999 }',
    'ownerTag: pve-gitops',
    'nodes: [pve-01, pve-02]',
    extra,
  ]
    .filter(Boolean)
    .join('\n')
    .concat('\n');
}

/** A small VM spec on `lab`. */
export function vmDoc(name: string, vmid: number, config: Record<string, string | number> = {}, cluster = 'lab'): string {
  const lines = [`kind: VM`, `name: ${name}`, `cluster: ${cluster}`, 'node: pve-01', `vmid: ${vmid}`, 'config:'];
  for (const [key, value] of Object.entries({ memory: 2048, cores: 2, net0: 'virtio,bridge=vmbr0', ...config }))
    lines.push(`  ${key}: ${value}`);
  return `${lines.join('\n')}\n`;
}

/** A small container spec on `lab` (its template named, as a create would need). */
export function containerDoc(name: string, vmid: number, config: Record<string, string | number> = {}): string {
  const lines = [`kind: Container`, `name: ${name}`, 'cluster: lab', 'node: pve-01', `vmid: ${vmid}`, 'create:'];
  lines.push('  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', 'config:');
  for (const [key, value] of Object.entries({ memory: 512, ...config })) lines.push(`  ${key}: ${value}`);
  return `${lines.join('\n')}\n`;
}
