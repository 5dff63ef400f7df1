/**
 * The `PVE::HA::Config::vm_is_ha_managed` branch of the power endpoints (qemu-server
 * `API2/Qemu.pm` `vm_start`, `vm_stop`, `vm_shutdown`; pve-container `API2/LXC/Status.pm`
 * `vm_start`, `vm_stop`, `vm_shutdown`): on an HA-managed guest the request is handed to the HA
 * manager in a `hastart`/`hastop` task that ends as soon as the request is queued, before the
 * guest changes state (docs/proxmox-behaviour.md, HAP-…).
 */
import type { HandlerResult, RequestContext } from '../../context.js';
import { ParamError } from '../../errors.js';
import { TaskFailure } from '../../tasks.js';
import type { GuestFlavour } from '../../guest/flavours.js';
import { haConfig } from './state.js';
import { haManager, haSid } from './manager.js';

/**
 * The HA branch of `status/{action}`, or undefined when the guest is not HA-managed (the normal
 * handler goes on). Called after each endpoint's checks that come before the branch.
 */
export function haPower(
  ctx: RequestContext,
  flavour: GuestFlavour,
  action: 'start' | 'stop' | 'shutdown',
  node: string,
  vmid: number,
): HandlerResult | undefined {
  const sid = haSid(ctx.sim, flavour.type, vmid);
  if (!sid) return undefined;
  if (action === 'stop' && ctx.params['overrule-shutdown'] !== undefined && ctx.params['overrule-shutdown'] !== '0') {
    throw new ParamError({ 'overrule-shutdown': 'Not applicable for HA resources.' });
  }
  // `vm_stop` hands over a hard stop (`crm-command stop <sid> 0`); `vm_shutdown` its timeout, 60 s by default.
  const timeout = action === 'stop' ? 0 : action === 'shutdown' ? Number(ctx.params.timeout ?? 60) : undefined;
  const verb = action === 'start' ? 'start' : 'stop';
  const task = ctx.startTask(node, `ha${verb}`, String(vmid), (log) => {
    log.log(`Requesting HA ${verb} for ${flavour.label} ${vmid}`);
    // `ha-manager set` and `ha-manager crm-command stop` both run `check_service_state` first.
    if (haConfig(ctx.sim).errorState.has(sid)) {
      throw new TaskFailure(`service '${sid}' in error state, must be disabled and fixed first`);
    }
    haManager(ctx.sim).request(sid, { action: verb, ...(timeout !== undefined ? { timeout } : {}) });
  });
  return { data: task.upid };
}
