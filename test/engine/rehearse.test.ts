/**
 * The rehearsal's cost and reach, measured with the simulator's request counters: a pull request
 * changing 10 guests on 2 nodes reads `3 + nodes` = 5 requests more than its plan, in an
 * estate of 200 guests as in one of 2,000 (the bench takes it to 10,000), and rehearses all 10 on
 * its copy without writing to the cluster; objects of other kinds are copied from the plan's own
 * reads, the datacenter's IPsets and aliases aside (2 requests, when a firewall rule is written).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { rehearsePlan } from '../../src/engine/rehearse/rehearse-plan.js';
import { observePlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { readClusterFacts } from '../../src/pve/rehearse/read-facts.js';
import { openRehearsalSandbox } from '../../src/pve/rehearse/sandbox.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';
import { clusterFirewall } from '../../src/pve/sim/kinds/firewall/state.js';
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
  it.each([200, 2000])('reads 5 requests more than the plan in an estate of %i guests, and applies all 10 on the copy', async (size) => {
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
    expect(extra.requests.total).toBe(5);
    expect(rehearsal.requests).toBe(5);
    expect(extra.requests.byRoute).toEqual({
      'GET /nodes': 1,
      'GET /cluster/resources': 1,
      'GET /nodes/{node}/network': 2,
      'GET /pools': 1,
    });
    // The plan's own reads: the listing and one per guest in scope, not the estate.
    expect(planned).toBeLessThan(20);
    expect(rehearsal.guests.map((g) => g.status)).toEqual(Array(10).fill('applied'));
    expect(extra.writes.total).toBe(0);
  });

  it('copies the objects of other kinds from the plan’s own reads: 2 requests more, for the datacenter’s IPsets and aliases, only when a rule is written', async () => {
    const guest = (vmid: number, parts: string[]): string =>
      [`kind: VM`, `name: vm-${vmid}`, 'cluster: lab', 'node: pve-01', `vmid: ${vmid}`, ...parts, 'config: { memory: 512 }', ''].join('\n');
    const cluster = 'kind: Cluster\nname: lab\nvmids: { lower: 100, upper: 1000 }\nnodes: [pve-01]\n';
    const files = (parts: string[], extra: string[] = []) => [
      { path: 'lab.yaml', text: [cluster, guest(101, parts), guest(102, parts), ...extra].join('---\n') },
    ];
    const rule = ['firewall:', '  rules:', '    - { type: in, action: ACCEPT, source: +mgmt, macro: SSH }'];
    const head = loadSpecs(files(['ha: { state: started }', ...rule], ['kind: Pool\nname: web\ncluster: lab\n'])).specs;
    const base = loadSpecs(files([])).specs;
    sim = await startSimulator({
      port: 0,
      taskMs: 0,
      nodes: ['pve-01'],
      clusterName: 'lab',
      fixture: {
        pools: [],
        guests: [101, 102].map((vmid) => ({
          vmid,
          type: 'qemu',
          node: 'pve-01',
          config: { name: `vm-${vmid}`, memory: 512, tags: 'pve-gitops' },
        })),
      },
    });
    // The rule names the datacenter's IPset: the copy must know it, or it would refuse the rule.
    clusterFirewall(sim.sim).ipsets.set('mgmt', { entries: [{ cidr: '10.9.0.0/24' }] });
    client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
    const readers = { lab: new PveClusterAdapter(client) };
    const { plan, observed } = await observePlan({ head, base, readers });
    expect(plan.objects.filter((o) => o.action !== 'noop').map((o) => o.key)).toEqual([
      'lab/pool/web',
      'lab/ha/101',
      'lab/ha/102',
      'lab/firewall/101',
      'lab/firewall/102',
    ]);

    sim.sim.resetStats();
    const rehearsal = await rehearsePlan({ plan, observed, readers, openSandbox: openRehearsalSandbox });
    const extra = sim.sim.stats();
    expect(extra.requests.byRoute).toEqual({
      'GET /nodes': 1,
      'GET /pools': 1,
      'GET /cluster/firewall/ipset': 1,
      'GET /cluster/firewall/aliases': 1,
    });
    expect(rehearsal.requests).toBe(4);
    expect(rehearsal.objects?.map((o) => `${o.key}: ${o.status}${o.error ? ` (${o.error})` : ''}`)).toEqual([
      'lab/pool/web: applied',
      'lab/ha/101: applied',
      'lab/ha/102: applied',
      'lab/firewall/101: applied',
      'lab/firewall/102: applied',
    ]);
    expect(extra.writes.total).toBe(0);
  });

  it('takes each storage’s free space from one /cluster/resources read where one figure holds for the nodes the apply allocates on', async () => {
    const GIB = 1024 ** 3;
    sim = await startSimulator({
      port: 0,
      nodes: ['pve-01', 'pve-02', 'pve-03'],
      fixture: {
        storages: [
          { storage: 'thick', type: 'lvm', content: ['images'], total: 16 * GIB, used: 14 * GIB },
          { storage: 'san', type: 'lvm', content: ['images'], shared: true, total: 64 * GIB, used: 8 * GIB },
          { storage: 'fast', type: 'lvmthin', content: ['images'], nodes: ['pve-02'], total: 8 * GIB, used: GIB },
        ],
      },
    });
    client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.auditToken, readOnly: true, retries: 0 });
    const sized = (facts: Awaited<ReturnType<typeof readClusterFacts>>) =>
      Object.fromEntries(
        facts.storages.map((s) => [s.storage, [s.nodes ?? 'all', s.total === undefined ? '?' : (s.total - (s.used ?? 0)) / GIB]]),
      );
    // One touched node: its local volume group's figures are the copy's (`fast` is not on it).
    const one = await readClusterFacts(client, ['pve-01']);
    expect(sized(one)).toEqual({ thick: ['all', 2], san: ['all', 56], fast: [['pve-02'], '?'] });
    expect(sized(await readClusterFacts(client, ['pve-02']))).toEqual({ thick: ['all', 2], san: ['all', 56], fast: [['pve-02'], 7] });
    expect(one.requests).toBe(4);
    // Two: each has a volume group of its own, which the copy's one cannot stand for; a shared one can.
    expect(sized(await readClusterFacts(client, ['pve-01', 'pve-03']))).toEqual({
      thick: ['all', '?'],
      san: ['all', 56],
      fast: [['pve-02'], '?'],
    });
  });
});
