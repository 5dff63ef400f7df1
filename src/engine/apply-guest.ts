/**
 * Carrying out one guest of a reviewed plan against a live cluster: before every write the guest
 * is read again, its change recomputed and compared with the one that was reviewed, and the step
 * is sent with the digest of that read; tasks are awaited, locks and other people's tasks waited
 * out (never cleared), a digest conflict retried a bounded number of times. Every outcome —
 * applied, conflict, failure, an abort — is a result ({@link GuestApplyResult}), not an exception.
 *
 * It is not the scheduler: which guests run at once, in what order and under which per-cluster
 * and per-node limits is the caller's (`execute-plan.ts` for the CLI, the App's apply queue), as
 * is making sure one guest never has two writers. It does not plan (the core does, `planGuest`)
 * and it does not talk HTTP (it writes through the {@link ClusterWriter} port).
 */
import { endsOnlyByResume } from '../core/guest-locks.js';
import { type ApplyStep, type GuestApplyResult, isWritingStep } from '../core/apply-result.js';
import type { GuestPlan, ListedGuest, ObservedGuest, Operation, PlannedRestart } from '../core/model.js';
import { compareWithReviewed } from '../core/plan/compare-reviewed.js';
import { cloneSourceOf, inflightClone, recomputedSpec, regeneratesCloudinit } from './clone-apply.js';
import { summariseOperation } from '../core/operations.js';
import { planGuest } from '../core/plan/plan-guest.js';
import { hostAccessRefusals } from '../core/plan/plan-specs.js';
import type { HostAccessRule } from '../core/key-rules.js';
import {
  AlreadyInPowerStateError,
  DigestConflictError,
  GuestNotFoundError,
  LockedError,
  portFailure,
  TaskFailedError,
  UnavailableError,
  VmidTakenError,
} from '../core/port-errors.js';
import type { ClusterWriter, GuestRef, WriteResult } from '../core/ports.js';
import { type Clock, realClock } from '../util/sleep.js';
import { errorMessage } from '../util/error-message.js';
import { awaitHaPower, isHaRequestTask } from './ha-power.js';
import { restartGuest } from './restart-guest.js';
import { restartHeldOutsideWindow } from './restart-window.js';
import { snapshotFirst, snapshotName } from './snapshot-first.js';

/** Progress of an apply, for a person watching (CLI stderr, logs, the App's comment). */
export type ApplyEvent =
  | { type: 'guest-start'; guest: GuestPlan }
  | { type: 'step'; guest: GuestPlan; step: ApplyStep }
  | { type: 'waiting'; guest: GuestPlan; reason: string }
  | { type: 'guest-done'; guest: GuestPlan; result: GuestApplyResult }
  /** About a whole cluster, e.g. its listing failed and guests are read where the plan saw them. */
  | { type: 'notice'; cluster: string; message: string };

/** Releases a slot taken with {@link ApplyGuestOptions.acquireSlot}; safe to call twice. */
export type ReleaseSlot = () => void;

