/**
 * What applying a clone adds to the engine's loop (docs/design.md#creating-guests-by-cloning):
 * the recompute before the clone exists plans against the template the reviewer saw (recorded in
 * the clone step), the recompute after it takes the clone as the plan's own guest — it carries the
 * template's tags, not necessarily the owner tag, and the name the clone call gave it — and an
 * earlier run's clone still copying is found through the TEMPLATE's tasks, since the clone task's
 * id is the source VMID (docs/proxmox-behaviour.md, QCL-8, QCL-9). And the cloud-init drive a
 * plan regenerates with its config write (docs/design.md#cloud-init-on-a-running-vm).
 */
import type { GuestType } from '../core/guest-flavours.js';
import type { GuestPlan, GuestSpec, ObservedGuest, Operation } from '../core/model.js';
import { isCloudinitKey } from '../core/plan/cloudinit-changes.js';
import { type CloneSourceSeen, sourceSeenFromClone } from '../core/plan/plan-clone.js';
import type { ClusterWriter } from '../core/ports.js';

type CloneOp = Extract<Operation, { op: 'clone' }>;

/** The reviewed plan's clone step, if it creates the guest by cloning. */
export function cloneStepOf(plan: GuestPlan): CloneOp | undefined {
  return plan.operations.find((o): o is CloneOp => o.op === 'clone');
}

/** The spec to recompute with: once the reviewed clone exists, it is this plan's guest to take over. */
export function recomputedSpec(plan: GuestPlan, observed: ObservedGuest | undefined): GuestSpec | undefined {
  const spec = plan.target.spec;
  if (!spec || !observed || !cloneStepOf(plan)) return spec;
  return { ...spec, adopt: true };
}

/** The template as the reviewed clone step saw it, for the recompute before the clone exists. */
export function cloneSourceOf(plan: GuestPlan): { cloneSource?: CloneSourceSeen } {
  const step = cloneStepOf(plan);
  return step ? { cloneSource: sourceSeenFromClone(plan.type, step) } : {};
}

/** The UPID of a clone of the template to `vmid` still running (an interrupted run's), if any. */
export async function inflightClone(writer: ClusterWriter, op: CloneOp, type: GuestType, vmid: number): Promise<string | undefined> {
  if (!writer.activeCloneTo) return undefined;
  return writer.activeCloneTo({ vmid: op.source.vmid, type, node: op.source.node }, vmid);
}

/** Whether this config write changes cloud-init options of a plan that regenerates the drive after it. */
export function regeneratesCloudinit(plan: GuestPlan, op: Extract<Operation, { op: 'config' }>): boolean {
  if (!plan.operations.some((o) => o.op === 'cloudinit')) return false;
  return [...Object.keys(op.set), ...op.delete].some(isCloudinitKey);
}
