/**
 * The API surface: every kind's route module, one import and one line each, and the lookup the
 * server runs on them. A new kind of object adds its module under `kinds/` and a line here;
 * test/sim/route-modules.test.ts checks that the modules together serve the extracted schema,
 * each method once, each with a permission check.
 */
import { accessRoutes } from './kinds/access/routes.js';
import { backupRoutes } from './kinds/backup/routes.js';
import { clusterRoutes } from './kinds/cluster/routes.js';
import { containerRoutes } from './kinds/container/routes.js';
import { firewallRoutes } from './kinds/firewall/routes.js';
import { haRoutes } from './kinds/ha/routes.js';
import { networkRoutes } from './kinds/network/routes.js';
import { poolRoutes } from './kinds/pool/routes.js';
import { snapshotRoutes } from './kinds/snapshot/routes.js';
import { storageRoutes } from './kinds/storage/routes.js';
import { taskRoutes } from './kinds/task/routes.js';
import { vmRoutes } from './kinds/vm/routes.js';
import type { Route, RouteModule } from './route.js';

/** Every kind the simulator serves. */
export const ROUTE_MODULES: readonly RouteModule[] = [
  clusterRoutes,
  taskRoutes,
  accessRoutes,
  storageRoutes,
  poolRoutes,
  backupRoutes,
  vmRoutes,
  containerRoutes,
  haRoutes,
  firewallRoutes,
  networkRoutes,
  snapshotRoutes,
];

/** Every implemented method. */
const ROUTES: readonly Route[] = ROUTE_MODULES.flatMap((module) => module.routes);

/** A matched route with its decoded path parameters. */
export interface RouteMatch {
  route: Route;
  pathParams: Record<string, string>;
}

/**
 * The routes of each method and path length, in list order: a request is compared with the dozen
 * that could match rather than all of them, and the first that matches is the one the whole list
 * would have given. Built once per list of routes.
 */
const BUCKETS = new WeakMap<readonly Route[], Map<string, readonly Route[]>>();

function bucketsOf(routes: readonly Route[]): Map<string, readonly Route[]> {
  let buckets = BUCKETS.get(routes);
  if (!buckets) {
    const built = new Map<string, Route[]>();
    for (const route of routes) {
      const key = `${route.method} ${route.segments.length}`;
      const bucket = built.get(key);
      if (bucket) bucket.push(route);
      else built.set(key, [route]);
    }
    buckets = built;
    BUCKETS.set(routes, buckets);
  }
  return buckets;
}

/** Whether every literal segment of the template equals the request's. */
function literalsMatch(template: readonly string[], segments: readonly string[]): boolean {
  for (let i = 0; i < template.length; i++) {
    const pattern = template[i] as string;
    if (pattern.charCodeAt(0) !== 123 /* { */ && pattern !== segments[i]) return false;
  }
  return true;
}

/** Finds the route for a method and path (relative to `/api2/json`). */
export function matchRoute(method: string, segments: string[], routes: readonly Route[] = ROUTES): RouteMatch | undefined {
  const candidates = bucketsOf(routes).get(`${method} ${segments.length}`);
  if (!candidates) return undefined;
  for (const candidate of candidates) {
    if (!literalsMatch(candidate.segments, segments)) continue;
    const pathParams: Record<string, string> = {};
    for (let i = 0; i < segments.length; i++) {
      const pattern = candidate.segments[i] as string;
      if (pattern.charCodeAt(0) === 123) pathParams[pattern.slice(1, -1)] = segments[i] as string;
    }
    return { route: candidate, pathParams };
  }
  return undefined;
}
