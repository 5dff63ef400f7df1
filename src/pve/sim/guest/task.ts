/**
 * The task both flavours' per-guest endpoints (create, resize, move, destroy, power) fork: a
 * worker that takes the config lock (`lock_config`) when it starts and runs once the task's time
 * is up; and the error such a worker raises when the config it loads is gone. The task's name and
 * the checks before and inside it are each endpoint's own.
 */
import { underConfigLock, whenElapsed, type ReleaseConfigLock } from '../config-lock.js';
import type { HandlerResult, RequestContext } from '../context.js';
import { TaskFailure, type TaskContext } from '../tasks.js';
import type { GuestFlavour } from './flavours.js';

/** Starts the task `taskType` of guest `vmid`, its `body` under the guest's config lock; answers its UPID. */
export function guestTask(
  ctx: RequestContext,
  flavour: GuestFlavour,
  node: string,
  vmid: number,
  taskType: string,
  body: (log: TaskContext, unlock: ReleaseConfigLock) => void,
): HandlerResult {
  const worker = underConfigLock(ctx.sim.configLocks, flavour.type, vmid, whenElapsed(body));
  const task = ctx.startTask(node, taskType, String(vmid), worker, { atStart: true });
  return { data: task.upid };
}

/** The failure of a task whose guest's config file is gone (`load_config`). */
export function missingConfig(flavour: GuestFlavour, node: string, vmid: number): TaskFailure {
  return new TaskFailure(`Configuration file 'nodes/${node}/${flavour.configDir}/${vmid}.conf' does not exist`);
}
