/**
 * What the pool kind and the pool-member kind share: their names, item keys and how messages
 * quote a pool.
 */
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

/** `'text'`, or `none` for nothing: how messages quote a pool or a comment. */
export function quoted(value: string | null | undefined): string {
  return value === undefined || value === null ? 'none' : `'${value}'`;
}
