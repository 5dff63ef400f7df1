/** The pool kind's routes: the pools a token may audit (filtered inside), and one pool. */
import { anyone, poolAudit, route, type RouteModule } from '../../route.js';
import { listPools, readPool } from './handlers.js';

/** The pool kind. */
export const poolRoutes: RouteModule = {
  name: 'pool',
  routes: [route('GET', '/pools', anyone, listPools), route('GET', '/pools/{poolid}', poolAudit, readPool)],
};
