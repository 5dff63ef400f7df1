/**
 * The task kind's routes. Anyone may call them: who sees which task is decided inside, as
 * Proxmox's `$check_task_user` does (docs/proxmox-api.md#tasks-and-upids).
 */
import { anyone, route, type RouteModule } from '../../route.js';
import { getTaskLog, getTaskStatus, listClusterTasks, listTasks } from './handlers.js';

/** The task kind. */
export const taskRoutes: RouteModule = {
  name: 'task',
  routes: [
    route('GET', '/cluster/tasks', anyone, listClusterTasks),
    route('GET', '/nodes/{node}/tasks', anyone, listTasks),
    route('GET', '/nodes/{node}/tasks/{upid}/status', anyone, getTaskStatus),
    route('GET', '/nodes/{node}/tasks/{upid}/log', anyone, getTaskLog),
  ],
};
