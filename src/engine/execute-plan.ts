import type { ApplyResult, ApplyStep, GuestApplyResult } from '../core/apply-result.js';
import type { GuestPlan, ListedGuest, ObservedGuest, Operation, Plan } from '../core/model.js';
import { compareWithReviewed, describe } from '../core/plan/compare-reviewed.js';
import { planGuest } from '../core/plan/plan-guest.js';
import type { ClusterWriter, GuestRef, WriteResult } from '../core/ports.js';
import { PveAlreadyExistsError, PveDigestConflictError, PveLockedError, PveNotFoundError, PveTaskFailedError } from '../pve/errors.js';
import { Semaphore } from '../pve/limit.js';
import { sleep } from '../pve/task.js';

/** Progress of an apply, for a person watching (CLI stderr, logs). */
export type ApplyEvent =
  | { type: 'guest-start'; guest: GuestPlan }
  | { type: 'step'; guest: GuestPlan; step: ApplyStep }
  | { type: 'waiting'; guest: GuestPlan; reason: string }
  | { type: 'guest-done'; guest: GuestPlan; result: GuestApplyResult };

/** Options of {@link executePlan}. */
export interface ExecuteOptions {
  /** Guests applied at once per cluster (default 4). */
  clusterConcurrency?: number;
  /** Guests applied at once per node (default 2). */
  nodeConcurrency?: number;
  /** How long a lock is waited out before the guest is reported (default 10 minutes). */
  lockWaitMs?: number;
  /** First pause while waiting for a lock; doubles up to 15 s (default 1 s). */
  lockPollMs?: number;
  /** Digest rejections in a row before the guest is reported as a conflict (default 3). */
  maxDigestConflicts?: number;
  signal?: AbortSignal;
  onEvent?: (event: ApplyEvent) => void;
  ref?: string;
  now?: () => Date;
}

const MAX_STEPS_PER_GUEST = 50;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A typed Proxmox error, also when it arrives as the cause of a failed task. */
function typed<T extends Error>(err: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  if (err instanceof type) return err;
  if (err instanceof PveTaskFailedError && err.cause instanceof type) return err.cause;
  return undefined;
}

class GuestJob {
  readonly result: GuestApplyResult;
  #listed: ListedGuest | undefined;
  #digestConflicts = 0;
  #busySince: number | undefined;
  #busyDelay: number;
  #lastOp = '';

  constructor(
    readonly plan: GuestPlan,
    readonly writer: ClusterWriter,
    listed: ListedGuest | undefined,
    readonly options: ExecuteOptions,
    readonly relist: () => Promise<Map<number, ListedGuest>>,
  ) {
    this.#listed = listed;
    this.#busyDelay = options.lockPollMs ?? 1000;
    this.result = {
      cluster: plan.cluster,
      name: plan.name,
      vmid: plan.vmid,
      node: listed?.node ?? plan.node,
      status: 'unchanged',
      steps: [],
    };
  }

