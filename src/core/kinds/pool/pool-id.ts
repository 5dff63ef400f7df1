/**
 * A pool's id as Proxmox accepts it: pve-access-control `AccessControl.pm`, `verify_poolname`
 * (the `pve-poolid` format: up to three `/`-separated levels of `[A-Za-z0-9.-_]`), and pve-manager
 * `API2/Pool.pm`, `create_pool` (each level, the leaf checked at creation, starts with a letter).
 * The messages are Proxmox's own.
 */
import { z } from 'zod';

const POOLID_RE = /^[A-Za-z0-9.\-_]+(?:\/[A-Za-z0-9.\-_]+){0,2}$/;

/** What `verify_poolname` says of `id`, or undefined when it accepts it. */
export function poolIdProblem(id: string): string | undefined {
  if (id.split('/').length > 3) return `pool name '${id}' nested too deeply (max levels = 3)`;
  if (!POOLID_RE.test(id)) return `pool name '${id}' contains invalid characters`;
  return undefined;
}

/** What `create_pool` adds: the leaf (and so every level created through the API) starts with a letter. */
export function newPoolIdProblem(id: string): string | undefined {
  const problem = poolIdProblem(id);
  if (problem) return problem;
  if (!/^[A-Za-z]/.test(id.split('/').at(-1) as string)) return 'pool name must start with a letter';
  return undefined;
}

/** A pool id a guest may name (`verify_poolname`). */
export const PoolId = z.string().superRefine((id, ctx) => {
  const problem = poolIdProblem(id);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** The id of a pool a document declares (and so may create). */
export const NewPoolId = z.string().superRefine((id, ctx) => {
  const problem = newPoolIdProblem(id);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
