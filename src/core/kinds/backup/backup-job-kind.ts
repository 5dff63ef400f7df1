/**
 * The backup-job kind: a vzdump job declared by a `kind: BackupJob` document (docs/adding-a-kind.md).
 *
 * The job owns its selection: the document lists its guests by name (or says `all: true` or
 * `pool:`), not each guest by a key of its own. Proxmox keeps the selection as one value, the
 * job's `vmid` list, that a `PUT /cluster/backup/{id}` replaces whole; there is no digest, and
 * nothing serialises two writers of one job for us. One item per job, written by one writer (the
 * queue gives each item key one), comparing what it reads with what was reviewed, is the only
 * safe shape. Per-guest keys would be many items writing one value.
 *
 * Planned after guests (phase `guest-parts`: a job names guests, and those the same plan creates
 * are in its `after`), created, changed property by property, destroyed only with `state: absent`;
 * a removed document leaves the job alone. Names resolve to VMIDs through the specs first, then
 * the cluster's listing. A guest destroyed with `purge` has already left every job (pve-guest-common
 * `remove_vmid_from_backup_jobs`), so its absence is no drift once the spec no longer names it.
 * Proxmox's side: pve-manager `API2/Backup.pm` (docs/proxmox-behaviour.md, "Backup jobs").
 */
import { type ItemParts, item, runOperations } from '../object-item.js';
import type { GuestPlan, GuestSpec, KeyChange, ObjectOperation, ObjectPlan, ObjectSpec, SpecSet } from '../../model.js';
import { PermissionDeniedError } from '../../port-errors.js';
import {
  type KindError,
  type KindObserveInput,
  type KindPlanInput,
  type KindPrivilege,
  type ObjectApplyOutcome,
  type ObjectKind,
  SAMPLE_CLUSTER,
} from '../kind.js';
import { guestKeyText, keyText, resourceKey } from '../resource-key.js';
import {
  BackupJobDocument,
  effective,
  holds,
  type JobValues,
  jobUpdate,
  liveValues,
  moved,
  ROOT_ONLY,
  SELECTION,
  sameSelection,
  selectionOf,
  SETTINGS,
  wantedValues,
} from './job.js';
import type { BackupJobPort, NamedGuest } from './port.js';

/** The registry name. */
export const BACKUP_JOB_KIND = 'backup-job';

export const BACKUP_JOB_OPERATIONS = ['create-backup-job', 'update-backup-job', 'destroy-backup-job'] as const;

/** What observe read on one cluster. */
export interface BackupJobObserved {
  /** The managed values of every job the documents name, null for one that does not exist. */
  jobs: Record<string, JobValues | null>;
  /** The cluster's guests, read only when a name is not a guest of the specs. */
  guests?: NamedGuest[];
  /** Why the jobs could not be read (every item of the cluster is then an error). */
  error?: string;
}

/** The key of a job's item (`lab/backup-job/nightly`). */
export function jobKey(cluster: string, id: string): string {
  return keyText(resourceKey(cluster, BACKUP_JOB_KIND, id));
}

function onCluster(specs: readonly ObjectSpec[] | undefined, cluster: string): ObjectSpec[] {
  return (specs ?? []).filter((s) => s.kind === BACKUP_JOB_KIND && s.cluster === cluster);
}

function guestNames(spec: ObjectSpec): string[] {
  const selection = selectionOf(spec);
  return selection && 'guests' in selection ? selection.guests : [];
}

function sameSpec(a: ObjectSpec, b: ObjectSpec): boolean {
  return a.state === b.state && JSON.stringify(a.fields) === JSON.stringify(b.fields);
}

/** `name (vmid)`. */
function guestLabel(vmid: number, names: ReadonlyMap<number, string>): string {
  const name = names.get(vmid);
  return name === undefined ? `VM ${vmid}` : `${name} (${vmid})`;
}

/**
 * Checks across documents beyond the generic ones (a known cluster, one document per job): no
 * root-only option, no guest named twice, no guest named that the specs destroy.
 */
