/**
 * The HA kind: a guest's HA resource (pve-ha-manager), written as a top-level `ha:` on VM and
 * Container documents (no document of its own), the same shape as a guest's `pool:`. Absent:
 * HA is not managed by the spec; `ha: ~` (null): the guest is not HA-managed (the resource is
 * removed); `ha: { state: started, … }`: the resource exists with those fields. Inside the
 * mapping, a field left out means Proxmox's default (`state` started, `failback` true,
 * `max_restart` and `max_relocate` 1, no `comment`): a live value that differs is deleted.
 * Fields outside these five (an operator's `group`) are never sent or cleared.
 *
 * Planned per guest in the phase after guests (each item follows its guest's item). Apply reads
 * the resource with the digest of the whole `resources.cfg`, compares it with what was reviewed
 * (moved: `conflict`, nothing written), and writes with the digest; a stale digest caused by
 * another resource's edit is re-read and, while this resource is still as reviewed, retried a
 * bounded number of times. Proxmox's side: `API2/HA/Resources.pm` (docs/proxmox-behaviour.md, HA-1…).
 */
import { z } from 'zod';
import type { DriftItem, GuestPlan, GuestSpec, KeyChange, ObjectOperation, ObjectPlan, SpecSet } from '../../model.js';
import { DigestConflictError, PermissionDeniedError } from '../../port-errors.js';
import {
  type KindError,
  type KindObserveInput,
  type KindPlanInput,
  type ObjectApplyOutcome,
  type ObjectKind,
  SAMPLE_CLUSTER,
} from '../kind.js';
import { declaresGuestKey, planGuestParts } from '../guest-part.js';
import { guestKeyText, keyText, resourceKey } from '../resource-key.js';
import { item, storedString, runOperations } from '../object-item.js';
import type { HaFields, HaPort, HaResource } from './port.js';
import { flavourOf } from '../../guest-flavours.js';

/** The registry name, also the kind part of its keys (`lab/ha/100`). */
export const HA_KIND = 'ha';

export const HA_OPERATIONS = ['add-ha', 'update-ha', 'remove-ha'] as const;

/** How many times an update re-reads after a stale digest before it reports. */
export const HA_DIGEST_ATTEMPTS = 3;

/** The managed fields, in the order the plan shows them. */
const FIELDS = ['state', 'max_restart', 'max_relocate', 'failback', 'comment'] as const;
type Field = (typeof FIELDS)[number];

/** The states a spec may ask for (`enabled` is Proxmox's alias of `started`, not written here). */
const HA_STATES = ['started', 'stopped', 'disabled', 'ignored'] as const;

/** The guest key: `ha: { … }`, or `ha: null` for not HA-managed. */
const HaKey = z.union([
  z.strictObject({
    state: z.enum(HA_STATES).optional(),
    max_restart: z.number().int().min(0).optional(),
    max_relocate: z.number().int().min(0).optional(),
    failback: z.boolean().optional(),
    comment: z.string().max(4096).optional(),
  }),
  z.null(),
]);

/** What observe read for one cluster. */
export interface HaObserved {
  /** Every HA resource by SID; absent when it could not be read. */
  resources?: Record<string, HaResource>;
  /** Why the resources could not be read. */
  error?: string;
}

/** The key of a guest's HA item (`lab/ha/100`). */
export function haKey(cluster: string, vmid: number): string {
  return keyText(resourceKey(cluster, HA_KIND, vmid));
}

/** `vm:100` or `ct:100`, as Proxmox names a guest's resource. */
export function haSid(type: 'qemu' | 'lxc', vmid: number): string {
  return `${flavourOf(type).resourcePrefix}:${vmid}`;
}

const managed = declaresGuestKey('ha');

/** The fields the guest asks for, or null for not HA-managed. */
function wanted(guest: GuestSpec): HaFields | null {
  const value = guest.refs?.ha;
  return value === null || value === undefined || typeof value !== 'object' ? null : (value as HaFields);
}

/** Proxmox's defaults (`read_and_check_resources_config`). */
const DEFAULTS: Required<Omit<HaFields, 'comment'>> = { state: 'started', max_restart: 1, max_relocate: 1, failback: true };

/** A field's value in effect, as text for the plan (`enabled` is `started`); undefined: no comment. */
function effective(fields: HaFields, field: Field): string | undefined {
  if (field === 'comment') return fields.comment;
  const value = fields[field] ?? DEFAULTS[field];
  if (field === 'state' && value === 'enabled') return 'started';
  return String(value);
}

/** The managed fields as stored (only those set), for a stored item. */
function storedFields(fields: HaFields): HaFields {
  const out: HaFields = {};
  for (const field of FIELDS) if (fields[field] !== undefined) (out as Record<string, unknown>)[field] = fields[field];
  return out;
}

