/**
 * The drift report's unowned guests (in a cluster's VMID range, no owner tag, no spec) taken into
 * git the way `pve-gitops import` takes them: each a new spec file written by the import's own
 * generator (`../import/import-files.ts`, `importGuest`), added to the adoption so that one pull
 * request holds both. A file that exists already is never overwritten: its guests are left, with
 * why. Pure: the import's reads go in; nothing is written when the specs would not load.
 */
import type { SpecSet } from '../model.js';
import { importFiles } from '../import/import-files.js';
import type { ImportRead } from '../import/read-estate.js';
import type { SpecFile } from '../spec/load-specs.js';
import { type Adoption, checkLoads, type NotAdopted } from './adopt-drift.js';

/** `adoption` with the guests of `adoption.toImport` imported from `reads` into new files. */
export function withImported(adoption: Adoption, reads: readonly ImportRead[], specs: SpecSet, files: readonly SpecFile[]): Adoption {
  const asked = adoption.toImport ?? [];
  if (asked.length === 0) return adoption;
  const result = importFiles(reads, specs, 'guest', '`/pve adopt` (as `pve-gitops import` writes it)');
  const existing = new Set([...files.map((f) => f.path), ...adoption.files.map((f) => f.path)]);
  const subject = (cluster: string, vmid: number): string =>
    `${cluster}/${asked.find((g) => g.cluster === cluster && g.vmid === vmid)?.name ?? vmid}`;
  const left: NotAdopted[] = [];
  const kept = result.files.filter((file) => {
    if (!existing.has(file.path)) return true;
    for (const key of file.guests) {
      const [cluster = '', vmid = ''] = key.split('/');
      left.push({
        subject: subject(cluster, Number(vmid)),
        key: 'unowned',
        reason: `its spec file ${file.path} exists already: import it by hand`,
      });
    }
    return false;
  });
  const keptPaths = new Set(kept.map((f) => f.path));
  const imported = result.imported
    .filter((g) => keptPaths.has(g.path))
    .map((g) => ({ subject: `${g.cluster}/${g.name}`, file: g.path, remarks: g.remarks }));
  for (const r of result.refused) left.push({ subject: subject(r.cluster, r.vmid), key: 'unowned', reason: `not imported: ${r.why}` });
  for (const e of result.clusterErrors)
    for (const g of asked.filter((a) => a.cluster === e.cluster))
      left.push({ subject: `${g.cluster}/${g.name}`, key: 'unowned', reason: `not imported: cluster ${e.cluster} ${e.message}` });
  const seen = new Set([...result.imported, ...result.refused].map((g) => `${g.cluster}/${g.vmid}`));
  for (const g of asked)
    if (!seen.has(`${g.cluster}/${g.vmid}`) && !result.clusterErrors.some((e) => e.cluster === g.cluster))
      left.push({
        subject: `${g.cluster}/${g.name}`,
        key: 'unowned',
        reason: 'not imported: the guest was not found when it was read again',
      });
  const added = kept.map((f) => ({ path: f.path, text: f.text }));
  const all = [...adoption.files, ...added].sort((a, b) => a.path.localeCompare(b.path));
  if (added.length > 0) checkLoads(files, new Map(all.map((f) => [f.path, f.text])));
  const { toImport: _asked, ...rest } = adoption;
  return { ...rest, files: all, notAdopted: [...adoption.notAdopted, ...left], imported };
}