  #emit(step: ApplyStep): void {
    this.result.steps.push(step);
    this.options.onEvent?.({ type: 'step', guest: this.plan, step });
  }

  #finish(status: GuestApplyResult['status'], error?: string): GuestApplyResult {
    this.result.status = status;
    if (error !== undefined) this.result.error = error;
    return this.result;
  }

  get #wrote(): boolean {
    return this.result.steps.some(
      (s) => s.upid !== undefined || !['wait-lock', 'wait-task', 'digest-conflict', 'relocated'].includes(s.op),
    );
  }

  async #read(): Promise<ObservedGuest | undefined> {
    const listed = this.#listed;
    if (!listed) return undefined;
    try {
      return await this.writer.readGuestForApply({ node: listed.node, type: listed.type, vmid: listed.vmid });
    } catch (err) {
      if (!(err instanceof PveNotFoundError)) throw err;
    }
    // Migrated or destroyed since the listing: find it again, once; a guest the listing places
    // where it cannot be read is an error rather than a loop.
    const found = (await this.relist()).get(this.plan.vmid);
    this.#listed = found;
    if (!found) return undefined;
    this.#emit({ op: 'relocated', detail: `found on ${found.node}` });
    this.result.node = found.node;
    return this.writer.readGuestForApply({ node: found.node, type: found.type, vmid: found.vmid });
  }

  /**
   * Waits with backoff while the guest is busy (a lock, a task still running); false once the
   * limit is reached. Locks are never cleared and tasks never stopped: they are waited out.
   */
  async #waitBusy(op: 'wait-lock' | 'wait-task', reason: string): Promise<boolean> {
    const now = Date.now();
    this.#busySince ??= now;
    const limit = this.options.lockWaitMs ?? 600_000;
    if (now - this.#busySince >= limit) return false;
    if (!this.result.steps.some((s) => s.op === op && s.detail?.startsWith(reason))) {
      this.#emit({ op, detail: `${reason}; waiting up to ${Math.round(limit / 1000)} s` });
    }
    this.options.onEvent?.({ type: 'waiting', guest: this.plan, reason });
    await sleep(Math.min(this.#busyDelay, limit - (now - this.#busySince)), this.options.signal);
    this.#busyDelay = Math.min(this.#busyDelay * 2, 15_000);
    return true;
  }

  async #execute(op: Operation, observed: ObservedGuest | undefined): Promise<WriteResult> {
    const listed = this.#listed;
    const ref: GuestRef = { node: listed?.node ?? this.plan.node, type: this.plan.type, vmid: this.plan.vmid };
    const digest = observed?.digest ?? '';
    switch (op.op) {
      case 'create': {
        const result = await this.writer.create({ ...ref, node: op.node }, op.params);
        this.#listed = { vmid: ref.vmid, type: ref.type, node: op.node };
        this.result.node = op.node;
        return result;
      }
      case 'config':
        return this.writer.updateConfig(ref, op.set, op.delete, digest);
      case 'resize':
        return this.writer.resize(ref, op.disk, op.size, digest);
      case 'move-disk':
        return this.writer.moveDisk(ref, op.disk, op.storage, digest);
      case 'start':
        return this.writer.start(ref);
      case 'shutdown':
        return this.writer.shutdown(ref);
      case 'stop':
        return this.writer.stop(ref);
      case 'destroy': {
        const result = await this.writer.destroy(ref);
        this.#listed = undefined;
        return result;
      }
    }
  }

  /**
   * Re-reads, recomputes, checks the change is still the reviewed one, and carries out its first
   * step — until nothing is left. Every step starts from a fresh read, so a run killed at any point
   * and started again neither duplicates a guest nor repeats a write.
   */
  async run(): Promise<GuestApplyResult> {
    const { plan } = this;
    for (let i = 0; i < MAX_STEPS_PER_GUEST; i++) {
      this.options.signal?.throwIfAborted();
      const observed = await this.#read();
      const lock = observed?.current.lock;
      if (lock === 'suspended' || lock === 'suspending') {
        // A hibernated VM keeps this lock until someone resumes it: waiting cannot help.
        return this.#finish('failed', `locked (${lock}): the VM is hibernated; resume it, then apply again`);
      }
      if (lock) {
        if (await this.#waitBusy('wait-lock', `locked (${lock})`)) continue;
        return this.#finish(
          'failed',
          `still locked (${lock}) after ${Math.round((this.options.lockWaitMs ?? 600_000) / 1000)} s; locks are never cleared — retry once the ${lock} has finished`,
        );
      }
      const now = planGuest({
        cluster: plan.cluster,
        vmid: plan.vmid,
        spec: plan.target.spec,
        ownerTag: plan.target.ownerTag,
        prune: plan.target.prune,
        listed: this.#listed,
        observed,
      });
      const conflicts = compareWithReviewed(plan, now);
      if (conflicts.length > 0) {
        this.result.conflict = conflicts;
        return this.#finish(
          'conflict',
          `changed after review: ${conflicts.map((c) => c.key).join(', ')}; nothing more was written — re-plan with /pve plan`,
        );
      }
      const op = now.operations[0];
      if (!op) {
        // Accepted but not in effect until a restart: say so instead of reporting it done.
        const pending = now.pending.map((p) => p.key);
        if (pending.length > 0) this.result.pending = pending;
        return this.#finish(this.#wrote ? 'applied' : 'unchanged');
      }
      const listed = this.#listed;
      if (listed) {
        // An unfinished task on the guest (an interrupted run's start, a migration) would race
        // this step; what it changes is seen by the next read.
        const busy = await this.writer.activeTasks({ node: listed.node, type: listed.type, vmid: listed.vmid });
        if (busy.length > 0) {
          const type = busy[0]?.split(':')[5] ?? 'task';
          if (await this.#waitBusy('wait-task', `task ${type} still running`)) continue;
          return this.#finish(
            'failed',
            `a ${type} task on the guest is still running after ${Math.round((this.options.lockWaitMs ?? 600_000) / 1000)} s: ${busy[0]}`,
          );
        }
      }
      const opKey = JSON.stringify(op);
      if (opKey === this.#lastOp) {
        return this.#finish(
          'failed',
          `step had no effect: after "${describe(op)}" Proxmox still reports the old value; this is a perpetual diff`,
        );
      }
      const started = Date.now();
      try {
        const result = await this.#execute(op, observed);
        const step: ApplyStep = { op: op.op, detail: describe(op), ms: Date.now() - started };
        if (result.upid) step.upid = result.upid;
        this.#emit(step);
        this.#lastOp = opKey;
        this.#digestConflicts = 0;
        // Each wait (a lock, a task) gets the full budget, not what earlier waits left over.
        this.#busySince = undefined;
        this.#busyDelay = this.options.lockPollMs ?? 1000;
      } catch (err) {
        if (typed(err, PveDigestConflictError)) {
          this.#digestConflicts += 1;
          this.#emit({ op: 'digest-conflict', detail: `the config changed between read and write (${this.#digestConflicts}); re-reading` });
          if (this.#digestConflicts >= (this.options.maxDigestConflicts ?? 3)) {
            return this.#finish(
              'conflict',
              `the config digest moved ${this.#digestConflicts} times in a row while writing; someone else is writing this guest`,
            );
          }
          continue;
        }
        if (op.op !== 'create' && typed(err, PveNotFoundError)) {
          // Migrated (or removed) between the read and the write: the next read finds it again.
          this.#emit({ op: 'relocated', detail: `not on ${this.#listed?.node ?? '?'} any more; looking it up again` });
          continue;
        }
        const locked = typed(err, PveLockedError);
        if (locked) {
          if (await this.#waitBusy('wait-lock', `locked (${locked.lock ?? 'lock file'})`)) continue;
          return this.#finish('failed', message(err));
        }
        if (powerAlreadyThere(op, err)) {
          // A start or stop from an earlier, interrupted run got there first: the state is
          // reached, which is all this step wanted. The next read confirms it.
          this.#emit({ op: op.op, detail: `${describe(op)}: ${message(err)}, nothing to do`, ms: Date.now() - started });
          this.#lastOp = opKey;
          continue;
        }
        if (typed(err, PveAlreadyExistsError)) {
          return this.#finish('conflict', `${message(err)}: the VMID was taken by someone else; nothing was changed`);
        }
        const failed: ApplyStep = { op: op.op, detail: `${describe(op)}: failed`, ms: Date.now() - started };
        if (err instanceof PveTaskFailedError) failed.upid = err.upid;
        this.#emit(failed);
        return this.#finish('failed', message(err));
      }
    }
    return this.#finish('failed', `gave up after ${MAX_STEPS_PER_GUEST} steps`);
  }
}

