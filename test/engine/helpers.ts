import { fileURLToPath } from 'node:url';
import type { GuestSpec, Plan, SpecSet } from '../../src/core/model.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import labFixture from '../../src/demo/lab-fixture.json' with { type: 'json' };
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';
import { readSpecDir } from '../../src/spec-files/read-spec-dir.js';

export const SPECS_EXAMPLE = fileURLToPath(new URL('../../specs-example', import.meta.url));

/**
 * What specs-example needs on an otherwise empty lab cluster: the template its clones are made
 * from (lab/templates.yaml), built by an earlier pull request, and the cloud image it came from.
 */
export const LAB_TEMPLATE_FIXTURE: SimFixture = {
  files: (labFixture as SimFixture).files ?? [],
  guests: (labFixture as SimFixture).guests?.filter((g) => g.config && typeof g.config === 'object' && g.config.template === 1) ?? [],
};

/** The two example clusters as simulators, with read-only and writing adapters. */
export interface Estate {
  sims: Record<'lab' | 'prod', RunningSimulator>;
  readers: Record<string, PveClusterAdapter>;
  writers: Record<string, PveClusterAdapter>;
  close(): Promise<void>;
}

const NODES = { lab: ['pve-01', 'pve-02'], prod: ['pve-11', 'pve-12'] } as const;

/** `template: true` puts specs-example's template and its cloud image on lab; else both are empty. */
export async function startEstate(options: { taskMs?: number; template?: boolean } = {}): Promise<Estate> {
  const sims = {} as Record<'lab' | 'prod', RunningSimulator>;
  const clients: PveClient[] = [];
  const readers: Record<string, PveClusterAdapter> = {};
  const writers: Record<string, PveClusterAdapter> = {};
  for (const name of ['lab', 'prod'] as const) {
    const sim = await startSimulator({
      port: 0,
      nodes: [...NODES[name]],
      taskMs: options.taskMs ?? 5,
      clusterName: name,
      ...(name === 'lab' && options.template === true ? { fixture: LAB_TEMPLATE_FIXTURE } : {}),
    });
    sims[name] = sim;
    const reader = new PveClient({ cluster: name, url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
    const writer = new PveClient({ cluster: name, url: sim.url, token: sim.token, retries: 0 });
    clients.push(reader, writer);
    readers[name] = new PveClusterAdapter(reader, { wait: { intervalMs: 10 } });
    writers[name] = new PveClusterAdapter(writer, { wait: { intervalMs: 10 } });
  }
  return {
    sims,
    readers,
    writers,
    async close() {
      await Promise.allSettled(clients.map((c) => c.close()));
      await Promise.allSettled(Object.values(sims).map((s) => s.close()));
    },
  };
}

/** Loads specs-example (or another directory) and fails the test on any spec error. */
export async function loadExample(dir = SPECS_EXAMPLE): Promise<SpecSet> {
  const loaded = loadSpecs(await readSpecDir(dir));
  if (loaded.errors.length > 0) throw new Error(loaded.errors.map((e) => e.message).join('\n'));
  return loaded.specs;
}

/** A copy of `specs` with one guest's config changed. */
export function withConfig(specs: SpecSet, name: string, cluster: string, config: Record<string, string>): SpecSet {
  return {
    clusters: specs.clusters,
    guests: specs.guests.map(
      (g): GuestSpec => (g.name === name && g.cluster === cluster ? { ...g, config: { ...g.config, ...config } } : g),
    ),
  };
}

/** Total writes the simulators have seen. */
export function writes(estate: Estate): number {
  return estate.sims.lab.sim.stats().writes.total + estate.sims.prod.sim.stats().writes.total;
}

/** Guests of a plan by `cluster/name`. */
export function byName(plan: Plan): Record<string, Plan['guests'][number]> {
  return Object.fromEntries(plan.guests.map((g) => [`${g.cluster}/${g.name}`, g]));
}

/** Reads one config value straight from the simulator's raw config file (main section). */
export function rawValue(sim: RunningSimulator, vmid: number, key: string): string | undefined {
  const raw = sim.sim.getGuest(vmid)?.rawConfig ?? '';
  const main = raw.split(/\n\[/)[0] ?? '';
  const line = main.split('\n').find((l) => l.startsWith(`${key}: `));
  return line?.slice(key.length + 2);
}
