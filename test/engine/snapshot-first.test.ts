/**
 * Snapshots first over HTTP against the simulator (README "Snapshots first"): the plan announces
 * the snapshot, the apply takes it (named after the run) before its first write, prunes only this
 * tool's oldest snapshots past the bound, and a rollback to it restores what was there; a storage
 * without the snapshot feature refuses it and nothing is written; `risky` leaves a live change alone.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterSpec, GuestSpec } from '../../src/core/model.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';
import { makeClusterSpec, makeGuestSpec } from '../helpers/factories.js';
import { rawValue } from './helpers.js';

const DISK = 'local-lvm:vm-100-disk-0,size=8G';
const OLD =
  '\n[pvegitops-old1]\nmemory: 1024\nsnaptime: 100\n\n[pvegitops-old2]\nmemory: 1024\nsnaptime: 200\n\n[manual]\nmemory: 1024\nsnaptime: 50\n';

let sim: RunningSimulator;
let client: PveClient;
let adapter: PveClusterAdapter;

beforeEach(async () => {
  sim = await startSimulator({
    port: 0,
    taskMs: 2,
    nodes: ['pve-01'],
    clusterName: 'lab',
    fixture: {
      storages: ['local-lvm', { storage: 'local', type: 'dir', content: ['images', 'iso'] }],
      guests: [
        { vmid: 100, type: 'qemu', node: 'pve-01', config: `name: web-01\ntags: pve-gitops\nmemory: 2048\nscsi0: ${DISK}\n${OLD}` },
        {
          vmid: 101,
          type: 'qemu',
          node: 'pve-01',
          config: 'name: raw-01\ntags: pve-gitops\nmemory: 2048\nscsi0: local:101/vm-101-disk-0.raw,size=8G\n',
        },
      ],
    },
  });
  client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
  adapter = new PveClusterAdapter(client, { wait: { intervalMs: 5 } });
});
afterEach(async () => {
  await client.close();
  await sim.close();
});

function cluster(overrides: Partial<ClusterSpec> = {}): ClusterSpec {
  return makeClusterSpec({ vmids: { lower: 100, upper: 1000 }, nodes: ['pve-01'], ...overrides });
}

function vm(vmid: number, name: string, disk: string, overrides: Partial<GuestSpec> = {}): GuestSpec {
  return makeGuestSpec({ vmid, name, node: 'pve-01', config: { memory: '4096', scsi0: disk }, ...overrides });
}

async function planAndApply(clusterSpec: ClusterSpec, guests: GuestSpec[], snapshotName = 'pvegitops-run-1') {
  const plan = await runPlan({ head: { clusters: [clusterSpec], guests }, readers: { lab: adapter } });
  const result = await executePlan(plan, { lab: adapter }, { lockPollMs: 5, snapshotName });
  return { plan, byVmid: Object.fromEntries(result.guests.map((g) => [g.vmid, g])) };
}

const snapshotNames = async (vmid: number): Promise<string[]> =>
  (await adapter.listSnapshots({ node: 'pve-01', type: 'qemu', vmid })).map((s) => s.name).sort();

describe('snapshots first', () => {
  it('snapshot: always takes one before the first write, keeps the newest of its own, and a rollback restores the old value', async () => {
    const { plan, byVmid } = await planAndApply(cluster({ snapshot: 'always', snapshotsKept: 2 }), [vm(100, 'web-01', DISK)]);
    expect(plan.guests.find((g) => g.vmid === 100)?.snapshot).toEqual({
      reason: 'snapshot before the apply (snapshot: always); a storage without snapshot support refuses it, and then nothing is written',
      keep: 2,
    });
    const web = byVmid[100];
    expect(web?.status).toBe('applied');
    expect(web?.steps.map((s) => s.op)).toEqual(['snapshot', 'delete-snapshot', 'config']);
    expect(web?.steps[0]).toMatchObject({ detail: 'pvegitops-run-1', exitStatus: 'OK' });
    expect(web?.steps[1]?.detail).toBe('pvegitops-old1 (only the 2 newest of pve-gitops are kept)');
    // Someone else's snapshot stays, whatever its age.
    expect(await snapshotNames(100)).toEqual(['manual', 'pvegitops-old2', 'pvegitops-run-1']);
    expect(rawValue(sim, 100, 'memory')).toBe('4096');

    await adapter.rollbackSnapshot({ node: 'pve-01', type: 'qemu', vmid: 100 }, 'pvegitops-run-1');
    expect(rawValue(sim, 100, 'memory')).toBe('2048');
  });

  it('a storage without the snapshot feature refuses it: the VM fails with why, and nothing is written', async () => {
    const { byVmid } = await planAndApply(cluster({ snapshot: 'always' }), [vm(101, 'raw-01', 'local:101/vm-101-disk-0.raw,size=8G')]);
    const raw = byVmid[101];
    expect(raw?.status).toBe('failed');
    expect(raw?.error).toMatch(
      /^snapshot pvegitops-run-1 before the apply failed: .*snapshot feature is not available.*; nothing was written$/,
    );
    expect(raw?.steps.map((s) => s.op)).toEqual([]);
    expect(rawValue(sim, 101, 'memory')).toBe('2048');
    expect(await snapshotNames(101)).toEqual([]);
  });

  it('snapshot: risky leaves a live change alone, and never is the default', async () => {
    const risky = await planAndApply(cluster({ snapshot: 'risky' }), [vm(100, 'web-01', DISK)]);
    expect(risky.plan.guests.find((g) => g.vmid === 100)?.snapshot).toBeUndefined();
    expect(risky.byVmid[100]?.steps.map((s) => s.op)).toEqual(['config']);
    const plain = await runPlan({
      head: { clusters: [cluster()], guests: [vm(100, 'web-01', DISK, { config: { memory: '8192', scsi0: DISK } })] },
      readers: { lab: adapter },
    });
    expect(plain.guests.find((g) => g.vmid === 100)?.snapshot).toBeUndefined();
    expect(await snapshotNames(100)).toEqual(['manual', 'pvegitops-old1', 'pvegitops-old2']);
  });
});
