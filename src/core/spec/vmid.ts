/**
 * Deterministic VMIDs (docs/design.md#identity). A guest without a `vmid` gets one derived from
 * `cluster/name`, so the same spec always means the same guest and a retried create can never
 * allocate a second one. `/cluster/nextid` is never used: it answers "free now", which changes
 * between plan and apply and between two runs.
 *
 * The rule, per cluster with range [lower, upper):
 * 1. Every pinned VMID (written in a spec, any state) is claimed first.
 * 2. Guests without a VMID are taken in order of name (code-unit order, so file layout and
 *    document order do not matter). Each starts at
 *    `lower + (first 48 bits of sha256("cluster/name")) mod (upper - lower)`
 *    and probes upwards, wrapping at `upper`, to the first VMID not yet claimed.
 *
 * Limits: a derived VMID is stable only while no other guest of the repository claims its slot.
 * Pinning a VMID that a derived guest holds, or adding a guest whose name sorts earlier and hashes
 * to the same or an overlapping probe sequence, moves the derived guest to another VMID — a new
 * identity, which the plan shows as a create plus an orphan. With n derived guests in a range of
 * size R the chance that any two start on the same slot is about n²/2R (≈5% for 100 guests in
 * 100,000). That is why the plan suggests pinning every derived VMID. Guests that exist on the
 * cluster but not in the repository are not seen here: a derived VMID held by a foreign guest is a
 * collision the plan reports, never silently skipped (skipping would make the identity depend on
 * cluster state).
 */
import { createHash } from 'node:crypto';

/** The VMID of a guest whose VMID could not be derived (unknown cluster, invalid or full range). */
export const UNASSIGNED_VMID = 0;

/** A cluster's VMID range: `lower` inclusive, `upper` exclusive. */
interface VmidRange {
  lower: number;
  upper: number;
}

/** One guest of a cluster as the allocator sees it. */
interface VmidRequest {
  name: string;
  /** The VMID written in the spec, if any. */
  vmid?: number;
}

/** Where the probe for `cluster/name` starts. */
export function vmidSlot(cluster: string, name: string, range: VmidRange): number {
  const size = range.upper - range.lower;
  if (size <= 0) throw new RangeError(`empty VMID range [${range.lower}, ${range.upper})`);
  const digest = createHash('sha256').update(`${cluster}/${name}`).digest();
  // 48 bits keep the arithmetic exact in a double; the modulo bias is below 2^-20 for any VMID range.
  return range.lower + (digest.readUIntBE(0, 6) % size);
}

/** The outcome of allocating one cluster's VMIDs. */
interface VmidAssignment {
  /** VMID per request, in request order; undefined when the range had no free VMID left. */
  vmids: (number | undefined)[];
}

/**
 * Assigns a VMID to every request of one cluster by the rule above. Pinned VMIDs are returned as
 * written (even outside the range: that is a validation error reported elsewhere).
 */
export function assignVmids(cluster: string, range: VmidRange, requests: readonly VmidRequest[]): VmidAssignment {
  const vmids: (number | undefined)[] = requests.map((request) => request.vmid);
  const claimed = new Set<number>();
  for (const request of requests) if (request.vmid !== undefined) claimed.add(request.vmid);

  const size = range.upper - range.lower;
  let free = size;
  for (const vmid of claimed) if (vmid >= range.lower && vmid < range.upper) free--;

  const derived = requests
    .map((request, index) => ({ name: request.name, index }))
    .filter(({ index }) => requests[index]?.vmid === undefined)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.index - b.index));

  for (const { name, index } of derived) {
    if (free <= 0) continue;
    let candidate = vmidSlot(cluster, name, range);
    while (claimed.has(candidate)) candidate = candidate + 1 >= range.upper ? range.lower : candidate + 1;
    claimed.add(candidate);
    free--;
    vmids[index] = candidate;
  }
  return { vmids };
}
