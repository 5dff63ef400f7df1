/**
 * The HA kind's port (`core/kinds/ha/port.ts`) over the Proxmox API (pve-ha-manager
 * `API2/HA/Resources.pm`; docs/proxmox-behaviour.md, "HA resources"). Every call is synchronous
 * (no task). A resource's read carries the digest of the whole `resources.cfg`, which its update
 * sends back. Errors are the port's (`../to-port-error.ts`).
 */
import { z } from 'zod';
import type { HaFields, HaPort, HaRead, HaResource } from '../../core/kinds/ha/port.js';
import type { PveClient } from '../client.js';
import { PveError } from '../errors.js';
import { portCall } from '../to-port-error.js';

const Resource = z.looseObject({
  sid: z.string(),
  digest: z.string().optional(),
  state: z.string().optional(),
  max_restart: z.coerce.number().int().optional(),
  max_relocate: z.coerce.number().int().optional(),
  failback: z.union([z.boolean(), z.coerce.number()]).optional(),
  comment: z.string().optional(),
});

/** `die "no such resource '$sid'\n"` (`$api_copy_config`). */
const NOT_FOUND_RE = /^no such resource '.*'$/;

function toResource(raw: z.infer<typeof Resource>): HaResource {
  return {
    sid: raw.sid,
    ...(raw.state !== undefined ? { state: raw.state } : {}),
    ...(raw.max_restart !== undefined ? { max_restart: raw.max_restart } : {}),
    ...(raw.max_relocate !== undefined ? { max_relocate: raw.max_relocate } : {}),
    ...(raw.failback !== undefined ? { failback: raw.failback === true || raw.failback === 1 } : {}),
    ...(raw.comment !== undefined ? { comment: raw.comment } : {}),
  };
}

/** The fields as form parameters (booleans as 0/1). */
function params(fields: HaFields): Record<string, string | number | undefined> {
  return {
    state: fields.state,
    max_restart: fields.max_restart,
    max_relocate: fields.max_relocate,
    failback: fields.failback === undefined ? undefined : fields.failback ? 1 : 0,
    comment: fields.comment,
  };
}

export class HaAdapter implements HaPort {
  readonly #client: PveClient;

  constructor(client: PveClient) {
    this.#client = client;
  }

  listResources(): Promise<HaResource[]> {
    return portCall(async () =>
      z
        .array(Resource)
        .parse(await this.#client.request('GET', '/cluster/ha/resources'))
        .map(toResource),
    );
  }

  readResource(sid: string): Promise<HaRead | undefined> {
    return portCall(async () => {
      let raw: unknown;
      try {
        raw = await this.#client.request('GET', `/cluster/ha/resources/${encodeURIComponent(sid)}`);
      } catch (err) {
        if (err instanceof PveError && NOT_FOUND_RE.test(err.message)) return undefined;
        throw err;
      }
      const parsed = Resource.parse(raw);
      return { resource: toResource(parsed), digest: parsed.digest ?? '' };
    });
  }

  createResource(sid: string, fields: HaFields): Promise<void> {
    return portCall(async () => {
      await this.#client.request('POST', '/cluster/ha/resources', { sid, ...params(fields) });
    });
  }

  updateResource(sid: string, fields: HaFields, remove: readonly string[], digest: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('PUT', `/cluster/ha/resources/${encodeURIComponent(sid)}`, {
        ...params(fields),
        delete: remove.length > 0 ? remove.join(',') : undefined,
        digest: digest === '' ? undefined : digest,
      });
    });
  }

  deleteResource(sid: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('DELETE', `/cluster/ha/resources/${encodeURIComponent(sid)}`);
    });
  }
}
