import { isServerManaged } from '../config-options.js';
import { flavourOf } from '../guest-flavours.js';
import { encodeSshKeys, isOwnedOnlyWhenSet, valueWhenAbsent } from '../key-rules.js';
import type { GuestSpec } from '../model.js';
import type { GuestType } from '../guest-flavours.js';
import { normaliseTags } from '../property-string.js';

/**
 * Which config keys the repository owns (docs/design.md#owned-keys): everything except server-managed keys,
 * keys Proxmox fills in at creation when the spec leaves them out, and the spec's `ignore` list.
 */

/** True when the repository owns `key` of a guest described by `spec`. */
export function isOwnedKey(spec: GuestSpec, key: string): boolean {
  if (isServerManaged(key)) return false;
  if (spec.ignore.includes(key)) return false;
  if (isOwnedOnlyWhenSet(spec.type, key)) return key in spec.config;
  return true;
}

/** The guest's value of `key` as a spec would compare it: the config's, or the default its absence means. */
export function observedValue(type: GuestType, key: string, effective: Readonly<Record<string, string>>): string | undefined {
  return effective[key] ?? valueWhenAbsent(type, key);
}

/** True when a guest's raw tag string carries the owner tag. */
export function hasOwnerTag(tags: string | undefined, ownerTag: string): boolean {
  if (!tags) return false;
  return normaliseTags(tags).split(';').includes(ownerTag.toLowerCase());
}

/**
 * The config a spec asks for, as Proxmox would store it: the guest's name in `name`/`hostname`,
 * the owner tag among the tags, SSH keys URL-encoded as the API expects them.
 */
export function desiredConfig(spec: GuestSpec, ownerTag: string): Record<string, string> {
  const config: Record<string, string> = {};
  for (const [key, value] of Object.entries(spec.config)) {
    if (spec.ignore.includes(key)) continue;
    config[key] = value;
  }
  const nameKey = flavourOf(spec.type).nameKey;
  if (!spec.ignore.includes(nameKey)) config[nameKey] ??= spec.name;
  if (!spec.ignore.includes('tags')) {
    config.tags = normaliseTags([...(config.tags ?? '').split(';'), ownerTag]);
  }
  if (config.sshkeys !== undefined) config.sshkeys = encodeSshKeys(config.sshkeys);
  return config;
}

/**
 * The configuration the guest will have once pending changes are in effect: the main section,
 * pending values on top, pending deletions removed.
 */
export function effectiveConfig(
  current: Record<string, string>,
  pending: Record<string, string>,
  pendingDelete: readonly string[],
): Record<string, string> {
  const merged: Record<string, string> = { ...current, ...pending };
  for (const key of pendingDelete) delete merged[key];
  delete merged.digest;
  return merged;
}
