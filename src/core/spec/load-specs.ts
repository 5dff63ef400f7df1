/**
 * Loads the spec repository (DESIGN §2) from file texts: parse every YAML document, check its
 * shape, convert values to Proxmox's wire strings, derive missing VMIDs and validate the whole set.
 * Pure: the caller reads the files (`src/spec-files/read-spec-dir.ts`, or the GitHub API at a SHA).
 *
 * Two halves: `parseSpecFile` (per file, plain-data result, the expensive part: parsing, shape
 * checks, building each spec and the checks a document decides alone, see `build-spec.ts`) and
 * `assembleSpecs` (everything across files: VMIDs, duplicates, clusters), so large repositories
 * can be parsed in worker threads (`src/spec-files/load-spec-files.ts`).
 */
import type { ClusterSpec, GuestSpec, SpecSet } from '../model.js';
import { addKeySources } from './build-spec.js';
import type { DocumentPositions } from './document-positions.js';
import { compareSpecErrors, SpecError, type SpecProblem } from './errors.js';
import { parseSpecFiles, type ParsedSpecFile } from './parse-spec-file.js';
import { lineCounterFrom, tablePositions } from './position-table.js';
import { validateSpecs, type GuestFindings, type SpecPositions } from './validate-specs.js';
import { assignVmids, type VmidRequest } from './vmid.js';

/** One file of the spec repository: its path relative to the spec root, and its text. */
export interface SpecFile {
  path: string;
  text: string;
}

/** What loading found. `specs` is complete only when `errors` is empty; never plan from it otherwise. */
export interface LoadedSpecs {
  specs: SpecSet;
  /** Every problem, ordered by file and position. */
  errors: SpecError[];
  /** Where each spec's parts were written, for annotations. */
  positions: SpecPositions;
}

/**
 * Loads and validates spec files. Documents without content are skipped; every other document must
 * be a mapping with `kind: Cluster | VM | Container` — a document without `kind` is an error, not
 * silently ignored, because a misspelt `kind` would otherwise drop a guest from the repository
 * (and with `prune: true`, destroy it). Other YAML files do not belong under the spec root.
 *
 * Config values are converted by `toWireValue` (see `wire-values.ts`); the guest's name, owner tag
 * and other derived values are left to the planner, so `config` holds exactly what was written.
 */
export function loadSpecs(files: readonly SpecFile[]): LoadedSpecs {
  return assembleSpecs(parseSpecFiles(files));
}

/**
 * The cross-file half of {@link loadSpecs}: collects the specs of parsed files (in the order
 * given), derives VMIDs and validates what needs more than one document. `parsed` may come from worker threads (`parseSpecFile`
 * returns plain data); the result is the same as loading the files here.
 */
export function assembleSpecs(parsed: readonly ParsedSpecFile[]): LoadedSpecs {
  const state: LoadState = { clusters: [], guests: [], errors: [], positions: new Map(), brokenClusters: new Set(), checkedGuests: new Map(), vmidHashes: new Map() };
  for (const file of parsed) assembleFile(file, state);
  assignGuestVmids(state);
  const specs: SpecSet = { clusters: state.clusters, guests: state.guests };
  const errors = state.errors.concat(validateSpecs(specs, { positions: state.positions, brokenClusters: state.brokenClusters, checkedGuests: state.checkedGuests }));
  errors.sort(compareSpecErrors);
  return { specs, errors, positions: state.positions };
}

interface LoadState {
  clusters: ClusterSpec[];
  guests: GuestSpec[];
  errors: SpecError[];
  positions: Map<ClusterSpec | GuestSpec, DocumentPositions>;
  /** Clusters whose document failed to load: guests naming them skip cluster checks. */
  brokenClusters: Set<string>;
  /** What each guest's own checks found where its file was parsed. */
  checkedGuests: Map<GuestSpec, GuestFindings>;
  /** `vmidHash` of each guest whose VMID is derived, computed where its file was parsed. */
  vmidHashes: Map<GuestSpec, number>;
}

function assembleFile(file: ParsedSpecFile, state: LoadState): void {
  const lineCounter = lineCounterFrom(file.lineStarts);
  const addErrors = (errors: readonly SpecProblem[]): void => {
    for (const error of errors) state.errors.push(new SpecError(error.at, error.message));
  };
  for (const doc of file.documents) {
    switch (doc.kind) {
      case 'yaml-errors':
        addErrors(doc.errors);
        break;
      case 'empty':
        break;
      case 'not-a-mapping':
        state.errors.push(new SpecError(doc.start, 'a spec document must be a mapping with a kind (Cluster, VM or Container)'));
        break;
      case 'invalid':
        addErrors(doc.errors);
        if (doc.brokenCluster !== undefined) state.brokenClusters.add(doc.brokenCluster);
        break;
      case 'cluster':
        state.clusters.push(doc.spec);
        state.positions.set(doc.spec, tablePositions(file.path, doc.positions, lineCounter));
        break;
      case 'guest': {
        addErrors(doc.findings.errors);
        const at = tablePositions(file.path, doc.positions, lineCounter);
        addKeySources(doc.spec, at);
        state.guests.push(doc.spec);
        state.positions.set(doc.spec, at);
        state.checkedGuests.set(doc.spec, doc.findings);
        if (doc.vmidHash !== undefined) state.vmidHashes.set(doc.spec, doc.vmidHash);
        break;
      }
    }
  }
}

/** Derives the VMIDs left out, per cluster, once every document is known (see `vmid.ts`). */
function assignGuestVmids(state: LoadState): void {
  const byCluster = new Map<string, GuestSpec[]>();
  for (const guest of state.guests) {
    const members = byCluster.get(guest.cluster) ?? [];
    members.push(guest);
    byCluster.set(guest.cluster, members);
  }
  const seen = new Set<string>();
  for (const cluster of state.clusters) {
    // A duplicate cluster is an error reported by validation; its first definition decides.
    if (seen.has(cluster.name)) continue;
    seen.add(cluster.name);
    const members = byCluster.get(cluster.name);
    if (!members || cluster.vmids.lower >= cluster.vmids.upper) continue;
    const requests = members.map((g): VmidRequest => {
      if (!g.vmidDerived) return { name: g.name, vmid: g.vmid };
      const hash = state.vmidHashes.get(g);
      return hash === undefined ? { name: g.name } : { name: g.name, hash };
    });
    const { vmids } = assignVmids(cluster.name, cluster.vmids, requests);
    members.forEach((guest, index) => {
      if (!guest.vmidDerived) return;
      const vmid = vmids[index];
      if (vmid === undefined) {
        state.errors.push(
          new SpecError(
            guest.source,
            `no free VMID left in cluster "${cluster.name}" range [${cluster.vmids.lower}, ${cluster.vmids.upper}) for "${guest.name}"; widen the range or pin a vmid`,
          ),
        );
      } else {
        guest.vmid = vmid;
      }
    });
  }
}