/** Options of {@link applyGuest}. */
export interface ApplyGuestOptions {
  /** How long a lock (or a task of someone else) is waited out before the guest is reported (default 10 minutes). */
  lockWaitMs?: number;
  /** First pause while waiting for a lock; doubles up to 15 s (default 1 s). */
  lockPollMs?: number;
  /** Digest rejections in a row before the guest is reported as a conflict (default 3). */
  maxDigestConflicts?: number;
  /**
   * Stops the apply of this guest between steps, or while it waits (a lock, a slot's queue, a
   * task: the task itself runs on). The result then says what was done; it is `retryable`.
   */
  signal?: AbortSignal;
  onEvent?: (event: ApplyEvent) => void;
  /** Time and sleeping; virtual in tests. Default: the wall clock. */
  clock?: Clock;
  /**
   * Where the guest is, from a listing the caller already holds: the entry, or `null` when that
   * listing does not have it. Left out, a guest the plan expects is first read on its planned
   * node, and a guest the plan creates is looked up with {@link locate}.
   */
  listed?: ListedGuest | null;
  /** Finds the guest in a fresh cluster listing. Default: one `listGuests()` request per call. */
  locate?: (vmid: number) => Promise<ListedGuest | undefined>;
  /**
   * Takes the right to carry out one step on `node` (the per-cluster and per-node limits). The
   * slot is held from the fresh read through the write and its task, and released whenever the
   * guest waits for something else (a lock, someone's task), so waiting never blocks other guests.
   * Default: no limit.
   */
  acquireSlot?: (node: string) => Promise<ReleaseSlot>;
  /**
   * Takes the right to read the guest while it waits for its slot, so that read overlaps other
   * guests' tasks instead of taking slot time (the caller bounds how many guests read ahead).
   * Only a step Proxmox checks against the read's digest (a config write, a resize, a disk move:
   * refused if the config changed since the read) is carried out from a read made ahead, and only
   * while that read is at most {@link readAheadMaxAgeMs} old when the slot is taken; anything else
   * is read again inside the slot. Default: none, every read before a step is made in the slot.
   */
  acquireReadAhead?: (node: string) => Promise<ReleaseSlot>;
  /** Oldest a read made ahead of the slot may be when the slot is taken (default 1000 ms). */
  readAheadMaxAgeMs?: number;
  /**
   * The host-reaching options the server's policy allows on this guest's cluster, in force now
   * (default: none). A recomputed step that needs more is refused before anything is written,
   * whatever the stored plan says.
   */
  allowHostAccess?: readonly HostAccessRule[];
  /**
   * Takes one of the cluster's restarts in flight (`limit`: the plan's `restart.inFlight`) before
   * a restart the plan announces. Default: no limit.
   */
  acquireRestart?: (cluster: string, limit: number) => Promise<ReleaseSlot>;
  /**
   * An earlier run of this guest's apply began the announced restart and stopped before it was
   * confirmed (the guest may be down): the restart is carried out again even with nothing pending.
   */
  restartInterrupted?: boolean;
  /**
   * Whether one of the guest's apply windows is open now, asked before a `restart: in-window`
   * restart (`restart-window.ts`). Default: open.
   */
  insideWindow?: () => boolean;
  /** The name of the snapshot a plan's `snapshot` asks for (`snapshot-first.ts`); default from the clock. */
  snapshotName?: string;
}

const DEFAULT_LOCK_WAIT_MS = 600_000;
const DEFAULT_READ_AHEAD_MAX_AGE_MS = 1000;
/** Steps that carry the digest of the read they come from: Proxmox refuses them if the config moved since. */
const DIGEST_CHECKED_OPS: ReadonlySet<string> = new Set(['config', 'resize', 'move-disk']);
const MAX_LOCK_POLL_MS = 15_000;
/** Writes tried per guest (a digest retry, a relocation); waits are bounded by time instead. */
const MAX_ATTEMPTS_PER_GUEST = 50;

/** Ends a guest's job early with a result (conflict, failure). */
class Finish {
  constructor(
    readonly status: GuestApplyResult['status'],
    readonly error: string | undefined,
    readonly retryable = false,
  ) {}
}

class GuestJob {
  readonly result: GuestApplyResult;
  readonly #clock: Clock;
  readonly #locate: (vmid: number) => Promise<ListedGuest | undefined>;
  /** Where the guest is believed to be; undefined when it does not exist (as far as known). */
  #where: ListedGuest | undefined;
  /** Whether {@link #where} comes from a listing or a read rather than from the plan. */
  #located: boolean;
  /** The guest was seen on the cluster during this apply (listed, read, or created by it). */
  #existed = false;
  #createSent = false;
  #destroyedByUs = false;
  /** The reviewed create found the VMID taken: the guest that holds it is looked at instead. */
  #takenAtCreate: string | undefined;
  #digestConflicts = 0;
  #busySince: number | undefined;
  #busyDelay: number;
  #lastOp = '';
  #release: ReleaseSlot | undefined;
  #slotNode: string | undefined;
  /** The right to read ahead of the slot, held from before that read until the slot is taken. */
  #readAhead: ReleaseSlot | undefined;
  /** The last write was the last planned step: the next read only confirms, and needs no slot. */
  #confirming = false;

