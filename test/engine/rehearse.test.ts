/**
 * The rehearsal's cost and reach, measured with the simulator's request counters: a pull request
 * changing 10 guests on 2 nodes reads `2 + 2 × nodes` = 6 requests more than its plan, in an
 * estate of 200 guests as in one of 2,000 (the bench takes it to 10,000), and rehearses all 10 on
 * its copy without writing to the cluster.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { rehearsePlan } from '../../src/engine/rehearse/rehearse-plan.js';
import { observePlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { openRehearsalSandbox } from '../../src/pve/rehearse/sandbox.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';
import { estateFiles, estateFixture } from '../bench/estate.js';

/** Ten VMs of the estate, all on pve-02 and pve-03 (guest i lives on node i mod 5; multiples of 5 are containers). */
const CHANGED = [1, 2, 6, 7, 11, 12, 16, 17, 21, 22];

let sim: RunningSimulator | undefined;
let client: PveClient | undefined;

afterEach(async () => {
  await client?.close();
  await sim?.close();
  sim = undefined;
  client = undefined;
});

describe('the rehearsal of a 10-guest pull request', () => {
  it.each([200, 2000])('reads 6 requests more than the plan in an estate of %i guests, and applies all 10 on the copy', async (size) => {
    const layout = { kind: 'grouped', files: 20 } as const;
    const baseFiles = estateFiles(size, layout);
    const head = loadSpecs(estateFiles(size, layout, { guests: CHANGED, memory: '8192' })).specs;
    const base = loadSpecs(baseFiles).specs;
    sim = await startSimulator({ port: 0, taskMs: 0, fixture: estateFixture(baseFiles) as SimFixture });
    client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
    const readers = { lab: new PveClusterAdapter(client) };

    sim.sim.resetStats();
    const { plan, observed } = await observePlan({ head, base, readers });
    const planned = sim.sim.stats().requests.total;
    expect(plan.guests.filter((g) => g.action === 'update')).toHaveLength(10);

    sim.sim.resetStats();
    const rehearsal = await rehearsePlan({ plan, observed, readers, openSandbox: openRehearsalSandbox });
    const extra = sim.sim.stats();
    expect(extra.requests.total).toBe(6);
    expect(rehearsal.requests).toBe(6);
    expect(extra.requests.byRoute).toEqual({
      'GET /nodes': 1,
      'GET /nodes/{node}/storage': 2,
      'GET /nodes/{node}/network': 2,
      'GET /pools': 1,
    });
    // The plan's own reads: the listing and one per guest in scope, not the estate.
    expect(planned).toBeLessThan(20);
    expect(rehearsal.guests.map((g) => g.status)).toEqual(Array(10).fill('applied'));
    expect(extra.writes.total).toBe(0);
  });
});
