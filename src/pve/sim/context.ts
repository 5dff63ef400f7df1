/**
 * What a route handler sees: the simulator, who is asking, the validated parameters, and hooks
 * to start a task (which keeps the request's "write in flight" open until the task ends) or to
 * run something after the response has been sent.
 */
import type { Principal } from './auth.js';
import type { Simulator } from './simulator.js';
import type { SimTask, TaskContext } from './tasks.js';

/**
 * A handler's answer: data to wrap in `{"data":…}`, or that data already serialised; `total`
 * becomes the envelope's `total` (task logs).
 */
export type HandlerResult = ({ data: unknown } | { json: string }) & { total?: number };

/** Per-request context. */
export interface RequestContext {
  sim: Simulator;
  principal: Principal;
  /** Validated parameters (path, query and body merged), as strings like Perl sees them. */
  params: Record<string, string>;
  /** Starts a task as this principal; the request's write (if any) ends when the task ends. */
  startTask(
    node: string,
    type: string,
    id: string,
    body: (task: TaskContext) => void | Promise<void>,
    options?: { onEnd?: () => void; atStart?: boolean },
  ): SimTask;
  /** Runs after the response has been written. */
  afterResponse(fn: () => void): void;
}

/** A route's handler (async only where Proxmox itself waits, e.g. `background_delay`). */
export type Handler = (ctx: RequestContext) => HandlerResult | Promise<HandlerResult>;

/** Reads a parameter known to be present after validation. */
export function param(ctx: RequestContext, name: string): string {
  const value = ctx.params[name];
  if (value === undefined) throw new Error(`internal: parameter '${name}' missing after validation`);
  return value;
}

/** `$param->{x}` in Perl boolean context. */
export function flag(ctx: RequestContext, name: string): boolean {
  const value = ctx.params[name];
  return value !== undefined && value !== '' && value !== '0';
}
