/**
 * `pve-gitops import`: writes spec files for the live guests of the configured clusters that the
 * specs do not describe yet, each adopting its guest, so the next plan shows only the adoptions.
 * It reads as `drift` does (read token, one listing and one read per guest) and writes nothing to
 * a cluster; turning reads into documents is `src/core/import/`.
 */
import { existsSync } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { SpecSet } from '../core/model.js';
import { type ImportGrouping, type ImportResult, importFiles } from '../core/import/import-files.js';
import { readForImport } from '../core/import/read-estate.js';
import { type ImportFilter, filterNeedsPools, parseVmidRange } from '../core/import/select-guests.js';
import { plural } from '../core/render/plan-labels.js';
import { parseFlags, UsageError } from './args.js';
import { connect, loadSpecDir, note, progress, reportInvalidSpecs } from './shared.js';
import type { Command, CommandIO } from './types.js';

const GROUPINGS: readonly ImportGrouping[] = ['guest', 'cluster', 'pool'];

/** The specs already there: none when the folder does not exist yet (the usual first import). */
async function existingSpecs(dir: string, io: CommandIO, explicit: boolean): Promise<SpecSet | undefined> {
  const path = resolve(io.cwd, dir);
  if (!existsSync(path) && !explicit) return { clusters: [], guests: [] };
  const { specs, errorLines } = await loadSpecDir(dir, io);
  if (reportInvalidSpecs(io, errorLines, 'nothing was imported (the specs must be valid to tell which guests they describe)'))
    return undefined;
  return specs;
}

/** The clusters to read: every configured connection, or those `--cluster` names. */
async function clustersToRead(io: CommandIO, file: string | undefined, wanted: string | undefined): Promise<string[]> {
  const { configuredConnections } = await import('../connections/connect.js');
  const { ClusterConfigError } = await import('../connections/cluster-connections.js');
  let configured: string[];
  try {
    configured = (await configuredConnections({ env: io.env, cwd: io.cwd, file })).map((c) => c.name);
  } catch (err) {
    if (err instanceof ClusterConfigError) throw new UsageError(err.message);
    throw err;
  }
  if (wanted === undefined) {
    if (configured.length === 0)
      throw new UsageError(
        'no cluster connection is configured: set PVE_CLUSTER_<NAME>_URL and _TOKEN (and _READ_TOKEN), or name a connections file with --clusters',
      );
    return configured;
  }
  const names = [...new Set(wanted.split(',').map((n) => n.trim().toLowerCase()))].filter((n) => n !== '').sort();
  const unknown = names.filter((n) => !configured.includes(n));
  if (unknown.length > 0)
    throw new UsageError(`no connection configured for ${unknown.join(', ')} (configured: ${configured.join(', ') || 'none'})`);
  return names;
}

/** The report on stdout: what was written, skipped and refused, with counts. */
/** What a file without guests holds, by the name `importFiles` gives it. */
function otherDocuments(path: string): string {
  if (path.startsWith('backup-jobs-')) return 'the backup jobs (kind: BackupJob)';
  if (path.startsWith('pools-')) return 'the pools (kind: Pool)';
  return 'the Cluster document';
}

function report(io: CommandIO, result: ImportResult, out: string): void {
  const lines: string[] = [];
  for (const file of result.files) {
    const guests = result.imported.filter((g) => g.path === file.path);
    const what =
      guests.length === 0
        ? otherDocuments(file.path)
        : guests.length === 1
          ? `${guests[0]?.name} (VMID ${guests[0]?.vmid})${guests[0]?.remarks.length ? ` — ${guests[0].remarks.join(', ')}` : ''}`
          : plural(guests.length, 'guest');
    lines.push(`wrote ${join(out, file.path)}: ${what}`);
  }
  for (const s of result.skipped) lines.push(`skipped ${s.cluster} ${s.vmid}${s.name ? ` ${s.name}` : ''}: ${s.why}`);
  for (const r of result.refused) lines.push(`refused ${r.cluster} ${r.vmid}${r.name ? ` ${r.name}` : ''}: ${r.why}`);
  for (const e of result.clusterErrors) lines.push(`error ${e.cluster}: could not be listed: ${e.message}`);
  for (const n of result.clusterNotes) lines.push(`note ${n.cluster}: ${n.message}`);
  lines.push(
    `${plural(result.imported.length, 'guest')} imported into ${plural(result.files.length, 'file')}, ${result.skipped.length} skipped (already in the specs), ${result.refused.length} refused`,
  );
  if (result.imported.length > 0) lines.push(`next: pve-gitops plan --specs ${out}   (shows each guest's adoption, nothing else)`);
  io.stdout.write(`${lines.join('\n')}\n`);
}

