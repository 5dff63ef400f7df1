/**
 * `plan --rehearse`'s step after the plan: the plan's apply on a simulated copy (docs/rehearsal.md),
 * its report, and whether anything was refused. A module of its own, loaded only when `--rehearse`
 * is given: the rehearsal brings the engine's apply and the whole simulator (about 100 modules),
 * which a plain `plan` never runs and loaded at every start-up.
 */
import type { ObservedState, Plan } from '../core/model.js';
import { anyRefused } from '../core/rehearse/outcome.js';
import { renderRehearsalText } from '../core/rehearse/render.js';
import type { OpenClusters } from '../connections/open-clusters.js';
import { rehearsePlan } from '../engine/rehearse/rehearse-plan.js';
import { openRehearsalSandbox } from '../pve/rehearse/sandbox.js';

/** Rehearses `plan`'s apply, writes the report to `out`; true when Proxmox would refuse something. */
export async function rehearseAndReport(
  plan: Plan,
  observed: ObservedState,
  open: OpenClusters,
  out: NodeJS.WritableStream,
): Promise<boolean> {
  const rehearsal = await rehearsePlan({
    plan,
    observed,
    readers: open.clusters,
    openSandbox: openRehearsalSandbox,
    allowHostAccess: Object.fromEntries(Object.entries(open.access).map(([name, access]) => [name, access.allowHostAccess])),
  });
  out.write(renderRehearsalText(rehearsal));
  return anyRefused(rehearsal);
}
