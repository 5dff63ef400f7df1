/**
 * The HA resource kind's handlers (pve-ha-manager `API2/HA/Resources.pm` `index`, `read`,
 * `create`, `update`, `delete`, with `HA/Config.pm` `parse_sid`, `update_resources_config`,
 * `delete_service_from_config` and the `PVEVM.pm`/`PVECT.pm` plugins' `verify_name` and `exists`).
 * Synchronous, no task. Every write runs under the HA domain lock and dies as `lock_ha_domain`
 * words it (`<errmsg>: <why>`); an update carries the digest of the whole `resources.cfg`, so
 * another resource's edit makes it stale. HA groups count as migrated to rules (PVE 9): `group`
 * is refused on writes and left out of reads (docs/proxmox-behaviour.md, HA-1…).
 */
import { splitList } from '../../../../core/proxmox-params.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { ApiError, DieError } from '../../errors.js';
import { HA_OPTIONS, haConfig, type SimHaConfig } from './state.js';
import { haManager, haSid } from './manager.js';

/** `parse_sid`: `100` → `vm:100` or `ct:100` by the guest's type; `type:name` as written. */
function parseSid(ctx: RequestContext, raw: string): { sid: string; type: string; name: string } {
  if (/^\d+$/.test(raw)) {
    const guest = ctx.sim.guests.get(Number(raw));
    if (!guest) throw new DieError(`unable to detect SID from VMID - VM/CT ${raw} does not exist\n`);
    const type = guest.type === 'lxc' ? 'ct' : 'vm';
    return { sid: `${type}:${raw}`, type, name: raw };
  }
  const match = /^(\S+?):(\S+)$/.exec(raw);
  if (!match) throw new DieError(`unable to parse service id '${raw}'\n`);
  return { sid: raw, type: match[1] as string, name: match[2] as string };
}

/** `$api_copy_config` (groups migrated: no `group`). */
function copyConfig(config: SimHaConfig, sid: string): Record<string, unknown> {
  const resource = config.ids.get(sid);
  if (!resource) throw new DieError(`no such resource '${sid}'\n`);
  const out: Record<string, unknown> = { ...resource.options, type: resource.type, sid, digest: config.digest() };
  delete out.group;
  for (const key of ['failback', 'max_restart', 'max_relocate']) if (out[key] !== undefined) out[key] = Number(out[key]);
  return out;
}

/** `GET /cluster/ha/resources` (`index`), optionally of one `type`. */
export function listResources(ctx: RequestContext): HandlerResult {
  const config = haConfig(ctx.sim);
  const data: Record<string, unknown>[] = [];
  for (const [sid, resource] of config.ids) {
    if (ctx.params.type !== undefined && ctx.params.type !== resource.type) continue;
    data.push(copyConfig(config, sid));
  }
  return { data };
}

/** `GET /cluster/ha/resources/{sid}` (`read`): the resource and the file's digest. */
export function readResource(ctx: RequestContext): HandlerResult {
  const config = haConfig(ctx.sim);
  const { sid } = parseSid(ctx, param(ctx, 'sid'));
  const data = copyConfig(config, sid);
  config.afterRead.shift()?.();
  return { data };
}

/** The options given, as SectionConfig stores them (booleans `0`/`1`). */
function givenOptions(ctx: RequestContext): Record<string, string> {
  const options: Record<string, string> = {};
  for (const key of HA_OPTIONS) {
    const value = ctx.params[key];
    if (value !== undefined) options[key] = value;
  }
  return options;
}

/** `lock_ha_domain($code, $errmsg)`: a refusal inside dies as `<errmsg>: <why>`. */
function underHaLock<T>(errmsg: string, code: () => T): T {
  try {
    return code();
  } catch (err) {
    if (err instanceof ApiError) throw new DieError(`${errmsg}: ${err.message}`);
    throw err;
  }
}

/** The plugin's `verify_name` and `exists` (`PVEVM.pm`, `PVECT.pm`). */
function checkGuest(ctx: RequestContext, sid: string, type: string, name: string): void {
  if (type !== 'vm' && type !== 'ct') throw new DieError(`no such resource type '${type}'\n`);
  if (!/^[1-9][0-9]+$/.test(name)) throw new DieError('invalid VMID\n');
  const guest = ctx.sim.guests.get(Number(name));
  if (!guest) throw new DieError(`resource '${sid}' does not exist in cluster\n`);
  if (type === 'vm' && guest.type !== 'qemu') throw new DieError(`resource '${sid}' - guest with ID ${name} is not a VM\n`);
  if (type === 'ct' && guest.type !== 'lxc') throw new DieError(`resource '${sid}' - guest with ID ${name} is not a container\n`);
}

