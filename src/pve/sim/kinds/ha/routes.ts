/**
 * The HA resource kind's routes (pve-ha-manager `API2/HA/Resources.pm`): the list and one
 * resource need Sys.Audit on `/`, every write Sys.Console on `/`; all are synchronous.
 */
import { hasPrivilege } from '../../auth.js';
import { PermissionError } from '../../errors.js';
import { rootAudit, route, type RouteModule } from '../../route.js';
import { createResource, deleteResource, listResources, readResource, updateResource } from './handlers.js';

/** `['perm', '/', ['Sys.Console']]`: the writes. */
const rootConsole: Parameters<typeof route>[2] = (principal) => {
  if (!hasPrivilege(principal, '/', 'Sys.Console')) throw new PermissionError('/, Sys.Console');
};

/** The HA resource kind. */
export const haRoutes: RouteModule = {
  name: 'ha',
  routes: [
    route('GET', '/cluster/ha/resources', rootAudit, listResources),
    route('GET', '/cluster/ha/resources/{sid}', rootAudit, readResource),
    route('POST', '/cluster/ha/resources', rootConsole, createResource, true),
    route('PUT', '/cluster/ha/resources/{sid}', rootConsole, updateResource, true),
    route('DELETE', '/cluster/ha/resources/{sid}', rootConsole, deleteResource, true),
  ],
};
