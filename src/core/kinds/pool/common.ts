/**
 * What the pool kind and the pool-member kind share: their names, item keys, and the envelope of
 * an item of either.
 */
import type { DriftItem, GuestAction, KeyChange, ObjectOperation, ObjectPlan, SourceRef } from '../../model.js';
import { keyText, resourceKey } from '../resource-key.js';

/** The registry names. */
export const POOL_KIND = 'pool';
export const POOL_MEMBER_KIND = 'pool-member';

/** The key of a pool's item (`lab/pool/web`). */
export function poolKey(cluster: string, poolid: string): string {
  return keyText(resourceKey(cluster, POOL_KIND, poolid));
}

/** The key of a guest's membership item (`lab/pool-member/100`). */
export function memberKey(cluster: string, vmid: number): string {
  return keyText(resourceKey(cluster, POOL_MEMBER_KIND, vmid));
}

/** The fields of an item besides its identity; defaults for the rest. */
export interface ItemParts {
  action: GuestAction;
  changes?: KeyChange[];
  operations?: ObjectOperation[];
  drift?: DriftItem[];
  errors?: string[];
  warnings?: string[];
  after?: string[];
  source?: SourceRef;
  payload: Record<string, unknown>;
}

/** One item of either kind. */
export function item(kind: string, key: string, cluster: string, name: string, parts: ItemParts): ObjectPlan {
  const plan: ObjectPlan = {
    kind,
    key,
    cluster,
    name,
    action: parts.errors && parts.errors.length > 0 ? 'error' : parts.action,
    changes: parts.changes ?? [],
    operations: parts.errors && parts.errors.length > 0 ? [] : (parts.operations ?? []),
    drift: parts.drift ?? [],
    errors: parts.errors ?? [],
    warnings: parts.warnings ?? [],
    severity: 'configuration',
    payload: parts.payload,
  };
  if (parts.after && parts.after.length > 0) plan.after = parts.after;
  if (parts.source) plan.source = parts.source;
  return plan;
}

/** `'text'`, or `none` for nothing: how messages quote a pool or a comment. */
export function quoted(value: string | null | undefined): string {
  return value === undefined || value === null ? 'none' : `'${value}'`;
}

/** Throws unless `value` is a string (a stored item's field). */
export function storedString(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw new Error(`stored item: ${what} is not a string`);
  return value;
}
