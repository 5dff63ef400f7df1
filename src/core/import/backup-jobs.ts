/**
 * A cluster's backup jobs as the `kind: BackupJob` documents that describe them as they are, read
 * into the kind's own managed values (`kinds/backup/job.ts`, `liveValues`) so the plan compares
 * like with like. A job a document cannot describe — an `exclude` list, options only root may
 * set, a guest without a name — is refused with why. Pure.
 */
import { BACKUP_JOB_KIND } from '../kinds/backup/backup-job-kind.js';
import { BackupJobDocument, liveValues, ROOT_ONLY } from '../kinds/backup/job.js';
import type { RawBackupJob } from '../kinds/backup/port.js';
import type { ListedGuest, SpecSet } from '../model.js';

/** A `kind: BackupJob` document, in the order its fields are written. */
export type BackupJobDocumentText = Record<string, unknown> & { kind: 'BackupJob'; name: string; cluster: string };

/** The documents of a cluster's jobs that the specs do not describe yet, and the jobs refused. */
export function importBackupJobs(
  cluster: string,
  jobs: readonly RawBackupJob[],
  listing: readonly ListedGuest[],
  specs: SpecSet,
): { documents: BackupJobDocumentText[]; refused: { id: string; why: string }[] } {
  const described = new Set((specs.objects ?? []).filter((o) => o.kind === BACKUP_JOB_KIND && o.cluster === cluster).map((o) => o.id));
  const names = new Map(listing.flatMap((l) => (l.name === undefined ? [] : [[l.vmid, l.name] as const])));
  for (const g of specs.guests) if (g.cluster === cluster) names.set(g.vmid, g.name);
  const documents: BackupJobDocumentText[] = [];
  const refused: { id: string; why: string }[] = [];
  for (const raw of [...jobs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    if (described.has(raw.id)) continue;
    const made = jobDocument(cluster, raw, names);
    if ('why' in made) refused.push({ id: raw.id, why: made.why });
    else documents.push(made.document);
  }
  return { documents, refused };
}

function jobDocument(
  cluster: string,
  raw: RawBackupJob,
  names: ReadonlyMap<number, string>,
): { document: BackupJobDocumentText } | { why: string } {
  const rootOnly = ROOT_ONLY.filter((key) => raw[key] !== undefined);
  if (rootOnly.length > 0) return { why: `it sets ${rootOnly.join(', ')}, which only root@pam may set and a spec may not hold` };
  const values = liveValues(raw);
  if (values.exclude !== undefined) return { why: 'it excludes guests (exclude), which a BackupJob document cannot say' };
  const document: BackupJobDocumentText = { kind: 'BackupJob', name: raw.id, cluster };
  if (values.schedule !== undefined) document.schedule = values.schedule;
  if (values.enabled === '0') document.enabled = false;
  for (const key of ['storage', 'mode', 'compress'] as const) if (values[key] !== undefined) document[key] = values[key];
  if (values['prune-backups'] !== undefined) {
    document.retention = Object.fromEntries(
      values['prune-backups'].split(',').map((pair) => {
        const [key = '', value = ''] = pair.split('=', 2);
        return [key, key === 'keep-all' ? value === '1' : Number(value)];
      }),
    );
  }
  for (const key of ['notes-template', 'comment', 'node'] as const) if (values[key] !== undefined) document[key] = values[key];
  if (values.all === '1') document.all = true;
  else if (values.pool !== undefined) document.pool = values.pool;
  else if (values.vmid !== undefined) {
    const guests: string[] = [];
    for (const vmid of values.vmid.split(',').map(Number)) {
      const name = names.get(vmid);
      if (name === undefined) return { why: `its guest ${vmid} has no name the token can see, and a document selects guests by name` };
      guests.push(name);
    }
    document.guests = guests;
  }
  // What the kind's schema refuses is not written (a schedule missing, a compress value it does not know).
  const checked = BackupJobDocument.safeParse(document);
  if (!checked.success) return { why: checked.error.issues.map((i) => `${i.path.join('.') || 'job'}: ${i.message}`).join('; ') };
  return { document };
}
