/**
 * The HA kind's port: what its observe and its executor need from a cluster, in the core's
 * words. Declared here, implemented over the Proxmox API by `pve/kinds/ha-adapter.ts`. Failures
 * are the core's port errors (`core/port-errors.ts`): a refused privilege is a
 * `PermissionDeniedError`, a stale digest a `DigestConflictError`, every other refusal a
 * `PortError` with Proxmox's own text.
 */

/** The fields of an HA resource this kind manages, as Proxmox stores them (absent: not set). */
export interface HaFields {
  state?: string;
  max_restart?: number;
  max_relocate?: number;
  failback?: boolean;
  comment?: string;
}

/** One HA resource as read: its SID (`vm:100`), the managed fields, and whether it holds others (a group). */
export interface HaResource extends HaFields {
  sid: string;
}

/** One resource read with the digest of the whole `resources.cfg`. */
export interface HaRead {
  resource: HaResource;
  digest: string;
}

/** The cluster as the HA kind reads and writes it. */
export interface HaPort {
  /** Every HA resource (needs Sys.Audit on `/`). */
  listResources(): Promise<HaResource[]>;
  /** One resource and the file's digest, or undefined when the SID is not HA-managed. */
  readResource(sid: string): Promise<HaRead | undefined>;
  createResource(sid: string, fields: HaFields): Promise<void>;
  /** Sets `fields`, deletes `remove`, and refuses (DigestConflictError) when the file moved past `digest`. */
  updateResource(sid: string, fields: HaFields, remove: readonly string[], digest: string): Promise<void>;
  deleteResource(sid: string): Promise<void>;
}
