/**
 * Cloud-init changes on a running VM (docs/design.md#cloud-init-on-a-running-vm): Proxmox writes
 * `ci*`, `ipconfigN`, `nameserver`, `searchdomain` and `sshkeys` to the config at once, but the
 * guest sees them only once its cloud-init drive is generated again — at the next start, or by
 * `PUT …/cloudinit` (docs/proxmox-behaviour.md, CIN- rows). The plan says so instead of calling
 * them live.
 */
import type { GuestType } from '../guest-flavours.js';
import type { GuestPlan } from '../model.js';

/** The options the cloud-init drive is generated from. */
export function isCloudinitKey(key: string): boolean {
  return /^(?:cicustom|citype|ciupgrade|ciuser|nameserver|searchdomain|sshkeys|ipconfig\d+)$/.test(key);
}

/**
 * Marks a running VM's cloud-init changes as waiting for a restart or a regeneration; with
 * `cloudinit: regenerate` the plan regenerates the drive after the config write (the engine does
 * it as part of that write, so the step cannot be lost between the two).
 */
export function noteCloudinitChanges(plan: GuestPlan, type: GuestType, running: boolean, regenerate = false): void {
  if (type !== 'qemu' || !running) return;
  const keys = plan.changes.filter((c) => isCloudinitKey(c.key)).map((c) => c.key);
  if (keys.length === 0) return;
  if (regenerate) {
    plan.operations.push({ op: 'cloudinit' });
    plan.warnings.push(
      `cloud-init (${keys.join(', ')}): the VM's cloud-init drive is generated again after the config write (cloudinit: regenerate); the guest applies it at its next cloud-init run`,
    );
    return;
  }
  for (const change of plan.changes) if (isCloudinitKey(change.key)) change.impact = 'pending-restart';
  plan.warnings.push(
    `cloud-init (${keys.join(', ')}): written to the config at once, but the VM sees it only when its cloud-init drive is generated again — at its next start, or by regenerating the drive (\`PUT …/cloudinit\`, docs/design.md#cloud-init-on-a-running-vm)`,
  );
}
