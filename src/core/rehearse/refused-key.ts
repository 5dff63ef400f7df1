/**
 * Which line of a guest's spec a rehearsal refusal belongs on: the config key the refused step or
 * Proxmox's answer names — a key in the step (`set scsi1`), the disk on the storage the answer
 * names, the NIC on the bridge it names, `cores` for too many vCPUs — else the document itself.
 */
import type { GuestSpec, SourceRef } from '../model.js';
import type { RehearsedGuest } from './outcome.js';

/** The config key of `spec` a refusal is about, when one can be told. */
export function refusedKey(guest: RehearsedGuest, spec: GuestSpec): string | undefined {
  const keys = Object.keys(spec.config);
  const inStep = (guest.step ?? '').split(/[\s,:]+/).find((word) => keys.includes(word));
  if (inStep) return inStep;
  const error = guest.error ?? '';
  const storage = /storage '([^']+)'/.exec(error)?.[1];
  if (storage) return keys.find((k) => spec.config[k]?.startsWith(`${storage}:`));
  const bridge = /bridge '([^']+)'/.exec(error)?.[1];
  if (bridge) return keys.find((k) => /^net\d+$/.test(k) && (spec.config[k] ?? '').split(',').includes(`bridge=${bridge}`));
  if (/vcpus allowed/.test(error)) return ['cores', 'sockets'].find((k) => keys.includes(k));
  return undefined;
}

/** Where to annotate a refusal: the key's line when one can be told, else the guest's document. */
export function refusalSource(guest: RehearsedGuest, spec: GuestSpec | undefined): SourceRef | undefined {
  const key = spec ? refusedKey(guest, spec) : undefined;
  return (key !== undefined ? spec?.keySources?.[key] : undefined) ?? guest.source;
}