function sameFields(a: HaFields, b: HaFields): boolean {
  return FIELDS.every((field) => effective(a, field) === effective(b, field));
}

function onCluster(guests: readonly GuestSpec[], cluster: string): GuestSpec[] {
  return guests.filter((g) => g.cluster === cluster && managed(g));
}

function validate(_specs: SpecSet): KindError[] {
  return [];
}

async function observe(port: HaPort, input: KindObserveInput): Promise<HaObserved> {
  const guests = [...onCluster(input.headGuests, input.cluster), ...onCluster(input.baseGuests, input.cluster)];
  if (guests.length === 0) return {};
  try {
    return { resources: Object.fromEntries((await port.listResources()).map((r) => [r.sid, r])) };
  } catch (err) {
    if (err instanceof PermissionDeniedError) return { error: `cannot read HA resources: the token lacks Sys.Audit on / (${err.message})` };
    return { error: `cannot read HA resources: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** The resource of a guest, by either SID form (a VMID is one guest, VM or container). */
function liveResource(observed: HaObserved, vmid: number): HaResource | undefined {
  return observed.resources?.[`vm:${vmid}`] ?? observed.resources?.[`ct:${vmid}`];
}

function plan(input: KindPlanInput<HaObserved>): ObjectPlan[] {
  return planGuestParts(
    input,
    { declares: managed, same: (before, head) => sameWanted(wanted(before), wanted(head)) },
    (guest, guestPlan, unchanged) => planHa(guest, guestPlan, input.observed, unchanged),
  );
}

function sameWanted(a: HaFields | null, b: HaFields | null): boolean {
  if (a === null || b === null) return a === b;
  return sameFields(a, b);
}

/** The impact of one field's change: a state change reaches the guest's service. */
function impactOf(field: Field, from: string | undefined, to: string | undefined): KeyChange['impact'] {
  if (field !== 'state') return 'live';
  // The CRM stops the guest for `stopped` and `disabled`; `ignored` and `started` leave it running or start it.
  return from !== to && (to === 'stopped' || to === 'disabled') ? 'needs-stop' : 'live';
}

function planHa(guest: GuestSpec, guestPlan: GuestPlan | undefined, observed: HaObserved, unchanged: boolean): ObjectPlan {
  const { cluster, vmid } = guest;
  const sid = haSid(guest.type, vmid);
  const want = wanted(guest);
  const base = { source: guest.source, payload: { vmid, guest: guest.name, sid }, after: [guestKeyText(cluster, vmid)] };
  const make = (parts: Omit<Parameters<typeof item>[4], 'payload'>) => {
    const made = item(HA_KIND, haKey(cluster, vmid), cluster, guest.name, { ...base, ...parts });
    if (made.changes.some((c) => c.key === 'ha.state') && made.action !== 'error') made.severity = 'service-impact';
    return made;
  };
  const creating = guestPlan?.action === 'create';
  let now: HaResource | undefined;
  if (!creating) {
    if (observed.error !== undefined) return make({ action: 'error', errors: [observed.error] });
    now = liveResource(observed, vmid);
    if (now !== undefined && now.sid !== sid)
      return make({
        action: 'error',
        errors: [`HA resource '${now.sid}' names guest ${vmid}, which the spec declares as a ${guest.kind}`],
      });
  }
  const warnings: string[] = [];
  if (guestPlan?.action === 'error')
    warnings.push(`the plan of guest ${vmid} has an error: its HA resource applies only once the guest's own changes do`);
  if (want === null) {
    if (now === undefined) return make({ action: 'noop' });
    const from = storedFields(now);
    return make({
      action: 'update',
      changes: [{ key: 'ha', from: 'managed', impact: 'live' }],
      drift: unchanged ? [{ key: 'ha', actual: 'managed' }] : [],
      operations: [{ op: 'remove-ha', vmid, sid, from }],
      warnings,
    });
  }
  const set = storedFields(want);
  if (now === undefined) {
    const changes: KeyChange[] = [{ key: 'ha', to: 'managed', impact: impactOf('state', undefined, effective(want, 'state')) }];
    for (const field of FIELDS) {
      const to = effective(want, field);
      if (to !== undefined) changes.push({ key: `ha.${field}`, to, impact: field === 'state' ? impactOf('state', undefined, to) : 'live' });
    }
    return make({
      action: 'update',
      changes,
      drift: unchanged && !creating ? [{ key: 'ha', expected: 'managed' }] : [],
      operations: [{ op: 'add-ha', vmid, sid, set }],
      warnings,
    });
  }
  const changes: KeyChange[] = [];
  const drift: DriftItem[] = [];
  const changed: HaFields = {};
  const remove: string[] = [];
  for (const field of FIELDS) {
    const from = effective(now, field);
    const to = effective(want, field);
    if (from === to) continue;
    changes.push({
      key: `ha.${field}`,
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
      impact: impactOf(field, from, to),
    });
    if (unchanged)
      drift.push({ key: `ha.${field}`, ...(to !== undefined ? { expected: to } : {}), ...(from !== undefined ? { actual: from } : {}) });
    if (want[field] !== undefined) (changed as Record<string, unknown>)[field] = want[field];
    else remove.push(field);
  }
  if (changes.length === 0) return make({ action: 'noop' });
  return make({
    action: 'update',
    changes,
    drift,
    operations: [{ op: 'update-ha', vmid, sid, from: storedFields(now), set: changed, delete: remove }],
    warnings,
  });
}

/** Fields as a stored item holds them: what a spec may write, or what was read (`enabled` included). */
const StoredFields = z.strictObject({
  state: z.enum([...HA_STATES, 'enabled']).optional(),
  max_restart: z.number().int().min(0).optional(),
  max_relocate: z.number().int().min(0).optional(),
  failback: z.boolean().optional(),
  comment: z.string().optional(),
});

function storedHaFields(value: unknown, what: string): HaFields {
  const parsed = StoredFields.safeParse(value);
  if (!parsed.success) throw new Error(`stored item: ${what} is not a set of HA fields`);
  return parsed.data;
}

function checkStored(stored: ObjectPlan): void {
  const vmid = stored.payload.vmid;
  if (typeof vmid !== 'number' || !Number.isInteger(vmid)) throw new Error('stored item: payload.vmid is not a VMID');
  for (const op of stored.operations) {
    if (!(HA_OPERATIONS as readonly string[]).includes(op.op)) throw new Error(`stored item: unknown ha operation '${op.op}'`);
    if (op.vmid !== vmid) throw new Error(`stored item: ${op.op} names another guest`);
    const sid = storedString(op.sid, `${op.op}.sid`);
    if (sid !== `vm:${vmid}` && sid !== `ct:${vmid}`) throw new Error(`stored item: ${op.op}.sid does not name guest ${vmid}`);
    if (op.op === 'add-ha' || op.op === 'update-ha') storedHaFields(op.set, `${op.op}.set`);
    if (op.op === 'update-ha' || op.op === 'remove-ha') storedHaFields(op.from, `${op.op}.from`);
    if (op.op === 'update-ha') {
      if (!Array.isArray(op.delete) || !op.delete.every((f) => (FIELDS as readonly unknown[]).includes(f)))
        throw new Error('stored item: update-ha.delete names a field the HA kind does not manage');
    }
  }
}

function fieldText(value: unknown): string {
  const fields = (typeof value === 'object' && value !== null ? value : {}) as HaFields;
  const parts = FIELDS.filter((f) => fields[f] !== undefined).map((f) => `${f}=${String(fields[f])}`);
  return parts.length > 0 ? parts.join(', ') : 'defaults';
}

function describe(op: ObjectOperation): string | undefined {
  const sid = String(op.sid);
  if (op.op === 'add-ha') return `add HA resource ${sid} (${fieldText(op.set)})`;
  if (op.op === 'update-ha') {
    const remove = Array.isArray(op.delete) ? op.delete.map(String) : [];
    return `update HA resource ${sid} (${fieldText(op.set)}${remove.length > 0 ? `; back to default: ${remove.join(', ')}` : ''})`;
  }
  if (op.op === 'remove-ha') return `remove HA resource ${sid} (the guest is no longer HA-managed)`;
  return undefined;
}

/** What moved between review and apply, one line per field. */
function moved(sid: string, reviewed: HaFields, now: HaFields): string[] {
  return FIELDS.filter((f) => effective(reviewed, f) !== effective(now, f)).map(
    (f) => `HA resource ${sid} ${f}: reviewed ${effective(reviewed, f) ?? 'none'}, now ${effective(now, f) ?? 'none'}`,
  );
}

/** The fields after an update of `from` with `set` and `delete`. */
function afterUpdate(from: HaFields, set: HaFields, remove: readonly string[]): HaFields {
  const out: Record<string, unknown> = { ...from, ...set };
  for (const field of remove) delete out[field];
  return out as HaFields;
}

async function execute(stored: ObjectPlan, port: HaPort): Promise<ObjectApplyOutcome> {
  const steps: ObjectApplyOutcome['steps'] = [];
  return runOperations(stored.operations, steps, async (op, started) => {
    const sid = String(op.sid);
    if (op.op === 'add-ha') {
      const set = op.set as HaFields;
      const now = await port.readResource(sid);
      if (now) {
        if (sameFields(now.resource, set)) return { status: 'unchanged', steps };
        return { status: 'conflict', steps, conflict: [`HA resource ${sid} was added on the cluster after the review`] };
      }
      await port.createResource(sid, set);
      const after = await port.readResource(sid);
      if (!after || !sameFields(after.resource, set))
        return { status: 'failed', steps, error: `HA resource ${sid} is not as planned after its creation` };
      steps.push({ op: 'add-ha', detail: `${sid} (${fieldText(set)})`, ms: Date.now() - started });
    } else if (op.op === 'update-ha') {
      const from = op.from as HaFields;
      const set = op.set as HaFields;
      const remove = op.delete as string[];
      const target = afterUpdate(from, set, remove);
      let attempt = 0;
      for (;;) {
        attempt += 1;
        const now = await port.readResource(sid);
        if (!now) return { status: 'conflict', steps, conflict: [`HA resource ${sid} was removed on the cluster after the review`] };
        if (sameFields(now.resource, target)) {
          if (attempt === 1) return { status: 'unchanged', steps };
          break;
        }
        if (!sameFields(now.resource, from)) return { status: 'conflict', steps, conflict: moved(sid, from, now.resource) };
        try {
          await port.updateResource(sid, set, remove, now.digest);
          break;
        } catch (err) {
          // The digest covers every resource: another guest's HA edit makes it stale. Re-read and retry while this one is as reviewed.
          if (!(err instanceof DigestConflictError)) throw err;
          if (attempt >= HA_DIGEST_ATTEMPTS)
            return {
              status: 'failed',
              steps,
              retryable: true,
              error: `HA resource ${sid}: resources.cfg changed under each of ${HA_DIGEST_ATTEMPTS} attempts (${err.message})`,
            };
        }
      }
      const after = await port.readResource(sid);
      if (!after || !sameFields(after.resource, target))
        return { status: 'failed', steps, error: `HA resource ${sid} is not as planned after the update` };
      steps.push({
        op: 'update-ha',
        detail: `${sid} (${fieldText(set)}${remove.length > 0 ? `; default: ${remove.join(', ')}` : ''})`,
        ms: Date.now() - started,
      });
    } else if (op.op === 'remove-ha') {
      const from = op.from as HaFields;
      const now = await port.readResource(sid);
      if (!now) return { status: 'unchanged', steps };
      if (!sameFields(now.resource, from)) return { status: 'conflict', steps, conflict: moved(sid, from, now.resource) };
      await port.deleteResource(sid);
      if (await port.readResource(sid)) return { status: 'failed', steps, error: `HA resource ${sid} is still there after its removal` };
      steps.push({ op: 'remove-ha', detail: sid, ms: Date.now() - started });
    } else {
      return { status: 'failed', steps, error: `unknown ha operation '${op.op}'` };
    }
    return undefined;
  });
}

export const haKind: ObjectKind<HaPort, HaObserved> = {
  name: HA_KIND,
  documents: [],
  guestKeys: [
    {
      key: 'ha',
      schema: HaKey,
      description:
        "the guest's HA resource: state, max_restart, max_relocate, failback, comment (a field left out is Proxmox's default); null: not HA-managed; left out, HA is not managed",
    },
  ],
  phase: 'guest-parts',
  hasNode: false,
  operations: HA_OPERATIONS,
  simRoutes: ['ha'],
  testFactory: () => ({
    yaml: [
      ...SAMPLE_CLUSTER,
      'kind: VM',
      'name: db-01',
      'cluster: lab',
      'node: pve-01',
      'ha: { state: stopped, max_restart: 2, comment: primary db }',
      'config: { memory: 2048, cores: 2 }',
      '',
    ].join('\n'),
  }),
  load() {
    throw new Error('the ha kind has no document: a guest writes its HA resource as ha:');
  },
  validate,
  observe,
  plan,
  checkStored,
  label: (stored) => `HA resource of ${stored.name} (${String(stored.payload.sid)})`,
  // `API2/HA/Resources.pm`: `index` and `read` check Sys.Audit on `/`; `create`, `update` and `delete` Sys.Console on `/`.
  requiredPrivileges: ({ guests }, mode) =>
    guests.some(managed)
      ? [
          mode === 'read'
            ? { path: '/', privilege: 'Sys.Audit', why: 'to read HA resources' }
            : { path: '/', privilege: 'Sys.Console', why: 'to add, change and remove HA resources' },
        ]
      : [],
  describe,
  execute: (stored, port) => execute(stored, port),
};
