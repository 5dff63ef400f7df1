/**
 * `pve-gitops plan`: a read-only plan of a spec directory (and optionally its base) against the
 * clusters, printed or saved for `apply --plan` (its output helpers, shared with `apply` and `drift`,
 * are `plan-output.ts`).
 * Planning itself is the engine's and the core's; this file reads flags and writes output.
 */
import { clusterNames } from '../connections/connect.js';
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { planHasChanges, planHasErrors } from '../core/plan/plan-specs.js';
import { renderPlanJson } from '../core/render/render-json.js';
import { observePlan } from '../engine/run-plan.js';
import { parseFlags } from './args.js';
import { emit, parseFormat, renderPlan } from './plan-output.js';
import { loadForPlan } from './plan-base-load.js';
import { note, progress, reportInvalidSpecs } from './shared.js';
import type { Command } from './types.js';

export const planCommand: Command = {
  name: 'plan',
  summary: 'read-only plan of the specs against the clusters; exit 0 no changes, 2 changes, 1 error',
  usage:
    'pve-gitops plan [--specs DIR] [--base DIR] [--format text|markdown|json] [--out FILE] [--save FILE] [--clusters FILE] [--rehearse]',
  async run(args, io) {
    const flags = parseFlags(args, {
      specs: { type: 'string', default: '.' },
      base: { type: 'string' },
      format: { type: 'string', default: 'text' },
      out: { type: 'string' },
      save: { type: 'string' },
      clusters: { type: 'string' },
      rehearse: { type: 'boolean' },
    });
    const format = parseFormat(flags.format);
    const load = await loadForPlan(flags.specs, flags.base, io, flags.clusters);
    const { head, base } = load;
    const errors = [...head.errorLines, ...(base?.errorLines.map((l) => `base: ${l}`) ?? [])];
    if (reportInvalidSpecs(io, errors, 'nothing was planned')) {
      await load.discard();
      return 1;
    }
    const open = await load.connect(clusterNames(head.specs, base?.specs));
    try {
      const { plan, observed } = await observePlan({
        head: head.specs,
        base: base?.specs,
        readers: open.clusters,
        access: open.access,
        ref: flags.specs,
        onProgress: progress(io),
      });
      // The plan's apply on a simulated copy (docs/rehearsal.md), written after the plan in its
      // output, so a plan kept in a file shows it too; a refusal makes the plan fail. Loaded only
      // here: the rehearsal brings the engine's apply and the whole simulator.
      const rendered = await renderPlan(plan, format, io, flags.out !== undefined);
      const rehearsed =
        flags.rehearse && !planHasErrors(plan) && planHasChanges(plan)
          ? await (await import('./plan-rehearse.js')).rehearseIntoOutput(plan, observed, open, rendered, format)
          : undefined;
      await emit(rehearsed?.output ?? rendered, flags.out, io);
      if (flags.save !== undefined) {
        await writeFile(resolve(io.cwd, flags.save), renderPlanJson(plan));
        note(io, `saved the plan to ${flags.save}: apply exactly this with \`pve-gitops apply --plan ${flags.save}\``);
      }
      if (planHasErrors(plan)) return 1;
      if (rehearsed) {
        if (rehearsed.aside !== undefined) io.stderr.write(rehearsed.aside);
        if (rehearsed.refused) return 1;
      }
      return planHasChanges(plan) ? 2 : 0;
    } finally {
      await open.close();
    }
  },
};
