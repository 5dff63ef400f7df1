/**
 * What the planner and executor need from a cluster, declared by the core and implemented at the
 * edge (the Proxmox adapter). Plans only ever hold a {@link ClusterReader}. Failures are the
 * port's own errors (`core/port-errors.ts`), whatever the backend. Nothing here talks to a
 * cluster; how a port is served (HTTP, the simulator) is the adapter's business.
 */
import type { ListedGuest, ObservedGuest } from './model.js';
import type { GuestType } from './guest-flavours.js';
import type { ClusterCopy, ClusterFacts } from './rehearse/copy.js';
import type { FactsOptions } from './rehearse/kinds-copy.js';

/** A cluster as the planner reads it. */
export interface ClusterReader {
  readonly cluster: string;
  /** The cluster-wide guest listing (one request). */
  listGuests(): Promise<ListedGuest[]>;
  /** Nodes of the cluster. */
  listNodes(): Promise<string[]>;
  /**
   * The plugin type of each storage this reader may see (`dir`, `lvmthin`, …), by id, in one
   * request: what the plan needs to tell whether a guest's snapshot will be refused
   * (`core/snapshot-support.ts`). Optional: a reader without it leaves the plan unsure.
   */
  storageTypes?(): Promise<Record<string, string>>;
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
  /**
   * The port of a kind other than the guest (core/kinds/kind.ts), or undefined when this cluster's
   * backend has no adapter for it. A reader's port only reads; a writer's also writes.
   */
  kindPort?(kind: string): unknown;
  /**
   * The cluster facts an apply on `nodes` depends on, for the rehearsal's copy
   * (`core/rehearse/copy.ts`): a bounded number of requests, whatever the size of the estate.
   */
  readFacts?(nodes: readonly string[], options?: FactsOptions): Promise<ClusterFacts>;
}

/** A running simulated copy of clusters: a writer per cluster, closed when the rehearsal ends. */
export interface RehearsalSandbox {
  writers: Record<string, ClusterWriter>;
  /**
   * The rehearsal's clock skipped `ms` ahead (the apply waited): the copy ends what the cluster
   * would have ended meanwhile — the locks its guests held when the plan was made.
   */
  skip(ms: number): void;
  close(): Promise<void>;
}

/** Starts a simulated copy of the clusters (the Proxmox adapter's `openRehearsalSandbox`). */
export type OpenSandbox = (copies: readonly ClusterCopy[]) => Promise<RehearsalSandbox>;

/** The identity of a guest a write is aimed at. */
export interface GuestRef {
  node: string;
  type: GuestType;
  vmid: number;
}

/** A finished write: the Proxmox task that carried it out, when there was one. */
export interface WriteResult {
  upid?: string;
  /** The task's exit status when it ended: `OK`, or `WARNINGS: N` (a task that failed throws instead). */
  exitStatus?: string;
}

/** How a clean shutdown may end (`POST …/status/shutdown`'s `timeout` and `forceStop`). */
export interface ShutdownOptions {
  /** Seconds the guest gets to shut down. */
  timeout?: number;
  /** Stop it hard when it has not shut down within `timeout`. */
  forceStop?: boolean;
}

/** Per call: aborting `signal` stops waiting for the task (the task itself runs on). */
export interface WriteContext {
  signal?: AbortSignal;
}

/**
 * Writes to one cluster. Every method returns once the cluster has finished the work (tasks are
 * awaited) and fails with the port's errors (`core/port-errors.ts`); nothing is retried blindly.
 */
export interface ClusterWriter extends ClusterReader {
  /** A fresh read for apply: like {@link ClusterReader.readGuest}, with the live power status. */
  readGuestForApply(ref: GuestRef): Promise<ObservedGuest>;
  /** Tasks still running for the guest (UPIDs), e.g. an interrupted run's start. */
  activeTasks(ref: GuestRef): Promise<string[]>;
  create(ref: GuestRef, params: Record<string, string>, context?: WriteContext): Promise<WriteResult>;
  updateConfig(ref: GuestRef, set: Record<string, string>, remove: string[], digest: string, context?: WriteContext): Promise<WriteResult>;
  resize(ref: GuestRef, disk: string, size: string, digest: string, context?: WriteContext): Promise<WriteResult>;
  moveDisk(ref: GuestRef, disk: string, storage: string, digest: string, context?: WriteContext): Promise<WriteResult>;
  start(ref: GuestRef, context?: WriteContext): Promise<WriteResult>;
  /** A clean shutdown; `options` as Proxmox takes them (`timeout` seconds, `forceStop` a hard stop after it). */
  shutdown(ref: GuestRef, context?: WriteContext, options?: ShutdownOptions): Promise<WriteResult>;
  stop(ref: GuestRef, context?: WriteContext): Promise<WriteResult>;
  destroy(ref: GuestRef, context?: WriteContext): Promise<WriteResult>;
  /**
   * Clones `source` (a template) to the VMID `newid` (`POST …/clone` on the source's node); the
   * task carries the SOURCE's VMID. Optional: a writer without it cannot apply clones.
   */
  clone?(source: GuestRef, newid: number, params: Record<string, string>, context?: WriteContext): Promise<WriteResult>;
  /**
   * A clone task of `source` still running that makes `newid` (its UPID), found by the source's
   * tasks and their logs, since the new VMID has no task of its own.
   */
  activeCloneTo?(source: GuestRef, newid: number): Promise<string | undefined>;
  /** Converts the guest to a template (`POST …/template`). */
  convertToTemplate?(ref: GuestRef, context?: WriteContext): Promise<WriteResult>;
  /** Generates a VM's cloud-init drive again (`PUT …/cloudinit`). */
  regenerateCloudinit?(ref: GuestRef): Promise<WriteResult>;
  /** A guest's snapshots (without `current`); optional: writers without snapshots leave them out. */
  listSnapshots?(ref: GuestRef): Promise<SnapshotInfo[]>;
  /** Takes a snapshot of a VM or container (a task). */
  snapshot?(ref: GuestRef, name: string, description: string, context?: WriteContext): Promise<WriteResult>;
  /** Deletes a guest's snapshot (a task). */
  deleteSnapshot?(ref: GuestRef, name: string, context?: WriteContext): Promise<WriteResult>;
  /** Rolls a guest back to a snapshot (a task; the guest is stopped, and started again with `start`). */
  rollbackSnapshot?(ref: GuestRef, name: string, context?: WriteContext, options?: { start?: boolean }): Promise<WriteResult>;
}

/** A snapshot as a writer lists it. */
export interface SnapshotInfo {
  name: string;
  /** Seconds since the epoch. */
  snaptime?: number;
  description?: string;
}
