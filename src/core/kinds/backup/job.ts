/**
 * A backup job's values, pure: the `kind: BackupJob` document as written, the values pve-gitops
 * manages in Proxmox's own spelling (`vmid`, `prune-backups`, …, each a string as `POST
 * /cluster/backup` takes it), how a job Proxmox returns reads into the same form, and the
 * difference between the two. Proxmox's side: pve-manager `API2/Backup.pm`, pve-guest-common
 * `VZDump/Common.pm` (docs/proxmox-behaviour.md, "Backup jobs").
 */
import { z } from 'zod';
import type { ObjectSpec } from '../../model.js';

/** `pve-configid` (pve-common `pve_verify_configid`), at most 50 characters (`pve-backup-jobid`). */
const JOB_ID_RE = /^[a-z][a-z0-9_-]+$/i;

const Keep = z.number().int().min(1);

/** `prune-backups` (pve-common `PVE/JSONSchema.pm`, format `prune-backups`). */
const Retention = z
  .strictObject({
    'keep-all': z.boolean().optional(),
    'keep-last': Keep.optional(),
    'keep-hourly': Keep.optional(),
    'keep-daily': Keep.optional(),
    'keep-weekly': Keep.optional(),
    'keep-monthly': Keep.optional(),
    'keep-yearly': Keep.optional(),
  })
  .refine((r) => Object.keys(r).length > 0, { message: 'retention needs at least one keep-* option' })
  .refine((r) => !(r['keep-all'] && Object.keys(r).length > 1), { message: 'keep-all cannot be set together with other keep-* options' });

/** Options Proxmox lets only `root@pam` set (`assert_param_permission_common`): `validate` refuses them. */
export const ROOT_ONLY = ['tmpdir', 'dumpdir', 'script'] as const;

/** `kind: BackupJob` as written. */
export const BackupJobDocument = z
  .strictObject({
    kind: z.literal('BackupJob'),
    /** The job id (`pve-configid`), always sent: without it Proxmox makes up a UUID. */
    name: z.string().max(50).regex(JOB_ID_RE, "a job id starts with a letter, then letters, digits, '-' or '_' (pve-configid)"),
    cluster: z.string().min(1),
    /** A Proxmox calendar event (`pve-calendar-event`), like `sun 01:00`. */
    schedule: z.string().min(1).max(128).optional(),
    storage: z.string().min(1).optional(),
    mode: z.enum(['snapshot', 'suspend', 'stop']).optional(),
    compress: z.enum(['0', '1', 'gzip', 'lzo', 'zstd']).optional(),
    /** `prune-backups`: these retention options instead of the storage's. */
    retention: Retention.optional(),
    'notes-template': z.string().min(1).max(1024).optional(),
    comment: z.string().min(1).max(512).optional(),
    /** Run only on this node. */
    node: z.string().min(1).optional(),
    enabled: z.boolean().default(true),
    /** The selection: guest names (resolved to VMIDs), every guest, or a pool's guests. Exactly one. */
    guests: z.array(z.string().min(1)).min(1).optional(),
    all: z.literal(true).optional(),
    pool: z.string().min(1).optional(),
    /** Accepted here only so `validate` can say why they are refused. */
    tmpdir: z.string().optional(),
    dumpdir: z.string().optional(),
    script: z.string().optional(),
    state: z.enum(['present', 'absent']).default('present'),
  })
  .superRefine((doc, ctx) => {
    if (doc.state === 'absent') return;
    const chosen = (['guests', 'all', 'pool'] as const).filter((k) => doc[k] !== undefined);
    if (chosen.length !== 1)
      ctx.addIssue({
        code: 'custom',
        message: `a backup job selects its guests with exactly one of guests, all or pool (found ${chosen.length === 0 ? 'none' : chosen.join(', ')})`,
      });
    if (doc.schedule === undefined) ctx.addIssue({ code: 'custom', path: ['schedule'], message: 'a backup job needs a schedule' });
    if (doc['notes-template'] !== undefined && doc.storage === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['notes-template'],
        message: "notes-template requires storage (Proxmox: requires => 'storage')",
      });
  });
export type BackupJobDoc = z.infer<typeof BackupJobDocument>;

/** The values pve-gitops manages, in Proxmox's spelling; the selection keys last. */
export const SETTINGS = [
  'schedule',
  'enabled',
  'storage',
  'mode',
  'compress',
  'prune-backups',
  'notes-template',
  'comment',
  'node',
] as const;
export const SELECTION = ['vmid', 'all', 'pool', 'exclude'] as const;
const MANAGED: readonly string[] = [...SETTINGS, ...SELECTION];

/** What Proxmox assumes for a value a job does not hold (the schema's `default`): not drift. */
export const DEFAULTS: Readonly<Record<string, string>> = { enabled: '1', mode: 'snapshot', compress: '0' };

/** The job's managed values, each a string. */
export type JobValues = Record<string, string>;

/** The selection as a document writes it. */
export type Selection = { guests: string[] } | { all: true } | { pool: string };

