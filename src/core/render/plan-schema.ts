/**
 * The stored plan, as zod: a plan is written as JSON after review and read back before apply, so
 * what is read must be exactly what `model.ts` describes. Objects are strict because a plan is
 * applied as reviewed: a field this build does not understand must not be silently dropped.
 * Records come out with sorted keys so the same plan always serialises to the same text.
 *
 * Fields added within a version (`hostAccess`, a change's `severity`, the `host-access` severity,
 * `insecureConnections`) are optional, so every plan an older build stored still reads. Version 2
 * added the item envelope (`kind`, `key` on every item) and `objects`; how a version-1 plan is read
 * is `render-json.ts`'s `upgradePlan` (docs/adding-a-kind.md, "Stored plans across versions").
 */
import { z } from 'zod';
import { HOST_ACCESS_RULES } from '../key-rules.js';
import type { Plan } from '../model.js';

/** The plan format version this build reads and writes. */
export const PLAN_VERSION = 2;

/** Sorting record keys makes the JSON independent of the order a planner happened to insert them; the generic keeps values typed (strings, source refs). */
function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  const sorted: Record<string, T> = {};
  for (const key of Object.keys(record).sort()) sorted[key] = record[key] as T;
  return sorted;
}

const StringRecordSchema = z.record(z.string(), z.string()).transform(sortKeys);

const SourceRefSchema = z.strictObject({
  file: z.string(),
  line: z.number().int().nonnegative(),
  col: z.number().int().nonnegative(),
});

const GuestTypeSchema = z.enum(['qemu', 'lxc']);
const RestartPolicySchema = z.strictObject({
  policy: z.enum(['never', 'allowed', 'in-window']),
  force: z.boolean(),
  timeout: z.number().int().positive(),
});
const ImpactSchema = z.enum(['live', 'pending-restart', 'needs-stop', 'data-loss']);
const SeveritySchema = z.enum(['read-only', 'configuration', 'service-impact', 'data-loss', 'host-access']);
const GuestActionSchema = z.enum(['create', 'update', 'destroy', 'noop', 'orphan', 'error']);

const KeyChangeSchema = z.strictObject({
  key: z.string().min(1),
  from: z.string().optional(),
  to: z.string().optional(),
  impact: ImpactSchema,
  severity: z.literal('host-access').optional(),
});

const HostAccessItemSchema = z.strictObject({
  key: z.string().min(1),
  rule: z.enum(HOST_ACCESS_RULES),
  reason: z.string(),
  requires: z.string(),
  alternative: z.string().optional(),
  allowed: z.boolean().optional(),
});

const OperationSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('create'), node: z.string().min(1), params: StringRecordSchema }),
  z.strictObject({
    op: z.literal('config'),
    set: StringRecordSchema,
    delete: z.array(z.string()),
    from: StringRecordSchema,
  }),
  z.strictObject({ op: z.literal('resize'), disk: z.string().min(1), size: z.string().min(1), from: z.string() }),
  z.strictObject({ op: z.literal('move-disk'), disk: z.string().min(1), storage: z.string().min(1), from: z.string() }),
  z.strictObject({ op: z.literal('start') }),
  z.strictObject({ op: z.literal('shutdown') }),
  z.strictObject({ op: z.literal('stop') }),
  z.strictObject({ op: z.literal('destroy') }),
  z.strictObject({
    op: z.literal('clone'),
    node: z.string().min(1),
    source: z.strictObject({ vmid: z.number().int().positive(), node: z.string().min(1), name: z.string() }),
    full: z.boolean(),
    config: StringRecordSchema,
    params: StringRecordSchema,
  }),
  z.strictObject({ op: z.literal('template') }),
  z.strictObject({ op: z.literal('cloudinit') }),
]);

export const ClusterSpecSchema = z.strictObject({
  name: z.string().min(1),
  vmids: z.strictObject({ lower: z.number().int(), upper: z.number().int() }),
  ownerTag: z.string(),
  nodes: z.array(z.string()),
  storages: z.array(z.string()).optional(),
  bridges: z.array(z.string()).optional(),
  prune: z.boolean(),
  restart: RestartPolicySchema.optional(),
  restartsInFlight: z.number().int().positive().optional(),
  windows: z.array(z.string().min(1)).optional(),
  snapshot: z.enum(['always', 'risky', 'never']).optional(),
  snapshotsKept: z.number().int().positive().optional(),
  source: SourceRefSchema,
});

export const GuestSpecSchema = z.strictObject({
  kind: z.enum(['VM', 'Container']),
  type: GuestTypeSchema,
  name: z.string().min(1),
  cluster: z.string().min(1),
  node: z.string(),
  vmid: z.number().int().positive(),
  vmidDerived: z.boolean(),
  power: z.enum(['running', 'stopped', 'ignore']),
  state: z.enum(['present', 'absent']),
  adopt: z.boolean(),
  ignore: z.array(z.string()),
  config: StringRecordSchema,
  createOptions: StringRecordSchema.optional(),
  restart: RestartPolicySchema.optional(),
  dependsOn: z.array(z.string().min(1)).optional(),
  clone: z
    .strictObject({
      template: z.string().min(1),
      full: z.boolean().optional(),
      storage: z.string().optional(),
      format: z.string().optional(),
    })
    .optional(),
  template: z.boolean().optional(),
  regenerateCloudinit: z.boolean().optional(),
  windows: z.array(z.string().min(1)).optional(),
  snapshot: z.enum(['always', 'risky', 'never']).optional(),
  source: SourceRefSchema,
  keySources: z.record(z.string(), SourceRefSchema).transform(sortKeys).optional(),
  refs: z.record(z.string(), z.unknown()).transform(sortKeys).optional(),
});

