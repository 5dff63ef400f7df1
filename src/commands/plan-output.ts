/**
 * How `plan`, `apply` and `drift` write a plan: the `--format` flag, colour, and `--out FILE` or
 * stdout. Apart from `plan.ts` so that `drift` and `apply` do not load what only `plan` needs
 * (the rehearsal and its simulated sandbox).
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Plan } from '../core/model.js';
import { PLAN_FORMATS, type PlanFormat, planFormat, renderPlanAs } from '../core/render/render-plan.js';
import { UsageError } from './args.js';
import { note } from './shared.js';
import type { CommandIO } from './types.js';

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
export function renderPlan(plan: Plan, format: Format, io: CommandIO, toFile: boolean): Promise<string> {
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
