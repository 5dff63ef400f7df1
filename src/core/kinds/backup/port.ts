/**
 * The backup-job kind's port: what its observe and its executor need from a cluster, in the
 * core's words. Declared here, implemented over `/cluster/backup` by `pve/kinds/backup-adapter.ts`.
 * A job comes back as Proxmox answers it (loose JSON); `job.ts` reads it into the managed values.
 * Failures are the core's port errors (`core/port-errors.ts`).
 */

/** One job as `GET /cluster/backup` or `GET /cluster/backup/{id}` returns it. */
export type RawBackupJob = Record<string, unknown> & { id: string };

/** A guest as `GET /cluster/resources?type=vm` lists it: its VMID and, if the token sees it, its name. */
export interface NamedGuest {
  vmid: number;
  name?: string;
}

/** The cluster as the backup-job kind reads and writes it. */
export interface BackupJobPort {
  /** Every backup job (`GET /cluster/backup`, Sys.Audit on `/`). */
  listJobs(): Promise<RawBackupJob[]>;
  /** One job, or undefined when there is none with that id. */
  readJob(id: string): Promise<RawBackupJob | undefined>;
  /** The guests of the cluster with their names, to resolve a job's guest names. */
  guests(): Promise<NamedGuest[]>;
  /** `POST /cluster/backup` with `id` always set. */
  createJob(id: string, params: Readonly<Record<string, string>>): Promise<void>;
  /** `PUT /cluster/backup/{id}`: `set` replaces those values whole, `remove` goes as `delete`. */
  updateJob(id: string, set: Readonly<Record<string, string>>, remove: readonly string[]): Promise<void>;
  deleteJob(id: string): Promise<void>;
}
