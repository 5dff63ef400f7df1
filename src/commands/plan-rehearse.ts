/**
 * `plan --rehearse`'s step after the plan: the plan's apply on a simulated copy (docs/rehearsal.md),
 * rendered into the plan's own output and whether anything was refused. A module of its own, loaded
 * only when `--rehearse` is given: the rehearsal brings the engine's apply and the whole simulator
 * (about 100 modules), which a plain `plan` never runs and loaded at every start-up.
 */
import type { ObservedState, Plan } from '../core/model.js';
import { anyRefused } from '../core/rehearse/outcome.js';
import { renderRehearsalText, withRehearsalRendered } from '../core/rehearse/render.js';
import type { PlanFormat } from '../core/render/render-plan.js';
import type { OpenClusters } from '../connections/open-clusters.js';
import { rehearsePlan } from '../engine/rehearse/rehearse-plan.js';
import { openRehearsalSandbox } from '../pve/rehearse/sandbox.js';

/** A plan's output with its rehearsal: what to write, what goes to stderr, and whether anything was refused. */
export interface RehearsedOutput {
  /** The rendered plan with the rehearsal's section after it (text and markdown; JSON is left as it was). */
  output: string;
  /** The rehearsal as text for stderr where the output cannot hold it (JSON), else undefined. */
  aside: string | undefined;
  refused: boolean;
}

/** Rehearses `plan`'s apply and writes its report into `rendered`, the plan in `format`. */
export async function rehearseIntoOutput(
  plan: Plan,
  observed: ObservedState,
  open: OpenClusters,
  rendered: string,
  format: PlanFormat,
): Promise<RehearsedOutput> {
  const rehearsal = await rehearsePlan({
    plan,
    observed,
    readers: open.clusters,
    openSandbox: openRehearsalSandbox,
    allowHostAccess: Object.fromEntries(Object.entries(open.access).map(([name, access]) => [name, access.allowHostAccess])),
  });
  return {
    output: withRehearsalRendered(rendered, format, rehearsal),
    aside: format === 'json' ? renderRehearsalText(rehearsal) : undefined,
    refused: anyRefused(rehearsal),
  };
}
