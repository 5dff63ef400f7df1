/**
 * The spec rules of apply order and restarts (README "Order between guests: dependsOn",
 * "Restarts"): every `dependsOn` name is another guest of the same cluster, the dependencies
 * form no cycle (a cycle is reported once, naming every guest on it), every apply window parses
 * (README "Apply windows"), and `restart: in-window` is refused where no window is in force.
 */
import type { ClusterSpec, GuestSpec, SourceRef } from '../model.js';
import type { DocumentPositions } from './document-positions.js';
import { SpecError } from './errors.js';
import { effectiveWindows, parseWindow } from './apply-windows.js';
import { IN_WINDOW_REFUSED } from './restart-policy.js';

type PositionsOf = (spec: ClusterSpec | GuestSpec) => DocumentPositions;

/** Where `restart` was written: its `policy` when it is a mapping. */
function restartAt(at: DocumentPositions): SourceRef {
  return at.value(['restart']);
}

/** Appends the order and restart errors of `guests` and `clusters` to `errors`. */
export function validateOrder(
  clusters: readonly ClusterSpec[],
  guests: readonly GuestSpec[],
  posOf: PositionsOf,
  errors: SpecError[],
): void {
  const clusterOf = new Map(clusters.map((c) => [c.name, c]));
  for (const cluster of clusters) {
    validateWindows(cluster, posOf, errors);
    // A cluster default of in-window is fine while every guest that takes it has windows: checked per guest below.
    if (cluster.restart?.policy === 'in-window' && !cluster.windows)
      errors.push(new SpecError(restartAt(posOf(cluster)), IN_WINDOW_REFUSED));
  }
  const byCluster = new Map<string, Map<string, GuestSpec>>();
  for (const guest of guests) {
    validateWindows(guest, posOf, errors);
    if (guest.restart?.policy === 'in-window' && !effectiveWindows(guest.windows, clusterOf.get(guest.cluster)?.windows))
      errors.push(new SpecError(restartAt(posOf(guest)), IN_WINDOW_REFUSED));
    let names = byCluster.get(guest.cluster);
    if (!names) byCluster.set(guest.cluster, (names = new Map()));
    names.set(guest.name, guest);
  }
  for (const guest of guests) {
    const names = byCluster.get(guest.cluster) as Map<string, GuestSpec>;
    (guest.dependsOn ?? []).forEach((name, i) => {
      const at = posOf(guest).value(['dependsOn', i]);
      if (name === guest.name) errors.push(new SpecError(at, `dependsOn: ${name} is this guest itself`));
      else if (!names.has(name))
        errors.push(
          new SpecError(at, `dependsOn: no guest named '${name}' in cluster ${guest.cluster} (dependsOn names guests of the same cluster)`),
        );
    });
  }
  for (const names of byCluster.values()) reportCycles(names, posOf, errors);
}

/** Each of a document's `windows` parses; a bad one is reported at its list item. */
function validateWindows(spec: ClusterSpec | GuestSpec, posOf: PositionsOf, errors: SpecError[]): void {
  (spec.windows ?? []).forEach((text, i) => {
    const parsed = parseWindow(text);
    if (typeof parsed === 'string') errors.push(new SpecError(posOf(spec).value(['windows', i]), `windows: ${parsed}`));
  });
}

/** Depth-first search over `dependsOn`; each cycle found is reported at the guest that closes it. */
function reportCycles(names: ReadonlyMap<string, GuestSpec>, posOf: PositionsOf, errors: SpecError[]): void {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (name: string): void => {
    state.set(name, 'open');
    path.push(name);
    const guest = names.get(name) as GuestSpec;
    (guest.dependsOn ?? []).forEach((next, i) => {
      if (next === name || !names.has(next)) return; // reported above
      const seen = state.get(next);
      if (seen === 'open') {
        const cycle = [...path.slice(path.indexOf(next)), next];
        errors.push(
          new SpecError(posOf(guest).value(['dependsOn', i]), `dependsOn cycle: ${cycle.join(' → ')}; no guest of it could ever apply`),
        );
      } else if (seen === undefined) visit(next);
    });
    path.pop();
    state.set(name, 'done');
  };
  for (const name of [...names.keys()].sort()) if (!state.has(name)) visit(name);
}
