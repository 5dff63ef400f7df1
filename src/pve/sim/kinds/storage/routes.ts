/** The storage kind's routes: a node's storages (filtered inside) and a storage's content. */
import { anyone, route, storageAudit, type RouteModule } from '../../route.js';
import { listStorageContent, listStorages } from './handlers.js';

/** The storage kind. */
export const storageRoutes: RouteModule = {
  name: 'storage',
  routes: [
    route('GET', '/nodes/{node}/storage', anyone, listStorages),
    route('GET', '/nodes/{node}/storage/{storage}/content', storageAudit, listStorageContent),
  ],
};
