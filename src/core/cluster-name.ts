/**
 * How a cluster's name maps to its server-side connection settings. Names that map to one
 * environment prefix (`lab` and `LAB`; `lab-2`, `lab_2` and `LAB.2`) would share one connection,
 * so cluster names must be unique after this normalisation.
 */

/** The normalised form of a cluster name: upper case, every other character than A–Z and 0–9 as `_`. */
export function clusterKey(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** The environment-variable prefix of a cluster: `lab-2` → `PVE_CLUSTER_LAB_2_`. */
export function envPrefix(name: string): string {
  return `PVE_CLUSTER_${clusterKey(name)}_`;
}
