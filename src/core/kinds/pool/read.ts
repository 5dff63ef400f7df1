/**
 * What the two pool kinds read of a cluster for a plan, and how: only the pools the specs name,
 * each through `GET /pools?poolid=` (its members, for any token), the listing of pools the token
 * may audit, and the pool each guest shows in `/cluster/resources`. "Cannot see" is kept apart
 * from "not a member": a pool that cannot be read is an `unreadable` entry naming the privilege.
 * Plain JSON, as plans are data.
 */
import { PermissionDeniedError } from '../../port-errors.js';
import type { PoolPort } from './port.js';

/** One pool as read: present with its comment and members, absent, or not readable by the token. */
export type PoolRead =
  | { state: 'present'; comment?: string; vmids: number[]; storage: string[] }
  | { state: 'absent' }
  | { state: 'unreadable'; error: string };

/** The privilege a token needs to read `poolid`, as Proxmox names it. */
export function auditPrivilege(poolid: string): string {
  return `Pool.Audit on /pool/${poolid}`;
}

/** Reads each pool once, in parallel; a failure becomes that pool's `unreadable` entry. */
export async function readPools(port: PoolPort, ids: Iterable<string>): Promise<Record<string, PoolRead>> {
  const unique = [...new Set(ids)].sort();
  const reads = await Promise.all(unique.map((id) => readOne(port, id)));
  return Object.fromEntries(unique.map((id, i) => [id, reads[i] as PoolRead]));
}

async function readOne(port: PoolPort, poolid: string): Promise<PoolRead> {
  try {
    const pool = await port.readPool(poolid);
    if (!pool) return { state: 'absent' };
    return { state: 'present', ...(pool.comment !== undefined ? { comment: pool.comment } : {}), vmids: pool.vmids, storage: pool.storage };
  } catch (err) {
    if (err instanceof PermissionDeniedError) {
      return { state: 'unreadable', error: `cannot read pool '${poolid}': the token lacks ${auditPrivilege(poolid)} (${err.message})` };
    }
    return { state: 'unreadable', error: `cannot read pool '${poolid}': ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** `a/b/c` → `a`, `a/b`: the parents a nested pool needs. */
export function parentPools(poolid: string): string[] {
  const parts = poolid.split('/');
  return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('/'));
}
