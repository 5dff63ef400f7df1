/**
 * The pool kind's routes: the pools a token may audit (filtered inside), one pool, and the
 * synchronous writes, each in its current form and its deprecated `/pools/{poolid}` form.
 */
import { anyone, poolAllocate, poolAudit, route, type RouteModule } from '../../route.js';
import { createPool, deletePool, listPools, readPool, updatePool } from './handlers.js';

/** The pool kind. */
export const poolRoutes: RouteModule = {
  name: 'pool',
  routes: [
    route('GET', '/pools', anyone, listPools),
    route('GET', '/pools/{poolid}', poolAudit, readPool),
    route('POST', '/pools', poolAllocate, createPool, true),
    route('PUT', '/pools', poolAllocate, updatePool, true),
    route('PUT', '/pools/{poolid}', poolAllocate, updatePool, true),
    route('DELETE', '/pools', poolAllocate, deletePool, true),
    route('DELETE', '/pools/{poolid}', poolAllocate, deletePool, true),
  ],
};
