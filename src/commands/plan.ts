/**
 * `pve-gitops plan`: a read-only plan of a spec directory (and optionally its base) against the
 * clusters, printed or saved for `apply --plan`; also the format helpers `apply` and `drift` share.
 * Planning itself is the engine's and the core's; this file reads flags and writes output.
 */
import { clusterNames } from '../connections/connect.js';
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Plan } from '../core/model.js';
import { planHasChanges, planHasErrors } from '../core/plan/plan-specs.js';
import { renderPlanJson } from '../core/render/render-json.js';
import { PLAN_FORMATS, type PlanFormat, planFormat, renderPlanAs } from '../core/render/render-plan.js';
import { createSpecParseCache } from '../core/spec/parse-cache.js';
import { observePlan } from '../engine/run-plan.js';
import { rehearsePlan } from '../engine/rehearse/rehearse-plan.js';
import { anyRefused } from '../core/rehearse/outcome.js';
import { renderRehearsalText, withRehearsalRendered } from '../core/rehearse/render.js';
import { openRehearsalSandbox } from '../pve/rehearse/sandbox.js';
import { parseFlags, UsageError } from './args.js';
import { connect, loadSpecDir, note, progress, reportInvalidSpecs } from './shared.js';
import type { Command, CommandIO } from './types.js';

type Format = PlanFormat;

export function parseFormat(value: string): Format {
  const format = planFormat(value);
  if (!format) throw new UsageError(`--format must be one of ${PLAN_FORMATS.join(', ')}, got '${value}'`);
  return format;
}

/** Whether text output may use colour: a terminal, not a file, and NO_COLOR unset. */
export function useColor(io: CommandIO, toFile: boolean): boolean {
  return !toFile && 'isTTY' in io.stdout && Boolean(io.stdout.isTTY) && !io.env.NO_COLOR;
}

/** Renders a plan in the chosen format. */
export function renderPlan(plan: Plan, format: Format, io: CommandIO, toFile: boolean): string {
  return renderPlanAs(plan, format, { color: useColor(io, toFile) });
}

/** Writes rendered output to `--out FILE` or stdout. */
export async function emit(text: string, out: string | undefined, io: CommandIO): Promise<void> {
  if (out === undefined) {
    io.stdout.write(text);
    return;
  }
  await writeFile(resolve(io.cwd, out), text);
  note(io, `wrote ${out}`);
}

/**
 * Loads the head's specs and the base's. Base and head share their parses through a cache that
 * lives only here: a pull request leaves most files as they were, and once both are loaded the
 * parses (YAML values, position tables) are garbage the plan's own work can reuse.
 */
async function loadHeadAndBase(
  specs: string,
  baseDir: string | undefined,
  io: CommandIO,
): Promise<{ head: Awaited<ReturnType<typeof loadSpecDir>>; base: Awaited<ReturnType<typeof loadSpecDir>> | undefined }> {
  if (baseDir === undefined) return { head: await loadSpecDir(specs, io), base: undefined };
  const cache = createSpecParseCache();
  const head = await loadSpecDir(specs, io, cache);
  const base = await loadSpecDir(baseDir, io, cache);
  return { head, base };
}

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
    const { head, base } = await loadHeadAndBase(flags.specs, flags.base, io);
    const errors = [...head.errorLines, ...(base?.errorLines.map((l) => `base: ${l}`) ?? [])];
    if (reportInvalidSpecs(io, errors, 'nothing was planned')) return 1;
    const open = await connect(clusterNames(head.specs, base?.specs), 'read', io, flags.clusters);
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
      // output, so a plan kept in a file shows it too; a refusal makes the plan fail.
      const rehearsal =
        flags.rehearse && !planHasErrors(plan) && planHasChanges(plan)
          ? await rehearsePlan({
              plan,
              observed,
              readers: open.clusters,
              openSandbox: openRehearsalSandbox,
              allowHostAccess: Object.fromEntries(Object.entries(open.access).map(([name, access]) => [name, access.allowHostAccess])),
            })
          : undefined;
      await emit(withRehearsalRendered(renderPlan(plan, format, io, flags.out !== undefined), format, rehearsal), flags.out, io);
      if (flags.save !== undefined) {
        await writeFile(resolve(io.cwd, flags.save), renderPlanJson(plan));
        note(io, `saved the plan to ${flags.save}: apply exactly this with \`pve-gitops apply --plan ${flags.save}\``);
      }
      if (planHasErrors(plan)) return 1;
      if (rehearsal) {
        if (format === 'json') io.stderr.write(renderRehearsalText(rehearsal));
        if (anyRefused(rehearsal)) return 1;
      }
      return planHasChanges(plan) ? 2 : 0;
    } finally {
      await open.close();
    }
  },
};
