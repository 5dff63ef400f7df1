/**
 * The steps a plan can hold, one entry per operation name in a mapped type (`OPERATIONS`), so a
 * new operation cannot be added without saying how it is described, summarised and compared. It
 * does not decide which operations a change needs (the planner does) nor carry them out (the engine).
 */
import type { Operation } from './model.js';

/** The names of the steps a plan can hold. */
type OperationName = Operation['op'];

type Of<K extends OperationName> = Extract<Operation, { op: K }>;

/** How text is shown where an operation is described: plain, as code spans, terminal-safe. */
interface DescribeStyle {
  /** A value from a spec or the cluster (a node, a disk, a size). */
  value: (text: string) => string;
  /** Words that must stand out (a destroy). */
  emphasise: (text: string) => string;
}

/** Everything the core says about one kind of operation. */
interface OperationRules<K extends OperationName> {
  /**
   * One line for a person, or undefined where another part of the output already shows the step
   * (a config write's keys are the change table).
   */
  describe(op: Of<K>, style: DescribeStyle): string | undefined;
  /** One line for apply results, conflicts and logs (never undefined). */
  summary(op: Of<K>): string;
  /**
   * Whether a step recomputed at apply time is the reviewed one. A config write compares key by key
   * elsewhere (compare-reviewed), so any config write matches here.
   */
  same(a: Of<K>, b: Of<K>): boolean;
}

function sortedEntries(record: Record<string, string>): string {
  return JSON.stringify(Object.entries(record).sort(([x], [y]) => x.localeCompare(y)));
}

const plain = (text: string): string => text;

/**
 * One registry of every operation, keyed by name: adding an operation to the model's union without
 * describing it here is a compile error, so no renderer, comparison or result line can forget it.
 */
export const OPERATIONS: { readonly [K in OperationName]: OperationRules<K> } = {
  create: {
    describe: (op, s) => `create on node ${s.value(op.node)}`,
    summary: (op) => `create on ${op.node}`,
    same: (a, b) => sortedEntries(a.params) === sortedEntries(b.params),
  },
  config: {
    describe: () => undefined,
    summary: (op) => [...Object.keys(op.set).map((k) => `set ${k}`), ...op.delete.map((k) => `delete ${k}`)].join(', '),
    same: () => true,
  },
  resize: {
    describe: (op, s) => `resize ${s.value(op.disk)} from ${s.value(op.from)} to ${s.value(op.size)} (grows only)`,
    summary: (op) => `resize ${op.disk} ${op.from ? `${op.from} → ` : ''}${op.size}`,
    same: (a, b) => a.disk === b.disk && a.size === b.size && a.from === b.from,
  },
  'move-disk': {
    describe: (op, s) => `move ${s.value(op.disk)} from storage ${s.value(op.from)} to ${s.value(op.storage)}`,
    summary: (op) => `move ${op.disk} ${op.from ? `${op.from} → ` : ''}${op.storage}`,
    same: (a, b) => a.disk === b.disk && a.storage === b.storage && a.from === b.from,
  },
  start: { describe: () => 'start', summary: () => 'start', same: () => true },
  shutdown: { describe: () => 'shut down (clean)', summary: () => 'shutdown', same: () => true },
  stop: { describe: () => 'stop (hard)', summary: () => 'stop', same: () => true },
  destroy: {
    describe: (_op, s) => s.emphasise('destroy the guest and its disks'),
    summary: () => 'destroy',
    same: () => true,
  },
  clone: {
    describe: (op, s) =>
      `${op.full ? 'full' : 'linked'} clone of template ${s.value(op.source.name)} (VMID ${s.value(String(op.source.vmid))}) on ${s.value(op.source.node)} to node ${s.value(op.node)}${op.params.storage ? ` on storage ${s.value(op.params.storage)}` : ''}`,
    summary: (op) => `${op.full ? 'full' : 'linked'} clone of ${op.source.name} (${op.source.vmid}) to ${op.node}`,
    same: (a, b) =>
      a.node === b.node && a.full === b.full && a.source.vmid === b.source.vmid && sortedEntries(a.params) === sortedEntries(b.params),
  },
  template: { describe: () => 'convert to a template (never started)', summary: () => 'convert to template', same: () => true },
  cloudinit: {
    describe: () => 'generate the cloud-init drive again (after the config write)',
    summary: () => 'regenerate cloud-init drive',
    same: () => true,
  },
};

function rulesOf<K extends OperationName>(op: Of<K>): OperationRules<K> {
  return OPERATIONS[op.op as K] as OperationRules<K>;
}

/** One line for a planned operation as a reviewer reads it; undefined for the config write. */
export function describeOperation(op: Operation, style: Partial<DescribeStyle> = {}): string | undefined {
  return rulesOf(op).describe(op as never, { value: style.value ?? plain, emphasise: style.emphasise ?? plain });
}

/** One line describing an operation, for apply results, conflicts and logs. */
export function summariseOperation(op: Operation): string {
  return rulesOf(op).summary(op as never);
}

/** Whether two operations are the same step (config writes are compared key by key elsewhere). */
export function sameOperation(a: Operation, b: Operation): boolean {
  return a.op === b.op && rulesOf(a).same(a as never, b as never);
}
