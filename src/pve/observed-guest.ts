/**
 * Turns a Proxmox answer about a guest into the core's `ObservedGuest`: current and queued values,
 * queued deletions and the digest of exactly that read. No request is made here; the adapter reads,
 * this file only translates.
 */
import type { ObservedGuest } from '../core/model.js';
import type { GuestType } from '../core/guest-flavours.js';
import type { PendingEntry } from './schema.js';

/**
 * The core's view of a guest from one `GET …/pending` answer: current values, queued values,
 * queued deletions and the digest of exactly that read (docs/proxmox-api.md#the-pending-list).
 */
export function observedFromPending(
  entries: readonly PendingEntry[],
  ref: { vmid: number; type: GuestType; node: string },
  status: string,
): ObservedGuest {
  const guest: ObservedGuest = {
    vmid: ref.vmid,
    type: ref.type,
    node: ref.node,
    status,
    digest: '',
    current: {},
    pending: {},
    pendingDelete: [],
  };
  for (const entry of entries) {
    if (entry.key === 'digest') {
      guest.digest = String(entry.value ?? '');
      continue;
    }
    if (entry.value !== undefined && entry.value !== null) guest.current[entry.key] = String(entry.value);
    if (entry.pending !== undefined && entry.pending !== null) guest.pending[entry.key] = String(entry.pending);
    if (entry.delete !== undefined && entry.delete !== 0) guest.pendingDelete.push(entry.key);
  }
  return guest;
}
