/**
 * Which listed guests an import reads: the command's filters (VMID range, pool, tag, node) and
 * the guests the specs already describe, which are skipped. Pure; the listing is one request.
 */
import type { ListedGuest, SpecSet } from '../model.js';
import { normaliseTags } from '../property-string.js';

/** The command's filters; absent ones let every guest through. */
export interface ImportFilter {
  /** VMIDs in [lower, upper]: both ends included, as `--vmid 100-199` reads. */
  vmids?: { lower: number; upper: number };
  /** Only these VMIDs (`/pve adopt` of the drift report's unowned guests). */
  only?: readonly number[];
  pool?: string;
  tag?: string;
  node?: string;
}

/** A guest that is not imported, and why. */
export interface NotImported {
  cluster: string;
  vmid: number;
  name?: string;
  why: string;
}

/** Parses `--vmid`: `N` or `LOW-HIGH`, both ends included. */
export function parseVmidRange(text: string): { lower: number; upper: number } | undefined {
  const m = /^(\d+)(?:-(\d+))?$/.exec(text.trim());
  if (!m) return undefined;
  const lower = Number(m[1]);
  const upper = Number(m[2] ?? m[1]);
  return lower <= upper ? { lower, upper } : undefined;
}

/** True when the filter needs each guest's pool (one more listing request per cluster). */
export function filterNeedsPools(filter: ImportFilter): boolean {
  return filter.pool !== undefined;
}

/**
 * The listed guests to read, and those skipped because a spec describes them already (by VMID,
 * derived ones included). Templates are guests too and are imported like any other.
 */
export function selectGuests(
  cluster: string,
  listing: readonly ListedGuest[],
  filter: ImportFilter,
  specs: SpecSet,
  pools?: ReadonlyMap<number, string>,
): { wanted: ListedGuest[]; skipped: NotImported[] } {
  const described = new Map(specs.guests.filter((g) => g.cluster === cluster).map((g) => [g.vmid, g]));
  const tag = filter.tag?.toLowerCase();
  const wanted: ListedGuest[] = [];
  const skipped: NotImported[] = [];
  for (const listed of [...listing].sort((a, b) => a.vmid - b.vmid)) {
    if (filter.vmids && (listed.vmid < filter.vmids.lower || listed.vmid > filter.vmids.upper)) continue;
    if (filter.only && !filter.only.includes(listed.vmid)) continue;
    if (filter.node !== undefined && listed.node !== filter.node) continue;
    if (
      tag !== undefined &&
      !normaliseTags(listed.tags ?? '')
        .split(';')
        .includes(tag)
    )
      continue;
    if (filter.pool !== undefined && pools?.get(listed.vmid) !== filter.pool) continue;
    const spec = described.get(listed.vmid);
    if (spec) {
      skipped.push({
        cluster,
        vmid: listed.vmid,
        ...(listed.name !== undefined ? { name: listed.name } : {}),
        why: `already described by ${spec.source.file}`,
      });
      continue;
    }
    wanted.push(listed);
  }
  return { wanted, skipped };
}