/** A document of another kind as loaded (`ObjectSpec`): stored beside a pull request's plan. */
export const ObjectSpecSchema = z.strictObject({
  kind: z.string().min(1),
  document: z.string().min(1),
  cluster: z.string().min(1),
  id: z.string().min(1),
  state: z.enum(['present', 'absent']),
  fields: z.record(z.string(), z.unknown()),
  source: SourceRefSchema,
});

const DriftItemSchema = z.strictObject({
  key: z.string().min(1),
  expected: z.string().optional(),
  actual: z.string().optional(),
});

const PendingItemSchema = z.strictObject({
  key: z.string().min(1),
  current: z.string().optional(),
  pending: z.string().optional(),
  delete: z.boolean().optional(),
});

export const GuestPlanSchema = z.strictObject({
  kind: z.literal('guest'),
  key: z.string().min(1),
  cluster: z.string().min(1),
  name: z.string().min(1),
  vmid: z.number().int().positive(),
  vmidDerived: z.boolean(),
  type: GuestTypeSchema,
  node: z.string(),
  action: GuestActionSchema,
  digest: z.string().optional(),
  adopt: z.boolean().optional(),
  liveWithheld: z.boolean().optional(),
  changes: z.array(KeyChangeSchema),
  operations: z.array(OperationSchema),
  drift: z.array(DriftItemSchema),
  pending: z.array(PendingItemSchema),
  errors: z.array(z.string()),
  warnings: z.array(z.string()),
  hostAccess: z.array(HostAccessItemSchema).optional(),
  impact: ImpactSchema.optional(),
  severity: SeveritySchema,
  source: SourceRefSchema.optional(),
  after: z.array(z.string().min(1)).optional(),
  restart: z
    .strictObject({
      reason: z.string(),
      force: z.boolean(),
      timeout: z.number().int().positive(),
      inFlight: z.number().int().positive(),
      inWindow: z.boolean().optional(),
    })
    .optional(),
  windows: z.array(z.string().min(1)).optional(),
  snapshot: z.strictObject({ reason: z.string(), keep: z.number().int().positive() }).optional(),
  target: z.strictObject({ spec: GuestSpecSchema.optional(), ownerTag: z.string(), prune: z.boolean() }),
});

/**
 * An item of any other kind: the envelope checked here, its operations and payload by its kind's
 * own schemas once the kind is known (`render-json.ts`), so nothing of it is read unchecked.
 */
export const ObjectPlanSchema = z.strictObject({
  kind: z
    .string()
    .min(1)
    .refine((kind) => kind !== 'guest', 'a guest is stored under guests'),
  key: z.string().min(1),
  cluster: z.string().min(1),
  name: z.string().min(1),
  action: GuestActionSchema,
  changes: z.array(KeyChangeSchema),
  operations: z.array(z.looseObject({ op: z.string().min(1) })),
  drift: z.array(DriftItemSchema),
  errors: z.array(z.string()),
  warnings: z.array(z.string()),
  severity: SeveritySchema,
  source: SourceRefSchema.optional(),
  after: z.array(z.string().min(1)).optional(),
  windows: z.array(z.string().min(1)).optional(),
  liveWithheld: z.boolean().optional(),
  payload: z.record(z.string(), z.unknown()),
});

const count = z.number().int().nonnegative();

const PlanSummarySchema = z.strictObject({
  create: count,
  update: count,
  destroy: count,
  noop: count,
  orphan: count,
  error: count,
  drifted: count,
  pending: count,
});

/** A plan-level error or warning: not tied to one guest. */
const PlanNoteSchema = z.strictObject({ cluster: z.string().optional(), message: z.string() });

/** A stored plan. Key order here is the key order of the serialised JSON. */
export const PlanSchema = z.strictObject({
  version: z.literal(PLAN_VERSION),
  createdAt: z.string().min(1),
  ref: z.string().optional(),
  clusters: z.array(z.string()),
  clusterSpecs: z.array(ClusterSpecSchema).optional(),
  summary: PlanSummarySchema,
  errors: z.array(PlanNoteSchema),
  warnings: z.array(PlanNoteSchema),
  insecureConnections: z.array(z.strictObject({ cluster: z.string().min(1), transport: z.enum(['http', 'tls-unverified']) })).optional(),
  guests: z.array(GuestPlanSchema),
  objects: z.array(ObjectPlanSchema),
});

/** The parsed plan; identical to `model.ts`'s `Plan` (checked below at compile time). */
export type PlanSchema = z.infer<typeof PlanSchema>;

/** True only when A and B are the same type, so a field added to one side fails the build. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Re-maps interfaces and zod's inferred objects into one shape so only real differences count. */
type Normalise<T> = T extends object ? { [K in keyof T]: Normalise<T[K]> } : T;
type Assert<T extends true> = T;
/** Compile-time guard: the schema mirrors `Plan` exactly. */
export type PlanSchemaMirrorsModel = Assert<Equals<Normalise<PlanSchema>, Normalise<Plan>>>;