function checkType(ctx: RequestContext, type: string): void {
  const given = ctx.params.type;
  if (given !== undefined && given !== '' && given !== type) throw new DieError('types does not match\n');
}

/** `POST /cluster/ha/resources` (`create`). */
export function createResource(ctx: RequestContext): HandlerResult {
  const { sid, type, name } = parseSid(ctx, param(ctx, 'sid'));
  checkType(ctx, type);
  if (ctx.params.group !== undefined) throw new DieError("invalid parameter 'group': ha groups have been migrated to rules\n");
  checkGuest(ctx, sid, type, name);
  const options = givenOptions(ctx);
  const config = haConfig(ctx.sim);
  underHaLock('create resource failed', () => {
    if (config.ids.has(sid)) throw new DieError(`resource ID '${sid}' already defined\n`);
    config.ids.set(sid, { type, options });
  });
  return { data: null };
}

/** `check_service_state`: a service in `error` takes only `state: disabled`. */
function checkServiceState(config: SimHaConfig, sid: string, requested: string | undefined): void {
  if (!config.errorState.has(sid) || !config.ids.has(sid)) return;
  if (requested === 'disabled') return;
  throw new DieError(`service '${sid}' in error state, must be disabled and fixed first\n`);
}

/** `PUT /cluster/ha/resources/{sid}` (`update`): the digest covers the whole file. */
export function updateResource(ctx: RequestContext): HandlerResult {
  const { sid, type } = parseSid(ctx, param(ctx, 'sid'));
  checkType(ctx, type);
  if (ctx.params.group !== undefined) throw new DieError("invalid parameter 'group': ha groups have been migrated to rules\n");
  const config = haConfig(ctx.sim);
  checkServiceState(config, sid, ctx.params.state);
  underHaLock('update resources config failed', () => {
    const digest = ctx.params.digest;
    // `assert_if_modified`: only a digest given is compared.
    if (digest && digest !== config.digest())
      throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
    const resource = config.ids.get(sid);
    if (!resource) throw new DieError(`no such resource '${sid}'\n`);
    const options = { ...resource.options, ...givenOptions(ctx) };
    for (const key of splitList(ctx.params.delete ?? '')) {
      if (!(HA_OPTIONS as readonly string[]).includes(key)) throw new DieError(`no such option '${key}'\n`);
      delete options[key];
    }
    resource.options = options;
  });
  return { data: null };
}

/** `DELETE /cluster/ha/resources/{sid}` (`delete`): only a configured resource. */
export function deleteResource(ctx: RequestContext): HandlerResult {
  const { sid } = parseSid(ctx, param(ctx, 'sid'));
  const config = haConfig(ctx.sim);
  if (!config.ids.has(sid)) throw new DieError(`cannot delete service '${sid}', not HA managed!\n`);
  config.ids.delete(sid);
  config.errorState.delete(sid);
  haManager(ctx.sim).serviceState.delete(sid);
  return { data: null };
}

/**
 * The `hastate` `/cluster/resources` shows for a guest (pve-manager `API2/Cluster.pm`,
 * `resources`): the manager's service state, else the configured one. The simulated manager is
 * current unless a request is queued (`kinds/ha/manager.ts` keeps its service state): `error` when set, `stopped` for `disabled`, `ignored` (not in the manager
 * status, so the configured state), else `started`. Undefined: not HA-managed.
 */
export function haState(ctx: RequestContext, type: 'qemu' | 'lxc', vmid: number): string | undefined {
  const config = haConfig(ctx.sim);
  const sid = `${type === 'lxc' ? 'ct' : 'vm'}:${vmid}`;
  const resource = config.ids.get(sid);
  if (!resource) return undefined;
  if (config.errorState.has(sid)) return 'error';
  const managed = haManager(ctx.sim).serviceState.get(sid);
  if (managed !== undefined) return managed;
  const state = resource.options.state;
  if (state === 'ignored') return 'ignored';
  return state === 'stopped' || state === 'disabled' ? 'stopped' : 'started';
}

/**
 * `status/current`'s `ha` (`HA/Config.pm`, `get_service_status`): `managed: 1` and the manager's
 * service state for an HA-managed guest (`ignored` counts as not managed), else `managed: 0`.
 */
export function haStatus(ctx: RequestContext, type: 'qemu' | 'lxc', vmid: number): Record<string, unknown> {
  if (!haSid(ctx.sim, type, vmid)) return { managed: 0 };
  return { managed: 1, state: haState(ctx, type, vmid) };
}
