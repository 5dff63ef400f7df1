/**
 * `GET /nodes/{node}/network` (pve-manager `API2/Network.pm`, `index`): any user may list a
 * node's interfaces; the simulator knows only bridges, so every type filter but `any_bridge`,
 * `any_local_bridge` and `bridge` lists nothing. A node without configured bridges has `vmbr0`
 * (docs/proxmox-behaviour.md RHS-7).
 */
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { ParamError } from '../../errors.js';

/** The type filters the schema allows that the simulator's bridges match. */
const BRIDGE_FILTERS = new Set(['bridge', 'any_bridge', 'any_local_bridge']);

/** The handler. */
export function listNetworks(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  if (!ctx.sim.nodes.includes(node)) throw new ParamError({ node: `no such node '${node}'` });
  const filter = ctx.params.type;
  if (filter !== undefined && !BRIDGE_FILTERS.has(filter)) return { data: [] };
  const data = ctx.sim.bridgesOn(node).map((iface, index) => ({
    iface,
    type: 'bridge',
    active: 1,
    exists: 1,
    autostart: 1,
    method: 'manual',
    method6: 'manual',
    families: ['inet'],
    priority: index + 1,
    bridge_ports: index === 0 ? 'eno1' : '',
    bridge_stp: 'off',
    bridge_fd: '0',
  }));
  return { data };
}