function validate(specs: SpecSet): KindError[] {
  const errors: KindError[] = [];
  for (const job of (specs.objects ?? []).filter((o) => o.kind === BACKUP_JOB_KIND)) {
    for (const key of ROOT_ONLY) {
      if (job.fields[key] !== undefined) {
        errors.push({
          at: job.source,
          message: `backup job '${job.id}': '${key}' is refused: Proxmox lets only root@pam set ${ROOT_ONLY.join(', ')} ("Only root may set this option.", Backup.pm assert_param_permission_common), and pve-gitops writes with an API token`,
        });
      }
    }
    const names = guestNames(job);
    const twice = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
    if (twice.length > 0) errors.push({ at: job.source, message: `backup job '${job.id}' names ${twice.join(', ')} more than once` });
    if (job.state !== 'present') continue;
    for (const name of new Set(names)) {
      const guest = specs.guests.find((g) => g.cluster === job.cluster && g.name === name);
      if (guest?.state === 'absent') {
        errors.push({
          at: job.source,
          message: `backup job '${job.id}' names ${name} (${guest.vmid}), which has state: absent: drop it from the job (destroying a guest with purge removes it from every job)`,
        });
      }
    }
  }
  return errors;
}

async function observe(port: BackupJobPort, input: KindObserveInput): Promise<BackupJobObserved> {
  const specs = [...onCluster(input.head, input.cluster), ...onCluster(input.base, input.cluster)];
  if (specs.length === 0) return { jobs: {} };
  let listed: Awaited<ReturnType<BackupJobPort['listJobs']>>;
  try {
    listed = await port.listJobs();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (err instanceof PermissionDeniedError)
      return { jobs: {}, error: `cannot read backup jobs: the token lacks Sys.Audit on / (${why})` };
    return { jobs: {}, error: `cannot read backup jobs: ${why}` };
  }
  const jobs: Record<string, JobValues | null> = {};
  for (const spec of specs) {
    const raw = listed.find((j) => j.id === spec.id);
    jobs[spec.id] = raw === undefined ? null : liveValues(raw);
  }
  const known = new Set(input.headGuests.filter((g) => g.cluster === input.cluster && g.state === 'present').map((g) => g.name));
  const unknown = onCluster(input.head, input.cluster).some((s) => guestNames(s).some((n) => !known.has(n)));
  // The listing also names the live selection's guests in the plan (a VMID alone says little).
  const live = Object.values(jobs).some((j) => j?.vmid !== undefined || j?.exclude !== undefined);
  if (!unknown && !live) return { jobs };
  return { jobs, guests: await port.guests() };
}

/** Guest names → VMIDs: the cluster's guests in the specs first, then the listing. */
function resolver(input: KindPlanInput<BackupJobObserved>) {
  const inSpecs = new Map<string, GuestSpec>();
  for (const g of input.headGuests) if (g.cluster === input.cluster && g.state === 'present') inSpecs.set(g.name, g);
  const names = new Map<number, string>();
  for (const g of input.observed.guests ?? []) if (g.name !== undefined) names.set(g.vmid, g.name);
  for (const g of inSpecs.values()) names.set(g.vmid, g.name);
  const resolve = (name: string): { vmid: number; spec?: GuestSpec } | { error: string } => {
    const spec = inSpecs.get(name);
    if (spec) return { vmid: spec.vmid, spec };
    const listed = (input.observed.guests ?? []).filter((g) => g.name === name);
    if (listed.length === 1) return { vmid: (listed[0] as NamedGuest).vmid };
    if (listed.length > 1)
      return {
        error: `guest '${name}' is ambiguous on cluster '${input.cluster}': VMIDs ${listed.map((g) => g.vmid).join(', ')} carry that name`,
      };
    return { error: `guest '${name}' is neither a VM or Container document nor a guest on cluster '${input.cluster}'` };
  };
  return { resolve, names };
}

function plan(input: KindPlanInput<BackupJobObserved>): ObjectPlan[] {
  const head = onCluster(input.head, input.cluster);
  const base = input.base === undefined ? undefined : onCluster(input.base, input.cluster);
  const headIds = new Set(head.map((s) => s.id));
  const { resolve, names } = resolver(input);
  const items: ObjectPlan[] = [];
  for (const spec of [...head].sort((a, b) => a.id.localeCompare(b.id))) {
    const before = base?.find((s) => s.id === spec.id);
    const unchanged = before !== undefined && sameSpec(before, spec);
    if (!input.full && base !== undefined && unchanged) continue;
    items.push(planJob(spec, input, unchanged, resolve, names));
  }
  for (const removed of base ?? []) {
    if (headIds.has(removed.id)) continue;
    items.push(
      item(BACKUP_JOB_KIND, jobKey(input.cluster, removed.id), input.cluster, removed.id, {
        action: 'noop',
        warnings: [
          `the BackupJob document of '${removed.id}' was removed: pve-gitops leaves the job on the cluster as it is (to destroy it, keep the document with state: absent)`,
        ],
        payload: { id: removed.id },
      }),
    );
  }
  return items;
}

