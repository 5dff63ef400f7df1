/**
 * The backup-job kind's port (`core/kinds/backup/port.ts`) over the Proxmox API (pve-manager
 * `API2/Backup.pm`; docs/proxmox-behaviour.md, "Backup jobs"). Every call is synchronous under
 * the `jobs.cfg` lock, with no task and no digest. `POST` always sends `id` (without one Proxmox
 * makes up a UUID); an unknown job reads as `400 {"id":"No such job '<id>'"}`. Errors are the
 * port's (`../to-port-error.ts`).
 */
import { z } from 'zod';
import type { BackupJobPort, NamedGuest, RawBackupJob } from '../../core/kinds/backup/port.js';
import type { PveClient } from '../client.js';
import { PveParameterError } from '../errors.js';
import { portCall } from '../to-port-error.js';

const Job = z.looseObject({ id: z.string() });
const Resource = z.looseObject({ type: z.string(), vmid: z.coerce.number().int().optional(), name: z.string().optional() });

function path(id: string): string {
  return `/cluster/backup/${encodeURIComponent(id)}`;
}

export class BackupJobAdapter implements BackupJobPort {
  readonly #client: PveClient;

  constructor(client: PveClient) {
    this.#client = client;
  }

  listJobs(): Promise<RawBackupJob[]> {
    return portCall(async () => z.array(Job).parse(await this.#client.request('GET', '/cluster/backup')) as RawBackupJob[]);
  }

  readJob(id: string): Promise<RawBackupJob | undefined> {
    return portCall(async () => {
      try {
        return { ...(Job.parse(await this.#client.request('GET', path(id))) as RawBackupJob), id };
      } catch (err) {
        if (err instanceof PveParameterError && /^No such job /.test(err.errors.id ?? '')) return undefined;
        throw err;
      }
    });
  }

  guests(): Promise<NamedGuest[]> {
    return portCall(async () => {
      const entries = z.array(Resource).parse(await this.#client.request('GET', '/cluster/resources', { type: 'vm' }));
      return entries.flatMap((e) =>
        (e.type === 'qemu' || e.type === 'lxc') && e.vmid !== undefined
          ? [{ vmid: e.vmid, ...(e.name !== undefined ? { name: e.name } : {}) }]
          : [],
      );
    });
  }

  createJob(id: string, params: Readonly<Record<string, string>>): Promise<void> {
    return portCall(async () => {
      await this.#client.request('POST', '/cluster/backup', { ...params, id });
    });
  }

  updateJob(id: string, set: Readonly<Record<string, string>>, remove: readonly string[]): Promise<void> {
    return portCall(async () => {
      await this.#client.request('PUT', path(id), { ...set, ...(remove.length > 0 ? { delete: remove.join(',') } : {}) });
    });
  }

  deleteJob(id: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('DELETE', path(id));
    });
  }
}
