/**
 * A `PUT`/`POST …/config` request of either flavour split into what `config-update/` applies: the
 * values to set, `delete`, `revert`, `force`, the digest and `skiplock`. The meta parameters are
 * the ones both flavours' schemas declare besides config options.
 */
import { flag, type RequestContext } from '../context.js';
import type { ConfigUpdate } from '../config-update/common.js';

const META = new Set(['node', 'vmid', 'delete', 'revert', 'force', 'digest', 'skiplock', 'background_delay', 'import-working-storage']);

/** Splits validated request params into the update's parts. */
export function configUpdateOf(ctx: RequestContext): ConfigUpdate {
  const set: Record<string, string> = {};
  for (const [key, value] of Object.entries(ctx.params)) if (!META.has(key)) set[key] = value;
  return {
    set,
    ...(ctx.params.delete !== undefined ? { delete: ctx.params.delete } : {}),
    ...(ctx.params.revert !== undefined ? { revert: ctx.params.revert } : {}),
    force: flag(ctx, 'force'),
    ...(ctx.params.digest ? { digest: ctx.params.digest } : {}),
    skiplock: flag(ctx, 'skiplock'),
  };
}