/** The change rows of a job going from `live` to `want` (either undefined for create and destroy). */
function changeRows(want: JobValues | undefined, live: JobValues | undefined, names: ReadonlyMap<number, string>): KeyChange[] {
  const rows: KeyChange[] = [];
  const at = (values: JobValues | undefined, key: string) =>
    values === undefined ? undefined : want === undefined || live === undefined ? values[key] : effective(values, key);
  for (const key of SETTINGS) {
    const from = at(live, key);
    const to = at(want, key);
    if (want !== undefined && want[key] === undefined) continue; // not managed
    if (from === to) continue;
    rows.push({ key, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}), impact: 'live' });
  }
  if (want !== undefined && live !== undefined && sameSelection(want, live)) return rows;
  const liveIds = (live?.vmid ?? '').split(',').filter(Boolean).map(Number);
  const wantIds = (want?.vmid ?? '').split(',').filter(Boolean).map(Number);
  const otherSelection = (values: JobValues | undefined) =>
    values !== undefined && SELECTION.some((k) => k !== 'vmid' && values[k] !== undefined);
  if (!otherSelection(live) && !otherSelection(want)) {
    for (const vmid of liveIds.filter((v) => !wantIds.includes(v)))
      rows.push({ key: 'guests', from: guestLabel(vmid, names), impact: 'live' });
    for (const vmid of wantIds.filter((v) => !liveIds.includes(v)))
      rows.push({ key: 'guests', to: guestLabel(vmid, names), impact: 'live' });
    return rows;
  }
  const from = live === undefined ? undefined : selectionText(live, names);
  const to = want === undefined ? undefined : selectionText(want, names);
  rows.push({ key: 'selection', ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}), impact: 'live' });
  return rows;
}

/** `guests db-01 (100), web-01 (101)`, `all guests except VM 102`, `pool 'web'`. */
function selectionText(values: JobValues, names: ReadonlyMap<number, string>): string {
  const list = (text: string | undefined) =>
    (text ?? '')
      .split(',')
      .filter(Boolean)
      .map((v) => guestLabel(Number(v), names))
      .join(', ');
  if (values.pool !== undefined) return `pool '${values.pool}'`;
  if (values.all !== undefined) return values.exclude === undefined ? 'all guests' : `all guests except ${list(values.exclude)}`;
  if (values.vmid !== undefined) return `guests ${list(values.vmid)}`;
  return 'no guests';
}

function planJob(
  spec: ObjectSpec,
  input: KindPlanInput<BackupJobObserved>,
  unchanged: boolean,
  resolve: ReturnType<typeof resolver>['resolve'],
  names: ReadonlyMap<number, string>,
): ObjectPlan {
  const cluster = input.cluster;
  const key = jobKey(cluster, spec.id);
  const make = (parts: Omit<ItemParts, 'payload' | 'source'>) =>
    item(BACKUP_JOB_KIND, key, cluster, spec.id, { source: spec.source, payload: { id: spec.id }, ...parts });
  if (input.observed.error !== undefined) return make({ action: 'error', errors: [input.observed.error] });
  const live = input.observed.jobs[spec.id];
  if (live === undefined) return make({ action: 'error', errors: [`backup job '${spec.id}' was not read`] });
  if (spec.state === 'absent') {
    if (live === null) return make({ action: 'noop' });
    return make({
      action: 'destroy',
      changes: changeRows(undefined, live, names),
      operations: [{ op: 'destroy-backup-job', id: spec.id, reviewed: live }],
      ...(unchanged ? { drift: [{ key: 'backup job', actual: spec.id }] } : {}),
    });
  }
  const errors: string[] = [];
  const vmids: number[] = [];
  const after: string[] = [];
  for (const name of guestNames(spec)) {
    const found = resolve(name);
    if ('error' in found) {
      errors.push(`backup job '${spec.id}': ${found.error}`);
      continue;
    }
    vmids.push(found.vmid);
    const guestPlan: GuestPlan | undefined = input.guestPlans.find((p) => p.cluster === cluster && p.vmid === found.vmid);
    if (found.spec && guestPlan?.action === 'create') after.push(guestKeyText(cluster, found.vmid));
  }
  if (errors.length > 0) return make({ action: 'error', errors });
  const want = wantedValues(spec, vmids);
  if (live === null) {
    return make({
      action: 'create',
      changes: changeRows(want, undefined, names),
      operations: [{ op: 'create-backup-job', id: spec.id, params: want }],
      ...(unchanged ? { drift: [{ key: 'backup job', expected: spec.id }] } : {}),
      after,
    });
  }
  const { set, remove } = jobUpdate(want, live);
  if (Object.keys(set).length === 0 && remove.length === 0) return make({ action: 'noop', after });
  const changes = changeRows(want, live, names);
  return make({
    action: 'update',
    changes,
    operations: [{ op: 'update-backup-job', id: spec.id, set, remove, reviewed: live }],
    ...(unchanged
      ? {
          drift: changes.map((c) => ({
            key: c.key,
            ...(c.to !== undefined ? { expected: c.to } : {}),
            ...(c.from !== undefined ? { actual: c.from } : {}),
          })),
        }
      : {}),
    after,
  });
}

