/**
 * The per-guest reads both flavours serve alike, each made for one flavour of the table:
 * listings, `GET …/config` (pending merged unless `current=1`, or a snapshot), `GET …/pending`,
 * `GET …/status/current` and the directory indexes (docs/proxmox-api.md#config-reads,
 * #the-digest).
 */
import { canSeeGuest } from '../auth.js';
import { flag, param, type HandlerResult, type RequestContext } from '../context.js';
import { DieError, ParamError } from '../errors.js';
import type { Guest } from './guest.js';
import type { GuestFlavour } from './flavours.js';
import { pathGuest } from './path-guest.js';
import { haStatus } from '../kinds/ha/handlers.js';
import { CURRENT_FIELDS, guestStatus, LISTING_FULL_FIELDS } from './status.js';

/** Arms the operator edit of `editAfterNextRead` to land once this read is answered. */
function afterRead(ctx: RequestContext, guest: Guest): void {
  if (ctx.sim.hasArmedEdit(guest.vmid)) ctx.afterResponse(() => ctx.sim.fireArmedEdit(guest.vmid));
}

/** `GET /nodes/{node}/qemu` and `/lxc`: guests on that node the principal may audit. */
export function listGuests({ type }: GuestFlavour) {
  return (ctx: RequestContext): HandlerResult => {
    const node = param(ctx, 'node');
    const full = flag(ctx, 'full');
    const data: Record<string, unknown>[] = [];
    for (const guest of ctx.sim.guests.values()) {
      if (guest.type !== type || guest.node !== node || !canSeeGuest(ctx.principal, guest.vmid)) continue;
      const entry = guestStatus(guest);
      if (full) Object.assign(entry, LISTING_FULL_FIELDS[type](guest));
      data.push(entry);
    }
    return { data };
  };
}

/** `GET …/status/current`. */
export function getStatusCurrent({ type }: GuestFlavour) {
  return (ctx: RequestContext): HandlerResult => {
    const guest = pathGuest(ctx, type);
    const status = guestStatus(guest);
    status.ha = haStatus(ctx, type, guest.vmid);
    Object.assign(status, CURRENT_FIELDS[type](guest));
    return { data: status };
  };
}

/** `GET …/config`: `current=0` merges pending; `snapshot` reads a snapshot section. */
export function getConfig({ type }: GuestFlavour) {
  return (ctx: RequestContext): HandlerResult => {
    const snapshot = ctx.params.snapshot;
    const current = flag(ctx, 'current');
    if (snapshot && current) {
      const text = "cannot use 'snapshot' parameter with 'current'";
      throw new ParamError({ snapshot: text, current: text });
    }
    const guest = pathGuest(ctx, type);
    afterRead(ctx, guest);
    if (snapshot) {
      const view = guest.snapshotView(snapshot);
      if (!view) throw new DieError(`snapshot '${snapshot}' does not exist\n`);
      return { data: view };
    }
    return { json: guest.cachedJson(current ? 'config-current' : 'config', () => guest.configView(current)) };
  };
}

/** `GET …/pending`. */
export function getPending({ type }: GuestFlavour) {
  return (ctx: RequestContext): HandlerResult => {
    const guest = pathGuest(ctx, type);
    afterRead(ctx, guest);
    return { json: guest.cachedJson('pending', () => guest.pendingView()) };
  };
}

/**
 * `GET /nodes/{node}/qemu/{vmid}` and `/lxc/{vmid}` (`vmdiridx`, any user): qemu-server lists
 * the subdirectories without looking at the VM; pve-container loads the config first, so a
 * container that is not there is the missing-config error.
 */
export function guestIndex(flavour: GuestFlavour) {
  return (ctx: RequestContext): HandlerResult => {
    if (flavour.indexLoadsConfig) pathGuest(ctx, flavour.type);
    return { data: flavour.subdirs.map((subdir) => ({ subdir })) };
  };
}

/** `GET …/{vmid}/status` (`vmcmdidx`, any user): both load the config first ("test if VM exists"). */
export function statusIndex(flavour: GuestFlavour) {
  return (ctx: RequestContext): HandlerResult => {
    pathGuest(ctx, flavour.type);
    return { data: flavour.statusSubdirs.map((subdir) => ({ subdir })) };
  };
}
