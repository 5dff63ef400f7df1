/**
 * The guest firewall's routes under `/nodes/{node}/{qemu|lxc}/{vmid}/firewall/` (pve-firewall
 * `API2/Firewall/VM.pm`, `Rules.pm`, `IPSet.pm`, `Aliases.pm`): reads need VM.Audit on
 * `/vms/{vmid}`, writes VM.Config.Network (`rules_audit_permissions`, `rules_modify_permissions`);
 * all are synchronous. One module serves both guest flavours: the file is the VMID's either way.
 */
import { hasPrivilege } from '../../auth.js';
import { PermissionError } from '../../errors.js';
import { guestAudit, rootAudit, route, type Route, type RouteModule } from '../../route.js';
import * as h from './handlers.js';
import { flavourOf } from '../../../../core/guest-flavours.js';

/** `['perm', '/vms/{vmid}', ['VM.Config.Network']]`. */
const network: Parameters<typeof route>[2] = (principal, params) => {
  const path = `/vms/${String(params.vmid)}`;
  if (!hasPrivilege(principal, path, 'VM.Config.Network')) throw new PermissionError(`${path}, VM.Config.Network`);
};

function routesOf(kind: 'qemu' | 'lxc'): Route[] {
  const base = `/nodes/{node}/${kind}/{vmid}/firewall`;
  const env = flavourOf(kind).resourcePrefix;
  return [
    route('GET', `${base}/options`, guestAudit, h.getOptions),
    route('PUT', `${base}/options`, network, h.setOptions, true),
    route('GET', `${base}/rules`, guestAudit, h.getRules),
    route('POST', `${base}/rules`, network, h.createRule(env), true),
    route('GET', `${base}/rules/{pos}`, guestAudit, h.getRule),
    route('PUT', `${base}/rules/{pos}`, network, h.updateRule(env), true),
    route('DELETE', `${base}/rules/{pos}`, network, h.deleteRule, true),
    route('GET', `${base}/ipset`, guestAudit, h.listIpsets),
    route('POST', `${base}/ipset`, network, h.createIpset, true),
    route('GET', `${base}/ipset/{name}`, guestAudit, h.getIpset),
    route('POST', `${base}/ipset/{name}`, network, h.createIp, true),
    route('DELETE', `${base}/ipset/{name}`, network, h.deleteIpset, true),
    route('GET', `${base}/ipset/{name}/{cidr}`, guestAudit, h.readIp),
    route('PUT', `${base}/ipset/{name}/{cidr}`, network, h.updateIp, true),
    route('DELETE', `${base}/ipset/{name}/{cidr}`, network, h.removeIp, true),
    route('GET', `${base}/aliases`, guestAudit, h.getAliases),
    route('POST', `${base}/aliases`, network, h.createAlias, true),
    route('GET', `${base}/aliases/{name}`, guestAudit, h.readAlias),
    route('PUT', `${base}/aliases/{name}`, network, h.updateAlias, true),
    route('DELETE', `${base}/aliases/{name}`, network, h.removeAlias, true),
  ];
}

/**
 * The guest firewall kind, and the reads of the datacenter's IPsets and aliases a guest's rules
 * may name (`ClusterIPSetList`, `ClusterAliases`: Sys.Audit on `/`, `rules_audit_permissions`).
 */
export const firewallRoutes: RouteModule = {
  name: 'firewall',
  routes: [
    ...routesOf('qemu'),
    ...routesOf('lxc'),
    route('GET', '/cluster/firewall/ipset', rootAudit, h.listClusterIpsets),
    route('GET', '/cluster/firewall/aliases', rootAudit, h.getClusterAliases),
  ],
};
