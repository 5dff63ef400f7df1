/**
 * Simulated clusters for App tests: one simulator per cluster name over real HTTP, and the
 * `PVE_CLUSTER_<NAME>_*` environment an operator would set for them (apply token and read-only
 * audit token), ready to pass to `startTestApp({ env })` or a spawned `pve-gitops serve`.
 */
import { envPrefix } from '../../src/core/cluster-name.js';
import { type RunningSimulator, type SimulatorOptions, startSimulator } from '../../src/pve/sim/index.js';

/** Running simulators by cluster name, with their connection environment. */
export interface TestClusters {
  sims: Record<string, RunningSimulator>;
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts a simulator per cluster (`nodes` default pve-01, pve-02). */
export async function startClusters(
  clusters: Record<string, Omit<SimulatorOptions, 'port' | 'clusterName'>> = { lab: {} },
): Promise<TestClusters> {
  const sims: Record<string, RunningSimulator> = {};
  const env: Record<string, string> = {};
  try {
    for (const [name, options] of Object.entries(clusters)) {
      const sim = await startSimulator({ taskMs: 5, ...options, port: 0, clusterName: name });
      sims[name] = sim;
      const prefix = envPrefix(name);
      env[`${prefix}URL`] = sim.url;
      env[`${prefix}TOKEN`] = sim.token;
      env[`${prefix}READ_TOKEN`] = sim.auditToken;
      // The simulators serve plain http on loopback; production refuses that unless allowed.
      env[`${prefix}ALLOW_HTTP`] = '1';
    }
  } catch (error) {
    await Promise.allSettled(Object.values(sims).map((sim) => sim.close()));
    throw error;
  }
  return {
    sims,
    env,
    async close() {
      await Promise.allSettled(Object.values(sims).map((sim) => sim.close()));
    },
  };
}
