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

/** Finds the route for a method and path (relative to `/api2/json`). */
export function matchRoute(method: string, segments: string[], routes: readonly Route[] = ROUTES): RouteMatch | undefined {
  for (const candidate of routes) {
    if (candidate.method !== method || candidate.segments.length !== segments.length) continue;
    const pathParams: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < segments.length; i++) {
      const pattern = candidate.segments[i] as string;
      const actual = segments[i] as string;
      if (pattern.startsWith('{')) pathParams[pattern.slice(1, -1)] = actual;
      else if (pattern !== actual) {
        ok = false;
        break;
      }
    }
    if (ok) return { route: candidate, pathParams };
  }
  return undefined;
}
