import type { GuestType, ListedGuest, ObservedGuest } from './model.js';

/**
 * What the planner and executor need from a cluster, declared by the core and implemented at the
 * edge (the Proxmox adapter). Plans only ever hold a {@link ClusterReader}.
 */
export interface ClusterReader {
  readonly cluster: string;
  /** The cluster-wide guest listing (one request). */
  listGuests(): Promise<ListedGuest[]>;
  /** Nodes of the cluster. */
  listNodes(): Promise<string[]>;
  /**
   * One guest read for planning: current values, pending values and the digest of that read, in
   * one request. `status` comes from the listing unless `liveStatus` asks the node for it (one
   * more request), as it does when the listing does not say running or stopped.
   */
  readGuest(listed: ListedGuest, options?: { liveStatus?: boolean }): Promise<ObservedGuest>;
  /**
   * Whether any guest holds `vmid` anywhere in the cluster, whatever this reader's token may see
   * (Proxmox answers from the cluster's VMID list, not from the token's view). The way to tell a
   * guest that is gone from a guest the token cannot see; see docs/identity-and-privileges.md.
   */
  vmidExists(vmid: number): Promise<boolean>;
}

/** The identity of a guest a write is aimed at. */
export interface GuestRef {
  node: string;
  type: GuestType;
  vmid: number;
}

/** A finished write: the Proxmox task that carried it out, when there was one. */
export interface WriteResult {
  upid?: string;
}

/**
 * Writes to one cluster. Every method returns once Proxmox has finished the work (tasks are
 * awaited) and throws the adapter's typed errors; nothing is retried blindly.
 */
export interface ClusterWriter extends ClusterReader {
  /** A fresh read for apply: like {@link ClusterReader.readGuest}, with the live power status. */
  readGuestForApply(ref: GuestRef): Promise<ObservedGuest>;
  /** Tasks still running for the guest (UPIDs), e.g. an interrupted run's start. */
  activeTasks(ref: GuestRef): Promise<string[]>;
  create(ref: GuestRef, params: Record<string, string>): Promise<WriteResult>;
  updateConfig(ref: GuestRef, set: Record<string, string>, remove: string[], digest: string): Promise<WriteResult>;
  resize(ref: GuestRef, disk: string, size: string, digest: string): Promise<WriteResult>;
  moveDisk(ref: GuestRef, disk: string, storage: string, digest: string): Promise<WriteResult>;
  start(ref: GuestRef): Promise<WriteResult>;
  shutdown(ref: GuestRef): Promise<WriteResult>;
  stop(ref: GuestRef): Promise<WriteResult>;
  destroy(ref: GuestRef): Promise<WriteResult>;
}
