/** The access kind's route: a token's effective permissions (which token it may ask about is decided inside). */
import { anyone, route, type RouteModule } from '../../route.js';
import { getPermissions } from './get-permissions.js';

/** The access kind. */
export const accessRoutes: RouteModule = {
  name: 'access',
  routes: [route('GET', '/access/permissions', anyone, getPermissions)],
};
