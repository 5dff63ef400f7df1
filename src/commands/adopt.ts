/**
 * `pve-gitops adopt`: drift taken into git locally. Reads the clusters as `drift` does (read
 * tokens only), then writes the live values of the findings — all, or the guests and keys named —
 * into the spec files, each document edited in place with its comments and layout kept
 * (`src/core/adopt`). With `--dry-run` it only says what it would write. Afterwards `plan` shows
 * no change for what was adopted.
 */
import { rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { clusterNames } from '../connections/connect.js';
import { adoptDrift, AdoptionError } from '../core/adopt/adopt-drift.js';
import { renderAdoptionText } from '../core/adopt/render-adoption.js';
import { buildDriftReport } from '../core/drift/drift-report.js';
import type { Plan } from '../core/model.js';
import type { SpecFile } from '../core/spec/load-specs.js';
import { observeDrift } from '../engine/run-plan.js';
import { collectSpecDir } from '../spec-files/read-spec-dir.js';
import { parseFlags } from './args.js';
import { connect, loadSpecDir, note, progress, reportInvalidSpecs } from './shared.js';
import type { Command } from './types.js';

/** Writes each file through a temporary one beside it, so a file is never left half-written. */
async function writeFiles(root: string, files: readonly SpecFile[]): Promise<void> {
  for (const file of files) {
    const path = join(root, file.path);
    const temporary = `${path}.pve-gitops-adopt`;
    await writeFile(temporary, file.text, 'utf8');
    await rename(temporary, path);
  }
}

export const adoptCommand: Command = {
  name: 'adopt',
  summary: 'write the live values of drifted keys into the spec files (comments kept); exit 0 done or nothing to do, 1 error',
  usage: 'pve-gitops adopt [--specs DIR] [--guest CLUSTER/NAME …] [--key KEY …] [--dry-run] [--clusters FILE]',
  async run(args, io) {
    const flags = parseFlags(args, {
      specs: { type: 'string', default: '.' },
      guest: { type: 'string', multiple: true, default: [] },
      key: { type: 'string', multiple: true, default: [] },
      'dry-run': { type: 'boolean', default: false },
      clusters: { type: 'string' },
    });
    const dryRun = flags['dry-run'] === true;
    const { specs, errorLines } = await loadSpecDir(flags.specs, io);
    if (reportInvalidSpecs(io, errorLines, 'nothing was adopted')) return 1;
    const root = resolve(io.cwd, flags.specs);
    const contents = await collectSpecDir(root, { label: flags.specs });
    const files = contents.files.flatMap((f) => ('text' in f ? [{ path: f.path, text: f.text }] : []));
    const open = await connect(clusterNames(specs), 'read', io, flags.clusters);
    let report: ReturnType<typeof buildDriftReport>;
    let items: Plan['objects'] = [];
    try {
      const { plan, observed } = await observeDrift({
        head: specs,
        readers: open.clusters,
        access: open.access,
        ref: flags.specs,
        onProgress: progress(io),
      });
      items = plan.objects;
      report = buildDriftReport({ plan, observed, specs, now: new Date(), ref: flags.specs });
    } finally {
      await open.close();
    }
    const unread = report.clusters.filter((c) => c.unreadable !== undefined);
    for (const cluster of unread) note(io, `warning: cluster ${cluster.name} could not be read: ${cluster.unreadable}`);
    for (const guest of report.guestErrors)
      note(io, `warning: ${guest.cluster}/${guest.name} could not be read: ${guest.messages.join('; ')}`);
    let adoption: ReturnType<typeof adoptDrift>;
    try {
      adoption = adoptDrift({
        report,
        specs,
        files,
        items,
        select: { guests: flags.guest ?? [], keys: flags.key ?? [] },
      });
    } catch (error) {
      if (!(error instanceof AdoptionError)) throw error;
      note(io, error.message);
      for (const problem of error.problems) note(io, `  ${problem}`);
      return 1;
    }
    io.stdout.write(renderAdoptionText(adoption, dryRun));
    if (!dryRun) await writeFiles(root, adoption.files);
    if (adoption.files.length > 0) {
      note(
        io,
        dryRun ? 'dry run: no file was written' : `wrote ${adoption.files.map((f) => f.path).join(', ')}; run pve-gitops plan to check`,
      );
    }
    return adoption.unmatched.length > 0 || unread.length > 0 ? 1 : 0;
  },
};