/** Proxmox refusing a power change because the guest is already in the wanted state. */
function powerAlreadyThere(op: Operation, err: unknown): boolean {
  const text = message(err);
  if (op.op === 'start') return /already running/.test(text);
  if (op.op === 'stop' || op.op === 'shutdown') return /not running/.test(text);
  return false;
}

function skipped(plan: GuestPlan, why: string): GuestApplyResult {
  return { cluster: plan.cluster, name: plan.name, vmid: plan.vmid, node: plan.node, status: 'skipped', steps: [], error: why };
}

/**
 * Carries out a stored plan (DESIGN §4): one job per guest, guests of a cluster in parallel up to
 * per-cluster and per-node limits, each job re-reading before every write and writing only the
 * reviewed change. Guests without changes are not touched at all.
 */
export async function executePlan(
  plan: Plan,
  writers: Readonly<Record<string, ClusterWriter>>,
  options: ExecuteOptions = {},
): Promise<ApplyResult> {
  const clock = options.now ?? (() => new Date());
  const startedAt = clock().toISOString();
  const results: GuestApplyResult[] = [];
  const byCluster = new Map<string, GuestPlan[]>();
  for (const guest of plan.guests) {
    if (guest.action === 'noop') {
      results.push({ cluster: guest.cluster, name: guest.name, vmid: guest.vmid, node: guest.node, status: 'unchanged', steps: [] });
    } else if (guest.action === 'orphan') {
      results.push(skipped(guest, 'orphan: reported only'));
    } else if (guest.action === 'error') {
      results.push(skipped(guest, guest.errors.join('; ')));
    } else {
      byCluster.set(guest.cluster, [...(byCluster.get(guest.cluster) ?? []), guest]);
    }
  }

  await Promise.all(
    [...byCluster].map(async ([cluster, guests]) => {
      const writer = writers[cluster];
      if (!writer) {
        for (const g of guests) results.push({ ...skipped(g, `no connection configured for cluster '${cluster}'`), status: 'failed' });
        return;
      }
      const relist = async (): Promise<Map<number, ListedGuest>> => new Map((await writer.listGuests()).map((l) => [l.vmid, l]));
      let listing: Map<number, ListedGuest>;
      try {
        listing = await relist();
      } catch (err) {
        for (const g of guests) results.push({ ...skipped(g, `cannot list cluster '${cluster}': ${message(err)}`), status: 'failed' });
        return;
      }
      const clusterLimit = new Semaphore(options.clusterConcurrency ?? 4);
      const nodeLimits = new Map<string, Semaphore>();
      const nodeLimit = (node: string): Semaphore => {
        let s = nodeLimits.get(node);
        if (!s) nodeLimits.set(node, (s = new Semaphore(options.nodeConcurrency ?? 2)));
        return s;
      };
      await Promise.all(
        guests.map((guest) => {
          const listed = listing.get(guest.vmid);
          return clusterLimit.run(() =>
            nodeLimit(listed?.node ?? guest.node).run(async () => {
              options.onEvent?.({ type: 'guest-start', guest });
              const job = new GuestJob(guest, writer, listed, options, relist);
              let result: GuestApplyResult;
              try {
                result = await job.run();
              } catch (err) {
                if (options.signal?.aborted) throw err;
                result = { ...job.result, status: 'failed', error: message(err) };
              }
              results.push(result);
              options.onEvent?.({ type: 'guest-done', guest, result });
            }),
          );
        }),
      );
    }),
  );

  const order = new Map(plan.guests.map((g, i) => [`${g.cluster}/${g.vmid}`, i]));
  results.sort((a, b) => (order.get(`${a.cluster}/${a.vmid}`) ?? 0) - (order.get(`${b.cluster}/${b.vmid}`) ?? 0));
  const result: ApplyResult = { version: 1, startedAt, finishedAt: clock().toISOString(), guests: results };
  if (options.ref !== undefined) result.ref = options.ref;
  return result;
}