/** The spec's selection (undefined for a `state: absent` document). */
export function selectionOf(spec: ObjectSpec): Selection | undefined {
  const f = spec.fields;
  if (Array.isArray(f.guests)) return { guests: f.guests as string[] };
  if (f.all === true) return { all: true };
  if (typeof f.pool === 'string') return { pool: f.pool };
  return undefined;
}

/** `keep-last=3,keep-weekly=2`: a retention as Proxmox prints the property string (sorted keys). */
export function retentionString(value: unknown): string | undefined {
  if (typeof value === 'string')
    return value === '' ? undefined : retentionString(Object.fromEntries(value.split(',').map((p) => p.split('=', 2))));
  if (value === null || typeof value !== 'object') return undefined;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => [k, typeof v === 'boolean' ? (v ? '1' : '0') : String(v)] as const)
    .sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? undefined : entries.map(([k, v]) => `${k}=${v}`).join(',');
}

/** A `pve-vmid-list` sorted numerically: `100,101`. */
export function vmidList(value: unknown): string | undefined {
  const ids = String(value ?? '')
    .split(/[\s,;\0]+/)
    .filter((s) => s !== '')
    .map(Number)
    .sort((a, b) => a - b);
  return ids.length === 0 ? undefined : [...new Set(ids)].join(',');
}

function flagValue(value: unknown): string {
  return value === true || value === 1 || value === '1' || value === 'true' || value === 'on' || value === 'yes' ? '1' : '0';
}

/** A job as Proxmox returns it, read into its managed values (the rest — `type`, `next-run`, … — is left out). */
export function liveValues(raw: Record<string, unknown>): JobValues {
  const values: JobValues = {};
  for (const key of MANAGED) {
    const value = raw[key];
    if (value === undefined || value === null || value === '') continue;
    let text: string | undefined;
    if (key === 'enabled') text = flagValue(value);
    else if (key === 'all') text = flagValue(value) === '1' ? '1' : undefined;
    else if (key === 'vmid' || key === 'exclude') text = vmidList(value);
    else if (key === 'prune-backups') text = retentionString(value);
    else text = String(value);
    if (text !== undefined) values[key] = text;
  }
  return values;
}

/** The values a spec wants, with its guest names already resolved to `vmids`. */
export function wantedValues(spec: ObjectSpec, vmids: readonly number[]): JobValues {
  const f = spec.fields;
  const values: JobValues = {};
  if (typeof f.schedule === 'string') values.schedule = f.schedule;
  values.enabled = f.enabled === false ? '0' : '1';
  for (const key of ['storage', 'mode', 'compress', 'notes-template', 'comment', 'node'] as const) {
    if (typeof f[key] === 'string') values[key] = f[key] as string;
  }
  const retention = retentionString(f.retention);
  if (retention !== undefined) values['prune-backups'] = retention;
  const selection = selectionOf(spec);
  if (selection && 'guests' in selection) values.vmid = vmidList(vmids.join(',')) ?? '';
  else if (selection && 'all' in selection) values.all = '1';
  else if (selection && 'pool' in selection) values.pool = selection.pool;
  return values;
}

/** The value Proxmox goes by for `key`: the job's own or the schema's default. */
export function effective(values: JobValues, key: string): string | undefined {
  return values[key] ?? DEFAULTS[key];
}

/** Whether the live selection is the wanted one (a `PUT` of one selection key drops the others, `exclude` aside). */
export function sameSelection(want: JobValues, live: JobValues): boolean {
  return SELECTION.every((key) => want[key] === live[key]);
}

/** What a `PUT` must send to turn `live` into `want`: values to set and options to delete. */
export function jobUpdate(want: JobValues, live: JobValues): { set: JobValues; remove: string[] } {
  const set: JobValues = {};
  const remove: string[] = [];
  for (const key of SETTINGS) {
    if (want[key] !== undefined && want[key] !== effective(live, key)) set[key] = want[key];
  }
  if (!sameSelection(want, live)) {
    for (const key of ['vmid', 'all', 'pool'] as const) if (want[key] !== undefined) set[key] = want[key];
    // `update_job` drops vmid and pool for `all`, but keeps an `exclude`: it must go by name.
    if (want.all !== undefined && live.exclude !== undefined) remove.push('exclude');
  }
  return { set, remove };
}

/** Whether `live` holds what `set` and `remove` asked for (the re-read after a write). */
export function holds(live: JobValues, set: JobValues, remove: readonly string[]): boolean {
  return Object.entries(set).every(([key, value]) => effective(live, key) === value) && remove.every((key) => live[key] === undefined);
}

/** The keys whose values differ between two reads of a job, one line each. */
export function moved(reviewed: JobValues, now: JobValues): string[] {
  const keys = [...new Set([...Object.keys(reviewed), ...Object.keys(now)])].sort();
  return keys.filter((key) => reviewed[key] !== now[key]).map((key) => `${key}: reviewed ${quote(reviewed[key])}, now ${quote(now[key])}`);
}

/** `'text'`, or `none`. */
export function quote(value: string | undefined): string {
  return value === undefined ? 'none' : `'${value}'`;
}
