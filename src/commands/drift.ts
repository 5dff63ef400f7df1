/**
 * `pve-gitops drift`: a read-only report of every owned guest against the specs, as text, markdown
 * or JSON, with an exit status that says whether anything drifted. It writes nothing to a cluster;
 * the App's scheduled drift report is `src/queue/drift`.
 */
import { clusterNames } from '../connections/connect.js';
import { planHasDrift, planHasErrors } from '../core/plan/plan-specs.js';
import { runDrift } from '../engine/run-plan.js';
import { plural } from '../core/render/plan-labels.js';
import { parseFlags } from './args.js';
import { emit, parseFormat, renderPlan } from './plan-output.js';
import { connect, loadSpecDir, note, progress, reportInvalidSpecs } from './shared.js';
import type { Command } from './types.js';

export const driftCommand: Command = {
  name: 'drift',
  summary: 'read-only report of every owned guest against the specs; exit 0 none, 2 drifted, 1 error',
  usage: 'pve-gitops drift [--specs DIR] [--format text|markdown|json] [--out FILE] [--clusters FILE]',
  async run(args, io) {
    const flags = parseFlags(args, {
      specs: { type: 'string', default: '.' },
      format: { type: 'string', default: 'text' },
      out: { type: 'string' },
      clusters: { type: 'string' },
    });
    const format = parseFormat(flags.format);
    const { specs, errorLines } = await loadSpecDir(flags.specs, io);
    if (reportInvalidSpecs(io, errorLines, 'nothing was read')) return 1;
    // Every owned guest is read: the connections the reads will use open while the listing is in flight.
    const open = await connect(clusterNames(specs), 'read', io, flags.clusters, { preconnect: true });
    try {
      const plan = await runDrift({ head: specs, readers: open.clusters, access: open.access, ref: flags.specs, onProgress: progress(io) });
      await emit(await renderPlan(plan, format, io, flags.out !== undefined), flags.out, io);
      const drifted = plan.guests.filter((g) => g.drift.length > 0).length;
      // Pools, HA resources, firewalls and backup jobs drift too: counted apart from the guests.
      const objects = plan.objects.filter((o) => o.drift.length > 0).length;
      note(
        io,
        `${plural(drifted, 'drifted guest')}${objects > 0 ? `, ${plural(objects, 'drifted object')}` : ''}, ${plural(plan.summary.orphan, 'orphan')}, ${plan.summary.pending} with pending changes`,
      );
      if (planHasErrors(plan)) return 1;
      return planHasDrift(plan) ? 2 : 0;
    } finally {
      await open.close();
    }
  },
};
