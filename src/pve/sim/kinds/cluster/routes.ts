/** The cluster kind's routes: version, nodes, the cluster's status and resources, the next free VMID. */
import { anyone, nodeAudit, rootAudit, route, type RouteModule } from '../../route.js';
import { getClusterResources, getClusterStatus, getNextId, getNodeStatus, getNodes, getVersion } from './handlers.js';

/** The cluster kind. */
export const clusterRoutes: RouteModule = {
  name: 'cluster',
  routes: [
    route('GET', '/version', anyone, getVersion),
    route('GET', '/nodes', anyone, getNodes),
    route('GET', '/nodes/{node}/status', nodeAudit, getNodeStatus),
    route('GET', '/cluster/status', rootAudit, getClusterStatus),
    route('GET', '/cluster/resources', anyone, getClusterResources),
    route('GET', '/cluster/nextid', anyone, getNextId),
  ],
};