function storedValues(value: unknown, what: string): JobValues {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`stored item: ${what} is not a mapping`);
  for (const [k, v] of Object.entries(value)) if (typeof v !== 'string') throw new Error(`stored item: ${what}.${k} is not a string`);
  return value as JobValues;
}

function checkStored(stored: ObjectPlan): void {
  const id = stored.payload.id;
  if (typeof id !== 'string' || id === '') throw new Error('stored item: payload.id is not a string');
  for (const op of stored.operations) {
    if (!(BACKUP_JOB_OPERATIONS as readonly string[]).includes(op.op))
      throw new Error(`stored item: unknown backup job operation '${op.op}'`);
    if (op.id !== id) throw new Error(`stored item: ${op.op} names another job`);
    if (op.op === 'create-backup-job') storedValues(op.params, 'create-backup-job.params');
    if (op.op === 'update-backup-job') {
      storedValues(op.set, 'update-backup-job.set');
      storedValues(op.reviewed, 'update-backup-job.reviewed');
      if (!Array.isArray(op.remove) || op.remove.some((r) => typeof r !== 'string'))
        throw new Error('stored item: update-backup-job.remove is not a list');
    }
    if (op.op === 'destroy-backup-job') storedValues(op.reviewed, 'destroy-backup-job.reviewed');
  }
}

function describe(op: ObjectOperation): string | undefined {
  const id = String(op.id);
  if (op.op === 'create-backup-job') return `create backup job '${id}'`;
  if (op.op === 'update-backup-job') {
    const set = Object.entries((op.set as JobValues | undefined) ?? {}).map(([k, v]) => `${k}=${v}`);
    const remove = ((op.remove as string[] | undefined) ?? []).map((k) => `delete ${k}`);
    return `update backup job '${id}': ${[...set, ...remove].join(', ')}`;
  }
  if (op.op === 'destroy-backup-job') return `destroy backup job '${id}'`;
  return undefined;
}

async function readValues(port: BackupJobPort, id: string): Promise<JobValues | undefined> {
  const raw = await port.readJob(id);
  return raw === undefined ? undefined : liveValues(raw);
}

