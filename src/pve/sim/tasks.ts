/**
 * Worker tasks (`fork_worker`): UPIDs in the real format (docs/proxmox-api.md#upid-format), a log that ends in
 * `TASK OK` / `TASK ERROR: …` / `TASK WARNINGS: N`, and the fields of `GET …/tasks/{upid}/status`.
 * A task runs for `taskMs`. Its worker runs when that time is up, unless it is started `atStart`:
 * then it runs at once, as a forked Proxmox worker does (it takes the config lock before the UPID
 * is answered), waits out the time itself (`elapsed`), and the task ends when the worker returns.
 */
import { errorMessage } from '../../util/error-message.js';

/** A failure inside a worker: becomes `TASK ERROR: <text>` (newlines turned into spaces). */
export class TaskFailure extends Error {
  override readonly name = 'TaskFailure';
}

/**
 * What a worker body gets. Everything a worker prints or `warn`s goes to its log as it is;
 * only `$rpcenv->warn` (`log_warn`) prefixes `WARN: ` and counts toward `TASK WARNINGS: N`
 * (pve-common `RESTEnvironment.pm`, `warn` and `fork_worker`). A plain Perl `warn` is `log`.
 */
export interface TaskContext {
  /** `print` or a plain `warn`: a log line, no warning. */
  log(line: string): void;
  /** `$rpcenv->warn` / `log_warn`: `WARN: <line>`, counted. */
  warn(line: string): void;
  /** Settles when the task's simulated duration has passed since it started. */
  elapsed: Promise<void>;
}

/** One task as the simulator keeps it. */
export interface SimTask {
  upid: string;
  node: string;
  pid: number;
  pstart: number;
  starttime: number;
  type: string;
  id: string;
  /** Full user id as written into the UPID (`root@pam!pve-gitops` for a token). */
  user: string;
  status: 'running' | 'stopped';
  exitstatus?: string;
  lines: string[];
  warnings: number;
  /** Resolves when the task has stopped. */
  done: Promise<void>;
  endtime?: number;
}

/** `sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, pid, pstart, starttime, type, id, user)`. */
function formatUpid(t: Pick<SimTask, 'node' | 'pid' | 'pstart' | 'starttime' | 'type' | 'id' | 'user'>): string {
  const hex = (n: number): string => n.toString(16).toUpperCase().padStart(8, '0');
  return `UPID:${t.node}:${hex(t.pid)}:${hex(t.pstart)}:${hex(t.starttime)}:${t.type}:${t.id}:${t.user}:`;
}

/** Proxmox's UPID decode regex. */
export const UPID_RE =
  /^UPID:([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$/;

/** Keeps tasks by UPID, with a bounded history so long runs do not grow without end. */
export class TaskRegistry {
  private readonly tasks = new Map<string, SimTask>();
  private nextPid = 0x10000 + Math.floor(Math.random() * 0x200000);
  private readonly bootEpochMs: number;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private taskMs: number,
    private readonly maxTasks = 50_000,
  ) {
    // pstart counts clock ticks (100/s) since the node booted; pretend it booted days ago.
    this.bootEpochMs = Date.now() - (3 + Math.random() * 20) * 86_400_000;
  }

  /** Changes how long tasks started from now on run. */
  setTaskMs(ms: number): void {
    this.taskMs = ms;
  }

  /**
   * Starts a task. `body` runs when the task's time is up; a thrown error becomes the exit
   * status. `onEnd` runs after the status is final (used to release "writes in flight").
   */
  start(
    node: string,
    type: string,
    id: string,
    user: string,
    body: (ctx: TaskContext) => void | Promise<void>,
    options: { onEnd?: () => void; durationMs?: number; atStart?: boolean } = {},
  ): SimTask {
    const now = Date.now();
    const pid = this.nextPid++;
    if (this.nextPid > 0x3fffff) this.nextPid = 0x10000;
    const base = { node, pid, pstart: Math.floor((now - this.bootEpochMs) / 10), starttime: Math.floor(now / 1000), type, id, user };
    let resolveDone!: () => void;
    const task: SimTask = {
      ...base,
      upid: formatUpid(base),
      status: 'running',
      lines: [],
      warnings: 0,
      done: new Promise<void>((resolve) => (resolveDone = resolve)),
    };
    this.tasks.set(task.upid, task);
    this.prune();
    let resolveElapsed!: () => void;
    const ctx: TaskContext = {
      elapsed: new Promise<void>((resolve) => (resolveElapsed = resolve)),
      log: (line) => task.lines.push(line),
      warn: (line) => {
        task.lines.push(`WARN: ${line}`);
        task.warnings++;
      },
    };
    const finish = async (): Promise<void> => {
      let error: unknown;
      try {
        await body(ctx);
      } catch (err) {
        error = err;
      }
      if (error !== undefined) {
        // `chomp $err; $err =~ s/\n/ /mg`: one trailing newline goes, any other becomes a space.
        const text = errorMessage(error).replace(/\n$/, '').replace(/\n/g, ' ');
        task.exitstatus = text;
        task.lines.push(`TASK ERROR: ${text}`);
      } else if (task.warnings > 0) {
        task.exitstatus = `WARNINGS: ${task.warnings}`;
        task.lines.push(`TASK WARNINGS: ${task.warnings}`);
      } else {
        task.exitstatus = 'OK';
        task.lines.push('TASK OK');
      }
      task.status = 'stopped';
      task.endtime = Math.floor(Date.now() / 1000);
      try {
        options.onEnd?.();
      } finally {
        resolveDone();
      }
    };
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      resolveElapsed();
      if (!options.atStart) void finish();
    }, options.durationMs ?? this.taskMs);
    this.timers.add(timer);
    // The worker's synchronous part runs before `start` returns, so before the UPID is answered.
    if (options.atStart) void finish();
    return task;
  }

  /** A task by UPID. */
  get(upid: string): SimTask | undefined {
    return this.tasks.get(upid);
  }

  /** Tasks of a node, newest first (the order of `GET /nodes/{node}/tasks`). */
  list(node: string): SimTask[] {
    const found: SimTask[] = [];
    for (const task of this.tasks.values()) if (task.node === node) found.push(task);
    return found.reverse();
  }

  /** Cancels pending timers (server shutdown); running tasks never finish. */
  dispose(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private prune(): void {
    if (this.tasks.size <= this.maxTasks) return;
    for (const [upid, task] of this.tasks) {
      if (this.tasks.size <= this.maxTasks) break;
      if (task.status === 'stopped') this.tasks.delete(upid);
    }
  }
}