  constructor(
    readonly plan: GuestPlan,
    readonly writer: ClusterWriter,
    readonly options: ApplyGuestOptions,
  ) {
    this.#clock = options.clock ?? realClock;
    this.#busyDelay = options.lockPollMs ?? 1000;
    this.#locate = options.locate ?? (async (vmid) => (await writer.listGuests()).find((l) => l.vmid === vmid));
    if (options.listed !== undefined) {
      this.#where = options.listed ?? undefined;
      this.#located = true;
      this.#existed = options.listed !== null;
    } else {
      // A guest the plan expects is read where the plan saw it (a migration since is found by
      // a listing on the first "not found"); for a create the whole cluster must be asked.
      this.#where = plan.action === 'create' ? undefined : { vmid: plan.vmid, type: plan.type, node: plan.node };
      this.#located = false;
    }
    this.result = {
      cluster: plan.cluster,
      name: plan.name,
      vmid: plan.vmid,
      node: this.#where?.node ?? plan.node,
      status: 'unchanged',
      steps: [],
    };
  }

  get #lockWaitMs(): number {
    return this.options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
  }

  #emit(step: ApplyStep): void {
    this.result.steps.push(step);
    this.options.onEvent?.({ type: 'step', guest: this.plan, step });
  }

  /** The plan's snapshot was taken (or refused) in this run. */
  #snapshotTaken = false;

  get #wrote(): boolean {
    return this.result.steps.some(isWritingStep);
  }

  #ref(): GuestRef {
    return { node: this.#where?.node ?? this.plan.node, type: this.plan.type, vmid: this.plan.vmid };
  }

  async #hold(node: string): Promise<void> {
    if (!this.options.acquireSlot) return;
    if (this.#release && this.#slotNode === node) return;
    this.#releaseSlot();
    const release = await this.options.acquireSlot(node);
    if (this.options.signal?.aborted) {
      release();
      this.options.signal.throwIfAborted();
    }
    this.#release = release;
    this.#slotNode = node;
  }

  #releaseSlot(): void {
    this.#release?.();
    this.#release = undefined;
    this.#slotNode = undefined;
  }

  async #holdReadAhead(node: string): Promise<void> {
    if (!this.options.acquireReadAhead || this.#readAhead) return;
    const release = await this.options.acquireReadAhead(node);
    if (this.options.signal?.aborted) {
      release();
      this.options.signal.throwIfAborted();
    }
    this.#readAhead = release;
  }

  #releaseReadAhead(): void {
    this.#readAhead?.();
    this.#readAhead = undefined;
  }

  /** A fresh read of the guest and the tasks running on it; undefined when it does not exist. */
  async #read(): Promise<{ observed: ObservedGuest; busy: string[] } | undefined> {
    if (!this.#where && !this.#located) {
      this.#where = await this.#locate(this.plan.vmid);
      this.#located = true;
    }
    const where = this.#where;
    if (!where) return undefined;
    try {
      return await this.#readAt(where);
    } catch (err) {
      if (!(err instanceof GuestNotFoundError)) throw err;
    }
    // Migrated or destroyed since it was last seen: find it again, once; a guest the listing
    // places where it cannot be read is an error rather than a loop.
    const found = await this.#locate(this.plan.vmid);
    this.#located = true;
    this.#where = found;
    if (!found) return undefined;
    if (found.node === where.node) {
      throw new GuestNotFoundError(`guest ${this.plan.vmid} is listed on ${found.node} but its config cannot be read there`);
    }
    this.#emit({ op: 'relocated', detail: `found on ${found.node}` });
    this.result.node = found.node;
    return this.#readAt(found);
  }

  async #readAt(where: ListedGuest): Promise<{ observed: ObservedGuest; busy: string[] }> {
    const ref: GuestRef = { node: where.node, type: where.type, vmid: where.vmid };
    // Both in parallel: the task list costs no extra round trip before a write.
    const [observed, busy] = await Promise.all([this.writer.readGuestForApply(ref), this.writer.activeTasks(ref)]);
    this.#existed = true;
    return { observed, busy };
  }

  /**
   * Waits with backoff while the guest is busy (a lock, a task still running), holding no slot;
   * false once the limit is reached. Locks are never cleared and tasks never stopped.
   */
  async #waitBusy(op: 'wait-lock' | 'wait-task', reason: string): Promise<boolean> {
    const now = this.#clock.now();
    this.#busySince ??= now;
    const limit = this.#lockWaitMs;
    if (now - this.#busySince >= limit) return false;
    if (!this.result.steps.some((s) => s.op === op && s.detail?.startsWith(reason))) {
      this.#emit({ op, detail: `${reason}; waiting up to ${Math.round(limit / 1000)} s` });
    }
    this.options.onEvent?.({ type: 'waiting', guest: this.plan, reason });
    this.#releaseSlot();
    this.#releaseReadAhead();
    await this.#clock.sleep(Math.min(this.#busyDelay, limit - (now - this.#busySince)), this.options.signal);
    this.#busyDelay = Math.min(this.#busyDelay * 2, MAX_LOCK_POLL_MS);
    return true;
  }

  async #execute(op: Operation, observed: ObservedGuest | undefined): Promise<WriteResult> {
    const ref = this.#ref();
    const digest = observed?.digest ?? '';
    const context = this.options.signal ? { signal: this.options.signal } : {};
    switch (op.op) {
      case 'create': {
        this.#createSent = true;
        const target = { ...ref, node: op.node };
        const result = await this.writer.create(target, op.params, context);
        this.#where = { vmid: ref.vmid, type: ref.type, node: op.node };
        this.#located = true;
        this.#existed = true;
        this.result.node = op.node;
        return result;
      }
      case 'config':
        return this.writer.updateConfig(ref, op.set, op.delete, digest, context);
      case 'cloudinit':
        await this.#regenerateCloudinit(ref);
        return {};
      case 'resize':
        return this.writer.resize(ref, op.disk, op.size, digest, context);
      case 'move-disk':
        return this.writer.moveDisk(ref, op.disk, op.storage, digest, context);
      case 'start':
        return this.writer.start(ref, context);
      case 'shutdown':
        return this.writer.shutdown(ref, context);
      case 'stop':
        return this.writer.stop(ref, context);
      case 'clone': {
        if (!this.writer.clone) throw new Error('this cluster writer cannot clone guests');
        this.#createSent = true;
        const source = { vmid: op.source.vmid, type: ref.type, node: op.source.node };
        const result = await this.writer.clone(source, ref.vmid, op.params, context);
        this.#where = { vmid: ref.vmid, type: ref.type, node: op.node };
        this.#located = true;
        this.#existed = true;
        this.result.node = op.node;
        return result;
      }
      case 'template':
        if (!this.writer.convertToTemplate) throw new Error('this cluster writer cannot convert guests to templates');
        return this.writer.convertToTemplate(ref, context);
      case 'destroy': {
        const result = await this.writer.destroy(ref, context);
        this.#destroyedByUs = true;
        this.#where = undefined;
        return result;
      }
    }
  }

  async #regenerateCloudinit(ref: GuestRef): Promise<void> {
    if (!this.writer.regenerateCloudinit) throw new Error('this cluster writer cannot regenerate cloud-init drives');
    const started = this.#clock.now();
    await this.writer.regenerateCloudinit(ref);
    this.#emit({ op: 'cloudinit', detail: 'regenerate cloud-init drive', ms: this.#clock.now() - started });
  }

  /** What the job decides when the guest is not there (any more). */
  #absent(): Finish | undefined {
    if (this.#takenAtCreate !== undefined && !this.#existed) {
      // Proxmox says the VMID is in use, yet no listing shows it: a guest this token cannot see.
      return new Finish(
        'conflict',
        `${this.#takenAtCreate}: the VMID is held by a guest this token cannot see (missing VM.Audit?); nothing was changed`,
      );
    }
    if (!this.#existed || this.#destroyedByUs) return undefined;
    if (this.plan.action === 'destroy') {
      // Someone else destroyed it: what the reviewed plan wanted, done by another hand.
      this.#emit({ op: 'vanished', detail: `guest ${this.plan.vmid} was destroyed by someone else during the apply` });
      return new Finish(this.#wrote ? 'applied' : 'unchanged', undefined);
    }
    return new Finish(
      'conflict',
      `guest ${this.plan.vmid} disappeared during apply (deleted or moved out of the cluster by someone else); it is not created again — re-plan to see the cluster as it is now`,
    );
  }

  /**
   * Re-reads, recomputes, checks the change is still the reviewed one, and carries out its first
   * step — until nothing is left. Every step starts from a fresh read, so a run killed at any point
   * and started again neither duplicates a guest nor repeats a write.
   */
  async #loop(): Promise<Finish> {
    const { plan } = this;
    for (let attempt = 0; attempt < MAX_ATTEMPTS_PER_GUEST; ) {
      this.options.signal?.throwIfAborted();
      // Read ahead of the slot when the caller allows it, no slot is held (a guest with more steps
      // keeps its slot and reads in it) and the step is likely one a read made ahead may carry.
      const ahead =
        !this.#confirming &&
        this.options.acquireReadAhead !== undefined &&
        !this.#release &&
        DIGEST_CHECKED_OPS.has(plan.operations[0]?.op ?? '');
      if (ahead) await this.#holdReadAhead(this.#where?.node ?? plan.node);
      else if (!this.#confirming) await this.#hold(this.#where?.node ?? plan.node);
      const read = await this.#read();
      const readAt = this.#clock.now();
      if (read && this.#release && this.#slotNode !== read.observed.node) continue; // moved: take that node's slot
      const observed = read?.observed;
      if (!read) {
        const finish = this.#absent();
        if (finish) return finish;
      }
      const lock = observed?.current.lock;
      if (lock !== undefined && endsOnlyByResume(lock)) {
        // A hibernated VM keeps this lock until someone resumes it: waiting cannot help.
        return new Finish('failed', `locked (${lock}): the VM is hibernated; resume it, then apply again`);
      }
      if (lock) {
        if (await this.#waitBusy('wait-lock', `locked (${lock})`)) continue;
        return new Finish(
          'failed',
          `still locked (${lock}) after ${Math.round(this.#lockWaitMs / 1000)} s; locks are never cleared — retry once the ${lock} has finished`,
        );
      }
      const now = planGuest({
        cluster: plan.cluster,
        vmid: plan.vmid,
        spec: recomputedSpec(plan, observed),
        ownerTag: plan.target.ownerTag,
        prune: plan.target.prune,
        listed: observed ? this.#where : undefined,
        observed,
        ...cloneSourceOf(plan),
      });
      const conflicts = compareWithReviewed(plan, now);
      if (conflicts.length > 0) {
        this.result.conflict = conflicts;
        if (this.#takenAtCreate !== undefined) {
          return new Finish('conflict', `${this.#takenAtCreate}: the VMID was taken by someone else after review; nothing was changed`);
        }
        return new Finish(
          'conflict',
          `changed after review: ${conflicts.map((c) => c.key).join(', ')}; nothing more was written — re-plan with /pve plan`,
        );
      }
      const op = now.operations[0];
      const refused = op ? hostAccessRefusals(now, new Set(this.options.allowHostAccess ?? [])) : [];
      if (refused.length > 0) return new Finish('failed', `${refused.join('; ')}; nothing more was written`);
      if (!op) {
        // Accepted but not in effect until a restart: say so instead of reporting it done.
        const pending = now.pending.map((p) => p.key);
        if (pending.length > 0) this.result.pending = pending;
        if (this.#takenAtCreate !== undefined && !this.#wrote) {
          this.#emit({ op: 'vmid-taken', detail: 'applied by another run: the guest is exactly what the reviewed plan creates' });
        }
        return new Finish(this.#wrote ? 'applied' : 'unchanged', undefined);
      }
      if (this.#confirming) {
        // More to do than planned (a step that needs another): take a slot and read again first.
        this.#confirming = false;
        continue;
      }
      if (op.op === 'clone' && !this.#createSent) {
        // An earlier, interrupted run's clone may still be copying: its task carries the
        // template's VMID, and the new VMID has no config yet (engine/clone-apply.ts).
        const inflight = await inflightClone(this.writer, op, plan.type, plan.vmid);
        if (inflight) {
          if (await this.#waitBusy('wait-task', `clone task still running (${inflight})`)) continue;
          return new Finish('failed', `the clone task ${inflight} is still running after ${Math.round(this.#lockWaitMs / 1000)} s`);
        }
      }
      if ((op.op === 'create' || op.op === 'clone') && this.#createSent) {
        // Never a second create in one apply: the guest this run created is gone again.
        return new Finish('conflict', `guest ${plan.vmid} disappeared during apply after it was created; it is not created again`);
      }
      if (ahead) {
        await this.#hold(read?.observed.node ?? this.#where?.node ?? plan.node);
        this.#releaseReadAhead();
        const maxAge = this.options.readAheadMaxAgeMs ?? DEFAULT_READ_AHEAD_MAX_AGE_MS;
        if (!DIGEST_CHECKED_OPS.has(op.op) || this.#clock.now() - readAt > maxAge) continue; // read again, in the slot
      }
      const busy = read?.busy ?? [];
      if (busy.length > 0) {
        // An unfinished task on the guest (an interrupted run's start, a migration) would race
        // this step; what it changes is seen by the next read.
        const type = busy[0]?.split(':')[5] ?? 'task';
        if (await this.#waitBusy('wait-task', `task ${type} still running`)) continue;
        return new Finish(
          'failed',
          `a ${type} task on the guest is still running after ${Math.round(this.#lockWaitMs / 1000)} s: ${busy[0]}`,
        );
      }
      if (plan.snapshot && !this.#snapshotTaken) {
        this.#snapshotTaken = true;
        const refused = await snapshotFirst({
          plan,
          writer: this.writer,
          ref: this.#ref(),
          name: this.options.snapshotName ?? snapshotName(new Date(this.#clock.now()).toISOString().replace(/\D/g, '').slice(0, 14)),
          ...(this.options.signal ? { signal: this.options.signal } : {}),
          emit: (step) => this.#emit(step),
        });
        if (refused) return new Finish('failed', refused);
        continue; // the snapshot changed the config's digest: read again
      }
      const opKey = JSON.stringify(op);
      if (opKey === this.#lastOp) {
        return new Finish(
          'failed',
          `step had no effect: after "${summariseOperation(op)}" Proxmox still reports the old value; this is a perpetual diff`,
        );
      }
      attempt += 1;
      const finish = await this.#step(op, opKey, observed);
      if (finish) return finish;
      if (now.operations.length === 1 && this.#lastOp === opKey) {
        // That was the last step: the read that confirms it holds no slot another guest could use.
        this.#releaseSlot();
        this.#confirming = true;
      }
    }
    return new Finish('failed', `gave up after ${MAX_ATTEMPTS_PER_GUEST} steps`);
  }

  /**
   * After a power request HA took over: waits on the guest's status (its task has already ended),
   * holding no slot, and follows the guest if HA moved it. A Finish when it did not get there.
   */
  async #awaitHa(want: 'running' | 'stopped'): Promise<Finish | undefined> {
    this.#releaseSlot();
    const outcome = await awaitHaPower({
      writer: this.writer,
      ref: this.#ref(),
      want,
      clock: this.#clock,
      timeoutMs: this.#lockWaitMs,
      ...(this.options.lockPollMs !== undefined ? { pollMs: this.options.lockPollMs } : {}),
      ...(this.options.signal ? { signal: this.options.signal } : {}),
      locate: this.#locate,
      onWait: (reason) => this.options.onEvent?.({ type: 'waiting', guest: this.plan, reason }),
    });
    const seconds = Math.round(outcome.waitedMs / 1000);
    if (!outcome.reached) {
      return new Finish(
        'failed',
        `the HA manager was asked for ${want} but the guest is still ${outcome.status} after ${seconds} s (HA state ${outcome.haState ?? 'unknown'}); see ha-manager status`,
      );
    }
    const node = outcome.observed.node;
    if (node !== this.#where?.node) {
      this.#where = { vmid: this.plan.vmid, type: this.plan.type, node };
      this.result.node = node;
      this.#emit({ op: 'relocated', detail: `HA runs it on ${node} now` });
    }
    this.#emit({ op: 'wait-ha', detail: `HA manager reported the guest ${want} after ${seconds} s`, ms: outcome.waitedMs });
    return undefined;
  }

  /** The restart the plan announced, after an apply that left values pending (`restart-guest.ts`). */
  async #restart(restart: PlannedRestart): Promise<Finish> {
    this.#releaseSlot();
    this.#releaseReadAhead();
    const outcome = await restartGuest({
      plan: this.plan,
      restart,
      writer: this.writer,
      ref: this.#ref(),
      pending: this.result.pending ?? [],
      clock: this.#clock,
      ...(this.options.signal ? { signal: this.options.signal } : {}),
      haWaitMs: this.#lockWaitMs,
      ...(this.options.lockPollMs !== undefined ? { pollMs: this.options.lockPollMs } : {}),
      locate: this.#locate,
      ...(this.options.acquireRestart ? { acquireRestart: this.options.acquireRestart } : {}),
      emit: (step) => this.#emit(step),
      onWait: (reason) => this.options.onEvent?.({ type: 'waiting', guest: this.plan, reason }),
    });
    this.result.node = outcome.node;
    if (!outcome.ok) return new Finish('failed', outcome.error);
    delete this.result.pending;
    return new Finish('applied', undefined);
  }

  /** Carries out one operation; a Finish when the job must stop, undefined to go on. */
  async #step(op: Operation, opKey: string, observed: ObservedGuest | undefined): Promise<Finish | undefined> {
    const started = this.#clock.now();
    try {
      const result = await this.#execute(op, observed);
      const step: ApplyStep = { op: op.op, detail: summariseOperation(op), ms: this.#clock.now() - started };
      if (result.upid) step.upid = result.upid;
      if (result.exitStatus) step.exitStatus = result.exitStatus;
      this.#emit(step);
      // With the config write, never a step of its own: the recompute after it sees nothing left.
      if (op.op === 'config' && regeneratesCloudinit(this.plan, op)) await this.#regenerateCloudinit(this.#ref());
      if ((op.op === 'start' || op.op === 'shutdown' || op.op === 'stop') && isHaRequestTask(result.upid)) {
        const finish = await this.#awaitHa(op.op === 'start' ? 'running' : 'stopped');
        if (finish) return finish;
      }
      this.#lastOp = opKey;
      this.#digestConflicts = 0;
      // Each wait (a lock, a task) gets the full budget, not what earlier waits left over.
      this.#busySince = undefined;
      this.#busyDelay = this.options.lockPollMs ?? 1000;
      return undefined;
    } catch (err) {
      this.options.signal?.throwIfAborted();
      if (portFailure(err, DigestConflictError)) {
        this.#digestConflicts += 1;
        this.#emit({ op: 'digest-conflict', detail: `the config changed between read and write (${this.#digestConflicts}); re-reading` });
        if (this.#digestConflicts >= (this.options.maxDigestConflicts ?? 3)) {
          return new Finish(
            'conflict',
            `the config digest moved ${this.#digestConflicts} times in a row while writing; someone else is writing this guest`,
          );
        }
        return undefined;
      }
      if (op.op !== 'create' && op.op !== 'clone' && portFailure(err, GuestNotFoundError)) {
        // Migrated (or removed) between the read and the write: the next read finds it again.
        this.#emit({ op: 'relocated', detail: `not on ${this.#where?.node ?? '?'} any more; looking it up again` });
        this.#located = false;
        return undefined;
      }
      const locked = portFailure(err, LockedError);
      if (locked) {
        if (await this.#waitBusy('wait-lock', `locked (${locked.lock ?? 'lock file'})`)) return undefined;
        return new Finish('failed', errorMessage(err));
      }
      if (portFailure(err, AlreadyInPowerStateError)) {
        // A start or stop from an earlier, interrupted run got there first: the state is
        // reached, which is all this step wanted. The next read confirms it.
        this.#emit({
          op: op.op,
          detail: `${summariseOperation(op)}: ${errorMessage(err)}, nothing to do`,
          ms: this.#clock.now() - started,
        });
        this.#lastOp = opKey;
        return undefined;
      }
      if ((op.op === 'create' || op.op === 'clone') && portFailure(err, VmidTakenError)) {
        // Someone holds the VMID now: another run of this plan (its create or its clone), or a stranger. Look at the guest
        // that holds it; the next read tells which (and a stranger's guest is a conflict).
        this.#takenAtCreate = errorMessage(err);
        this.#emit({ op: 'vmid-taken', detail: `${summariseOperation(op)}: ${errorMessage(err)}; looking at the guest that holds it` });
        this.#where = undefined;
        this.#located = false;
        return undefined;
      }
      const failed: ApplyStep = { op: op.op, detail: `${summariseOperation(op)}: failed`, ms: this.#clock.now() - started };
      const task = err instanceof TaskFailedError ? err : undefined;
      if (task) {
        failed.upid = task.upid;
        failed.exitStatus = task.exitStatus;
      }
      this.#emit(failed);
      if (err instanceof UnavailableError) {
        const uncertain = err.writeUncertain ? '; the write may or may not have happened — the next run re-reads first' : '';
        return new Finish('failed', `${errorMessage(err)}${uncertain}`, true);
      }
      return new Finish('failed', errorMessage(err));
    }
  }

  async run(): Promise<GuestApplyResult> {
    this.options.onEvent?.({ type: 'guest-start', guest: this.plan });
    let finish: Finish;
    try {
      finish = await this.#loop();
      const restart = this.plan.restart;
      // `unchanged` too: an earlier run wrote the values (or began the restart) and stopped before the end.
      const done = finish.status === 'applied' || finish.status === 'unchanged';
      if (restart && done && ((this.result.pending?.length ?? 0) > 0 || this.options.restartInterrupted === true)) {
        const held = restartHeldOutsideWindow(restart, this.options.insideWindow);
        if (held) this.#emit(held);
        else finish = await this.#restart(restart);
      }
    } catch (err) {
      if (this.options.signal?.aborted) {
        finish = new Finish(
          this.result.steps.length === 0 ? 'skipped' : 'failed',
          `interrupted (${errorMessage(this.options.signal.reason)}) after ${this.result.steps.length} step(s); a task already started runs on — apply again to finish`,
          true,
        );
      } else {
        finish = new Finish('failed', errorMessage(err), err instanceof UnavailableError);
      }
    } finally {
      this.#releaseSlot();
      this.#releaseReadAhead();
    }
    this.result.status = finish.status;
    if (finish.error !== undefined) this.result.error = finish.error;
    if (finish.retryable) this.result.retryable = true;
    this.options.onEvent?.({ type: 'guest-done', guest: this.plan, result: this.result });
    return this.result;
  }
}

/**
 * The result of a guest the plan carries out nothing for — no changes (`unchanged`), an orphan
 * or a plan error (`skipped`) — or undefined when it has something to carry out.
 */
export function resultWithoutApply(plan: GuestPlan): GuestApplyResult | undefined {
  const base = { cluster: plan.cluster, name: plan.name, vmid: plan.vmid, node: plan.node, steps: [] };
  if (plan.action === 'noop') return { ...base, status: 'unchanged' };
  if (plan.action === 'orphan') return { ...base, status: 'skipped', error: 'orphan: reported only' };
  if (plan.action === 'error') return { ...base, status: 'skipped', error: plan.errors.join('; ') };
  return undefined;
}

/**
 * Applies one guest of a reviewed plan: re-reads it before every write, recomputes its change,
 * checks that it is still the reviewed one, and carries it out step by step (digest on every
 * config write, tasks awaited, locks waited out and never cleared). Resolves with the guest's
 * result in every case — conflicts, failures and an abort are results, not exceptions.
 *
 * One writer per guest is the caller's duty (the CLI runs each guest once; the App's queue
 * holds a per-guest lock). Guests without changes, orphans and plan errors are not touched
 * (see {@link resultWithoutApply}).
 */
export async function applyGuest(plan: GuestPlan, writer: ClusterWriter, options: ApplyGuestOptions = {}): Promise<GuestApplyResult> {
  return resultWithoutApply(plan) ?? new GuestJob(plan, writer, options).run();
}