async function execute(stored: ObjectPlan, port: BackupJobPort): Promise<ObjectApplyOutcome> {
  const steps: ObjectApplyOutcome['steps'] = [];
  return runOperations(stored.operations, steps, async (op, started) => {
    const id = String(op.id);
    const now = await readValues(port, id);
    if (op.op === 'create-backup-job') {
      const params = op.params as JobValues;
      if (now) return { status: 'conflict', steps, conflict: [`backup job '${id}' was created on the cluster after the review`] };
      await port.createJob(id, params);
      const after = await readValues(port, id);
      if (!after || !holds(after, params, []))
        return { status: 'failed', steps, error: `backup job '${id}' does not hold what was sent after its create` };
      steps.push({ op: 'create-backup-job', detail: `backup job '${id}'`, ms: Date.now() - started });
    } else if (op.op === 'update-backup-job') {
      const set = op.set as JobValues;
      const remove = op.remove as string[];
      if (!now) return { status: 'conflict', steps, conflict: [`backup job '${id}' was removed from the cluster after the review`] };
      if (holds(now, set, remove)) return { status: 'unchanged', steps };
      const changed = moved(op.reviewed as JobValues, now);
      if (changed.length > 0) return { status: 'conflict', steps, conflict: changed.map((line) => `backup job '${id}', ${line}`) };
      await port.updateJob(id, set, remove);
      const after = await readValues(port, id);
      if (!after || !holds(after, set, remove))
        return { status: 'failed', steps, error: `backup job '${id}' does not hold what was sent after its update` };
      steps.push({ op: 'update-backup-job', detail: describe(op) ?? id, ms: Date.now() - started });
    } else if (op.op === 'destroy-backup-job') {
      if (!now) return { status: 'unchanged', steps };
      const changed = moved(op.reviewed as JobValues, now);
      if (changed.length > 0) return { status: 'conflict', steps, conflict: changed.map((line) => `backup job '${id}', ${line}`) };
      await port.deleteJob(id);
      if (await readValues(port, id)) return { status: 'failed', steps, error: `backup job '${id}' is still there after its destroy` };
      steps.push({ op: 'destroy-backup-job', detail: `backup job '${id}'`, ms: Date.now() - started });
    } else {
      return { status: 'failed', steps, error: `unknown backup job operation '${op.op}'` };
    }
    return undefined;
  });
}

/**
 * pve-manager `API2/Backup.pm`: Sys.Audit on `/` to read jobs; Sys.Modify on `/` to write them,
 * plus Datastore.Allocate on the job's storage (`local` when none is set) and VM.Backup on its pool.
 */
function requiredPrivileges({ objects }: { objects: readonly ObjectSpec[] }, mode: 'read' | 'apply'): KindPrivilege[] {
  if (objects.length === 0) return [];
  if (mode === 'read') return [{ path: '/', privilege: 'Sys.Audit', why: 'to read backup jobs' }];
  const privileges: KindPrivilege[] = [{ path: '/', privilege: 'Sys.Modify', why: 'to create, change and destroy backup jobs' }];
  const storages = new Set(
    objects.filter((o) => o.state === 'present').map((o) => (typeof o.fields.storage === 'string' ? o.fields.storage : 'local')),
  );
  for (const storage of [...storages].sort())
    privileges.push({ path: `/storage/${storage}`, privilege: 'Datastore.Allocate', why: 'to point backup jobs at this storage' });
  const pools = new Set(objects.flatMap((o) => (o.state === 'present' && typeof o.fields.pool === 'string' ? [o.fields.pool] : [])));
  for (const pool of [...pools].sort())
    privileges.push({ path: `/pool/${pool}`, privilege: 'VM.Backup', why: 'to back up a pool by a job' });
  return privileges;
}

export const backupJobKind: ObjectKind<BackupJobPort, BackupJobObserved> = {
  name: BACKUP_JOB_KIND,
  documents: [{ name: 'BackupJob', schema: BackupJobDocument }],
  phase: 'guest-parts',
  // A job's `node` only restricts where it runs; the queue's per-node slot is for guest writes.
  hasNode: false,
  operations: BACKUP_JOB_OPERATIONS,
  simRoutes: ['backup'],
  testFactory: () => ({
    yaml: [
      ...SAMPLE_CLUSTER,
      'kind: VM',
      'name: app-01',
      'cluster: lab',
      'node: pve-01',
      'config: { memory: 2048, cores: 2 }',
      '---',
      'kind: BackupJob',
      'name: nightly',
      'cluster: lab',
      'schedule: "sun 01:00"',
      'storage: local',
      'mode: snapshot',
      'compress: zstd',
      'retention: { keep-last: 3, keep-weekly: 2 }',
      'notes-template: "{{guestname}}"',
      'guests: [app-01]',
      '',
    ].join('\n'),
  }),
  load(document, source) {
    const doc = BackupJobDocument.parse(document);
    const { kind: _kind, name, cluster, state, ...rest } = doc;
    const fields = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
    return { kind: BACKUP_JOB_KIND, document: 'BackupJob', cluster, id: name, state, fields, source };
  },
  validate,
  observe,
  plan,
  checkStored,
  label: (stored) => `backup job ${stored.name}`,
  requiredPrivileges,
  describe,
  execute: (stored, port) => execute(stored, port),
};
