/**
 * What start (and a VM's stop) do to a guest's config: every pending change takes effect, by each
 * flavour's own `vmconfig_apply_pending`.
 */
import type { GuestType } from '../../../core/guest-flavours.js';
import type { Guest } from '../guest/guest.js';
import { writeIfChanged, type UpdateEnv } from './common.js';
import { lxcApplyPending } from './container.js';
import { qemuApplyPending } from './vm.js';

/** Each flavour's `vmconfig_apply_pending`, everything selected. */
const APPLY_PENDING: Record<GuestType, (env: UpdateEnv, guest: Guest) => void> = {
  qemu: qemuApplyPending,
  lxc: (env, guest) => lxcApplyPending(env, guest),
};

/** What start (and qemu stop) do: apply every pending change (`vmconfig_apply_pending`). */
export function applyAllPending(env: UpdateEnv, guest: Guest): void {
  if (guest.pending.size === 0) return;
  writeIfChanged(guest, () => APPLY_PENDING[guest.type](env, guest));
}
