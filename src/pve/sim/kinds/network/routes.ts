/** The network kind's routes: a node's interfaces, as `GET /nodes/{node}/network` lists them. */
import { anyone, route, type RouteModule } from '../../route.js';
import { listNetworks } from './handlers.js';

/** The network kind. */
export const networkRoutes: RouteModule = {
  name: 'network',
  routes: [route('GET', '/nodes/{node}/network', anyone, listNetworks)],
};
