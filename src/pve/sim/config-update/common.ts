/**
 * What config updates of both flavours share (docs/proxmox-api.md#config-updates): the shape of
 * an update as the API receives it and after its synchronous checks, what the update function
 * reports, `option_exists`, and the `[PENDING]` bookkeeping — pending deletes, `cleanup_pending`,
 * `unusedN` volumes, protection — that qemu-server and pve-container implement alike.
 */
import { NON_OPTIONS } from '../../../core/config-options.js';
import type { GuestType } from '../../../core/guest-flavours.js';
import { paramSchema } from '../../../core/proxmox-params.js';
import type { Principal } from '../auth.js';
import { parsePendingDelete, printPendingDelete, serializeConfig } from '../config-file.js';
import { DieError } from '../errors.js';
import { perlTrue, type Guest } from '../guest/guest.js';
import { configEndpoint } from '../../../core/config-options.js';
import type { VolumeStore } from '../volumes.js';

/** A config write as the API receives it (values already validated against the schema). */
export interface ConfigUpdate {
  /** Options to set, option → value as a string. */
  set: Record<string, string>;
  /** Raw `delete` list (`,` `;` or whitespace separated). */
  delete?: string;
  revert?: string;
  force?: boolean;
  digest?: string;
  skiplock?: boolean;
}

/**
 * Who writes: an API token (never `root@pam`, so every root-only check applies), or, without a
 * principal, `root@pam` itself (an operator's edit in the GUI), for whom no check applies.
 */
export interface UpdateActor {
  principal?: Principal;
}

/** An update after the synchronous checks. */
export interface PreparedUpdate {
  type: GuestType;
  set: Map<string, string>;
  deletes: string[];
  revert: string[];
  force: boolean;
  digest?: string;
  skiplock: boolean;
  /** `update VM 100: -cores 4 -delete tags` for the task log. */
  logLine: string;
  /** The token writing, or undefined for `root@pam`. */
  principal?: Principal;
}

/** What the update function reports back besides the new config. */
export interface UpdateOutcome {
  /** Per-option hotplug/apply errors; the API raises them as a 400 after writing. */
  errors: Record<string, string>;
  /** What a plain Perl `warn` printed: task log lines, never a task warning. */
  warnings: string[];
}

/** The storage and identity services updates need. */
export interface UpdateEnv {
  volumes: VolumeStore;
}

const INTERNAL_OPTIONS = new Set(['lock', 'parent', 'snaptime', 'vmstate', 'runningmachine', 'runningcpu', 'meta']);

/** `option_exists`: a config key of that guest type. */
export function optionExists(type: GuestType, key: string): boolean {
  if (NON_OPTIONS.has(key)) return false;
  return INTERNAL_OPTIONS.has(key) || paramSchema(configEndpoint(type), key) !== undefined;
}

/**
 * Runs a mutation of the guest's config and writes it back only if the text changed. qemu-server
 * writes after every step, so a failing update keeps what it wrote before the failure
 * (`partial`); pve-container writes once at the end, so a failure writes nothing (`atomic`).
 */
export function writeIfChanged<T>(guest: Guest, mutate: () => T, mode: 'partial' | 'atomic' = 'partial'): T {
  const before = serializeConfig(guest.config, guest.type);
  let failed = true;
  try {
    const result = mutate();
    failed = false;
    return result;
  } finally {
    if (failed && mode === 'atomic') guest.replaceRaw(guest.raw);
    // An unchanged file is not written, but what memory holds must still read like the file.
    else if (serializeConfig(guest.config, guest.type) !== before) guest.commit();
    else guest.rereadDescriptions();
  }
}

export function pendingDeletes(guest: Guest): Map<string, boolean> {
  return parsePendingDelete(guest.pending.get('delete'));
}

function storePendingDeletes(guest: Guest, map: Map<string, boolean>): void {
  const printed = printPendingDelete(map);
  if (printed === undefined) guest.pending.delete('delete');
  else guest.pending.set('delete', printed);
}

export function addToPendingDelete(guest: Guest, opt: string, force: boolean): void {
  const map = pendingDeletes(guest);
  map.set(opt, force);
  storePendingDeletes(guest, map);
}

export function removeFromPendingDelete(guest: Guest, opt: string): void {
  const map = pendingDeletes(guest);
  if (map.delete(opt)) storePendingDeletes(guest, map);
}

/** `cleanup_pending`: drops pending values equal to current ones and deletes of unset keys. */
export function cleanupPending(guest: Guest): void {
  for (const [key, value] of [...guest.pending]) {
    if (key !== 'delete' && guest.main.get(key) === value) guest.pending.delete(key);
  }
  const map = pendingDeletes(guest);
  for (const key of [...map.keys()]) if (!guest.main.has(key)) map.delete(key);
  storePendingDeletes(guest, map);
}

/** `add_unused_volume`: lowest free `unusedN`, no duplicates. */
export function addUnusedVolume(guest: Guest, volid: string): void {
  let free: string | undefined;
  for (let i = 255; i >= 0; i--) {
    const key = `unused${i}`;
    const existing = guest.main.get(key);
    if (existing === volid) return;
    if (existing === undefined) free = key;
  }
  if (free === undefined) throw new DieError('Too many unused volumes - please delete them first.\n');
  guest.main.set(free, volid);
}

export function checkProtection(guest: Guest, message: string): void {
  if (perlTrue(guest.main.get('protection'))) throw new DieError(`${message} - protection mode enabled\n`);
}
