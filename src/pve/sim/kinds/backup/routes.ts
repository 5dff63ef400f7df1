/**
 * The backup-job kind's routes (pve-manager `API2/Backup.pm`): the job list and one job, read
 * with Sys.Audit on `/`, and the synchronous writes, each checked for Sys.Modify on `/` before
 * the handler runs.
 */
import { hasPrivilege, type Principal } from '../../auth.js';
import { PermissionError } from '../../errors.js';
import { rootAudit, route, type RouteModule } from '../../route.js';
import { createJob, deleteJob, listJobs, readJob, updateJob } from './handlers.js';

/** `['perm', '/', ['Sys.Modify']]`. */
function rootModify(principal: Principal): void {
  if (!hasPrivilege(principal, '/', 'Sys.Modify')) throw new PermissionError('/, Sys.Modify');
}

/** The backup-job kind. */
export const backupRoutes: RouteModule = {
  name: 'backup',
  routes: [
    route('GET', '/cluster/backup', rootAudit, listJobs),
    route('POST', '/cluster/backup', rootModify, createJob, true),
    route('GET', '/cluster/backup/{id}', rootAudit, readJob),
    route('PUT', '/cluster/backup/{id}', rootModify, updateJob, true),
    route('DELETE', '/cluster/backup/{id}', rootModify, deleteJob, true),
  ],
};
