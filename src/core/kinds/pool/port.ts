/**
 * The pool kind's port: what its observe and its executor need from a cluster, in the core's
 * words. Declared here, implemented over the Proxmox API by `pve/kinds/pool-adapter.ts`. Failures
 * are the core's port errors (`core/port-errors.ts`): a refused privilege is a
 * `PermissionDeniedError`, every other refusal a `PortError` with Proxmox's own text.
 */

/** A pool as `GET /pools` lists it (only pools the token holds Pool.Audit on). */
export interface ListedPool {
  poolid: string;
  comment?: string;
}

/** One pool read in full: its comment and members. */
export interface PoolDetail {
  poolid: string;
  comment?: string;
  /** VMIDs of its guest members, sorted. */
  vmids: number[];
  /** Its storage members, sorted. */
  storage: string[];
}

/** A guest as `GET /cluster/resources?type=vm` lists it, with the pool it shows. */
export interface ListedMembership {
  vmid: number;
  /** Absent: the listing shows no pool (none, or one the token lacks Pool.Audit on). */
  pool?: string;
}

/** A change to one pool (`PUT /pools`): its comment, or guests added or removed. */
export interface PoolUpdate {
  comment?: string;
  vms?: readonly number[];
  /** Remove `vms` instead of adding them. */
  delete?: boolean;
  /** Take the guests out of the pool they are in now (Proxmox refuses a move without it). */
  allowMove?: boolean;
}

/** The cluster as the pool kind reads and writes it. */
export interface PoolPort {
  /** The pools the token may audit. */
  listPools(): Promise<ListedPool[]>;
  /** One pool with its members, or undefined when it does not exist. */
  readPool(poolid: string): Promise<PoolDetail | undefined>;
  /** Every guest the token sees, with the pool the listing shows for it. */
  memberships(): Promise<ListedMembership[]>;
  /**
   * Whether the token holds Pool.Audit on every pool (on `/pool`, propagated): only then does a
   * guest the listing shows without a pool belong to none.
   */
  auditsEveryPool(): Promise<boolean>;
  createPool(poolid: string, comment?: string): Promise<void>;
  updatePool(poolid: string, update: PoolUpdate): Promise<void>;
  deletePool(poolid: string): Promise<void>;
}
