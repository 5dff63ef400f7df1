/**
 * The pool kind's port (`core/kinds/pool/port.ts`) over the Proxmox API (pve-manager
 * `API2/Pool.pm`, `API2/Cluster.pm`; docs/proxmox-behaviour.md, "Resource pools"). Reads use
 * `GET /pools?poolid=` (members for any token, nested ids too) and fall back to the deprecated
 * `GET /pools/{poolid}` only on a server too old to know the parameter. Writes are synchronous
 * (`PUT /pools`, `POST /pools`, `DELETE /pools?poolid=`): no task, no digest. Errors are the
 * port's (`../to-port-error.ts`).
 */
import { z } from 'zod';
import type { ListedMembership, ListedPool, PoolDetail, PoolPort, PoolUpdate } from '../../core/kinds/pool/port.js';
import type { PveClient } from '../client.js';
import { PveError, PveParameterError } from '../errors.js';
import { portCall } from '../to-port-error.js';

const PoolEntry = z.looseObject({ poolid: z.string(), comment: z.string().optional() });
const Member = z.looseObject({ type: z.string(), vmid: z.coerce.number().int().optional(), storage: z.string().optional() });
const PoolInfo = z.looseObject({ poolid: z.string().optional(), comment: z.string().optional(), members: z.array(Member).default([]) });
const Resource = z.looseObject({ type: z.string(), vmid: z.coerce.number().int().optional(), pool: z.string().optional() });

/** `die "pool '<id>' does not exist\n"` (`index`, `update_pool`, `delete_pool`). */
const NOT_FOUND_RE = /^pool '.*' does not exist$/;

function notFound(err: unknown): boolean {
  return err instanceof PveError && NOT_FOUND_RE.test(err.message);
}

export class PoolAdapter implements PoolPort {
  readonly #client: PveClient;

  constructor(client: PveClient) {
    this.#client = client;
  }

  listPools(): Promise<ListedPool[]> {
    return portCall(async () => {
      const entries = z.array(PoolEntry).parse(await this.#client.request('GET', '/pools'));
      return entries.map((e) => ({ poolid: e.poolid, ...(e.comment !== undefined ? { comment: e.comment } : {}) }));
    });
  }

  readPool(poolid: string): Promise<PoolDetail | undefined> {
    return portCall(async () => {
      let raw: unknown;
      try {
        const list = z.array(z.unknown()).parse(await this.#client.request('GET', '/pools', { poolid }));
        raw = list[0];
      } catch (err) {
        if (notFound(err)) return undefined;
        // Before nested pools (PVE 8.1), `GET /pools` took no `poolid`: the deprecated form, which needs Pool.Audit.
        if (!(err instanceof PveParameterError) || err.errors.poolid === undefined) throw err;
        try {
          raw = await this.#client.request('GET', `/pools/${encodeURIComponent(poolid)}`);
        } catch (inner) {
          if (notFound(inner)) return undefined;
          throw inner;
        }
      }
      if (raw === undefined) return undefined;
      const info = PoolInfo.parse(raw);
      const vmids = info.members.flatMap((m) => (m.type !== 'storage' && m.vmid !== undefined ? [m.vmid] : [])).sort((a, b) => a - b);
      const storage = info.members.flatMap((m) => (m.type === 'storage' && m.storage !== undefined ? [m.storage] : [])).sort();
      return { poolid, ...(info.comment !== undefined ? { comment: info.comment } : {}), vmids, storage };
    });
  }

  memberships(): Promise<ListedMembership[]> {
    return portCall(async () => {
      const entries = z.array(Resource).parse(await this.#client.request('GET', '/cluster/resources', { type: 'vm' }));
      return entries.flatMap((e) =>
        (e.type === 'qemu' || e.type === 'lxc') && e.vmid !== undefined
          ? [{ vmid: e.vmid, ...(e.pool !== undefined ? { pool: e.pool } : {}) }]
          : [],
      );
    });
  }

  auditsEveryPool(): Promise<boolean> {
    return portCall(async () => {
      const tree = z
        .record(z.string(), z.record(z.string(), z.coerce.number()))
        .parse(await this.#client.request('GET', '/access/permissions', { path: '/pool' }));
      return tree['/pool']?.['Pool.Audit'] === 1;
    });
  }

  createPool(poolid: string, comment?: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('POST', '/pools', { poolid, comment });
    });
  }

  updatePool(poolid: string, update: PoolUpdate): Promise<void> {
    return portCall(async () => {
      await this.#client.request('PUT', '/pools', {
        poolid,
        comment: update.comment,
        vms: update.vms === undefined ? undefined : update.vms.join(','),
        delete: update.delete ? 1 : undefined,
        'allow-move': update.allowMove ? 1 : undefined,
      });
    });
  }

  deletePool(poolid: string): Promise<void> {
    return portCall(async () => {
      await this.#client.request('DELETE', '/pools', { poolid });
    });
  }
}
