/**
 * What a kind of managed object is to the core: one module per kind (docs/adding-a-kind.md). The
 * loader, the planner, the executor, the renderers, the JSON Schema and the queue read a kind only
 * through this interface, so a new kind is a folder and a line in `registry.ts`, not edits across
 * the house. The guest kind (VMs and containers) is built in: its planning and apply predate the
 * registry and keep their own pipeline, and its module declares the same facts for the
 * conformance test. Every other kind goes through the generic pipeline below.
 */
import type { z } from 'zod';
import type { GuestPlan, GuestSpec, ObjectOperation, ObjectPlan, ObjectSpec, SourceRef, SpecSet } from '../model.js';
import type { ApplyStep } from '../apply-result.js';

/**
 * When a kind's items apply, in order: objects a guest refers to (a pool) before guests, a
 * guest's parts (its pool membership, its firewall) after their guest.
 */
export const APPLY_PHASES = ['referenced', 'guests', 'guest-parts'] as const;
export type ApplyPhase = (typeof APPLY_PHASES)[number];

/** A phase's position: lower applies first. */
export function phaseRank(phase: ApplyPhase): number {
  return APPLY_PHASES.indexOf(phase);
}

/** One document name of a kind with the schema that checks it as written. */
export interface KindDocument {
  /** The `kind:` value users write (`Pool`). */
  name: string;
  /** The document's shape, strict: an unknown key is an error. */
  schema: z.ZodType;
}

/** A top-level key a kind adds to guest documents (a guest's `pool:`). */
export interface GuestKey {
  key: string;
  /** The value as written (any JSON value the kind accepts; a pool's `null` means "none"). */
  schema: z.ZodType;
  /** One line for `validate` and the JSON Schema. */
  description: string;
  /**
   * The kind whose objects the value names (a guest's `pool:` names a `pool`): that kind is then
   * planned on every cluster where a guest writes the key, so it can say when the object is missing.
   */
  refersTo?: string;
}

/** One privilege a kind's specs need on one ACL path, and why (as `check` reports it). */
export interface KindPrivilege {
  path: string;
  privilege: string;
  why: string;
  /** Other paths that grant the same. */
  orOn?: string[];
}

/** What a kind's test factory gives the conformance test: documents that load and plan. */
export interface KindSample {
  /** YAML of a whole spec tree (one file), a Cluster document included. */
  yaml: string;
}

/** The Cluster document a kind's sample starts with (the lines, ending with the document break). */
export const SAMPLE_CLUSTER: readonly string[] = [
  'kind: Cluster',
  'name: lab',
  'vmids: { lower: 100000, upper: 200000 }',
  'nodes: [pve-01]',
  '---',
];

/** Facts every kind declares, the guest kind included; the conformance test checks each. */
export interface KindFacts {
  /** The registry name (`pool`); also the kind part of its items' keys. */
  name: string;
  /** The documents that declare objects of this kind. */
  documents: readonly KindDocument[];
  /** The apply phase its items belong to. */
  phase: ApplyPhase;
  /** Whether its objects live on a node: only then does the queue's per-node slot apply. */
  hasNode: boolean;
  /** The `op` of every operation its items may hold. */
  operations: readonly string[];
  /** The simulator route modules (`src/pve/sim/routes.ts`, by name) that serve its endpoints. */
  simRoutes: readonly string[];
  /** A small sample the conformance test loads, plans and applies against the simulator. */
  testFactory(): KindSample;
}

/** A problem found in a kind's documents, at the place it was written. */
export interface KindError {
  at: SourceRef;
  message: string;
}

/** Everything a kind's plan may look at for one cluster. */
export interface KindPlanInput<Observed> {
  cluster: string;
  /** The head branch's documents of this kind on this cluster. */
  head: readonly ObjectSpec[];
  /** The base branch's, when there is a base (a pull request); undefined for a CLI plan. */
  base?: readonly ObjectSpec[];
  /** Guests of the cluster in the head and base specs (their `refs`), and their plans. */
  headGuests: readonly GuestSpec[];
  baseGuests: readonly GuestSpec[];
  guestPlans: readonly GuestPlan[];
  /** Whether every object of the kind on the cluster is in scope (no base, a drift report, a changed Cluster document). */
  full: boolean;
  /** What `observe` returned for the cluster. */
  observed: Observed;
}

/** Everything a kind's observe may look at for one cluster. */
export interface KindObserveInput {
  cluster: string;
  head: readonly ObjectSpec[];
  base: readonly ObjectSpec[];
  headGuests: readonly GuestSpec[];
  baseGuests: readonly GuestSpec[];
}

/** How one item's apply ended. */
export interface ObjectApplyOutcome {
  status: 'applied' | 'unchanged' | 'conflict' | 'failed' | 'skipped';
  steps: ApplyStep[];
  error?: string;
  /** What moved between review and apply (status `conflict`), one line each. */
  conflict?: string[];
  retryable?: boolean;
}

/** Per call of a kind's executor. */
export interface ObjectApplyContext {
  signal?: AbortSignal;
  /** Reports each step as it finishes (for progress lines). */
  onStep?: (step: ApplyStep) => void;
}

/**
 * A kind of object other than the guest, planned and applied through the generic pipeline. `Port`
 * is the kind's own port (declared in its folder, implemented by its adapter under `src/pve/kinds/`);
 * `Observed` is what its observe reads for a plan and must be JSON (plans are data).
 */
export interface ObjectKind<Port = unknown, Observed = unknown> extends KindFacts {
  /** Keys this kind adds to guest documents. */
  guestKeys?: readonly GuestKey[];
  /** A parsed document (already checked by its schema) as a spec; `at` is where it was written. */
  load(document: Record<string, unknown>, at: SourceRef): ObjectSpec;
  /**
   * The privileges the kind's specs on one cluster need: `read` for a plan, `apply` to carry it
   * out (`pve-gitops check` compares them with the tokens' effective permissions).
   */
  requiredPrivileges?(specs: { objects: readonly ObjectSpec[]; guests: readonly GuestSpec[] }, mode: 'read' | 'apply'): KindPrivilege[];
  /** Checks across documents (duplicates, references); the guests' `refs` included. */
  validate(specs: SpecSet): KindError[];
  /** Reads what planning needs from one cluster through the kind's port. Never writes. */
  observe(port: Port, input: KindObserveInput): Promise<Observed>;
  /** The items of one cluster, pure. */
  plan(input: KindPlanInput<Observed>): ObjectPlan[];
  /** Checks a stored item's operations and payload before it is applied (throws with why). */
  checkStored(item: ObjectPlan): void;
  /** One line naming the object for people (`pool web`). */
  label(item: ObjectPlan): string;
  /** One line per operation for people (undefined: the change table already shows it). */
  describe(op: ObjectOperation): string | undefined;
  /**
   * Carries out one item: reads before it writes, compares with what was reviewed, writes, and
   * says what it did. Never throws for a refusal: the outcome says it.
   */
  execute(item: ObjectPlan, port: Port, context: ObjectApplyContext): Promise<ObjectApplyOutcome>;
}