export const importCommand: Command = {
  name: 'import',
  summary: 'write spec files adopting the live guests the specs do not describe yet; exit 0 done, 2 some refused, 1 error',
  usage:
    'pve-gitops import --out DIR [--specs DIR] [--cluster NAME[,NAME]] [--vmid N|LOW-HIGH] [--pool POOL] [--tag TAG] [--node NODE] [--group guest|cluster|pool] [--no-firewall] [--force] [--clusters FILE]',
  async run(args, io) {
    const flags = parseFlags(args, {
      out: { type: 'string' },
      specs: { type: 'string' },
      cluster: { type: 'string' },
      vmid: { type: 'string' },
      pool: { type: 'string' },
      tag: { type: 'string' },
      node: { type: 'string' },
      group: { type: 'string', default: 'guest' },
      force: { type: 'boolean', default: false },
      'no-firewall': { type: 'boolean', default: false },
      clusters: { type: 'string' },
    });
    if (flags.out === undefined) throw new UsageError('--out DIR is required: the folder the spec files are written to');
    const grouping = flags.group as ImportGrouping;
    if (!GROUPINGS.includes(grouping)) throw new UsageError(`--group must be one of ${GROUPINGS.join(', ')}, got '${flags.group}'`);
    const filter: ImportFilter = {};
    if (flags.vmid !== undefined) {
      const range = parseVmidRange(flags.vmid);
      if (!range) throw new UsageError(`--vmid must be a VMID or a range LOW-HIGH, got '${flags.vmid}'`);
      filter.vmids = range;
    }
    if (flags.pool !== undefined) filter.pool = flags.pool;
    if (flags.tag !== undefined) filter.tag = flags.tag;
    if (flags.node !== undefined) filter.node = flags.node;
    const outDir = resolve(io.cwd, flags.out);
    if (existsSync(outDir) && !(await stat(outDir)).isDirectory()) throw new UsageError(`--out ${flags.out} is not a directory`);

    const specs = await existingSpecs(flags.specs ?? flags.out, io, flags.specs !== undefined);
    if (!specs) return 1;
    const names = await clustersToRead(io, flags.clusters, flags.cluster);
    const open = await connect(names, 'read', io, flags.clusters);
    let result: ImportResult;
    try {
      const pools = filterNeedsPools(filter) || grouping === 'pool';
      // Backup jobs belong to the cluster, not to the guests a filter picks: only a whole import takes them.
      const backupJobs = Object.keys(filter).length === 0;
      // Each guest's firewall file costs four reads more (five with IPsets): --no-firewall leaves them out.
      const firewalls = flags['no-firewall'] !== true;
      const reads = await Promise.all(
        names.map((name) => readForImport(open.clusters[name]!, filter, specs, { pools, backupJobs, firewalls, onProgress: progress(io) })),
      );
      result = importFiles(reads, specs, grouping);
    } finally {
      await open.close();
    }

    // Nothing half-done: every file is checked before the first is written.
    const present = result.files.filter((f) => existsSync(join(outDir, f.path)));
    if (present.length > 0 && !flags.force) {
      for (const f of present) io.stdout.write(`refused ${join(flags.out, f.path)}: the file exists (--force overwrites it)\n`);
      note(io, `nothing was written: ${plural(present.length, 'file')} would be overwritten`);
      return 1;
    }
    for (const file of result.files) {
      const path = join(outDir, file.path);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, file.text, { flag: flags.force ? 'w' : 'wx' });
    }
    report(io, result, flags.out);
    if (result.clusterErrors.length > 0) return 1;
    return result.refused.length > 0 ? 2 : 0;
  },
};
