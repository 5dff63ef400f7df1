/**
 * Snapshots first over HTTP against the simulator (README "Snapshots first"): the plan announces
 * the snapshot, the apply takes it (named after the run) before its first write, prunes only this
 * tool's oldest snapshots past the bound, and a rollback to it restores what was there — for VMs
 * and containers alike; the plan, which reads the storages' types (one request per cluster),
 * makes a guest whose snapshot Proxmox would refuse an error, and where it cannot see a storage
 * the apply's snapshot is refused and nothing is written; `risky` leaves a live change alone.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterSpec, GuestSpec } from '../../src/core/model.js';
import { planHasErrors } from '../../src/core/plan/plan-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runDrift, runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';
import { makeClusterSpec, makeGuestSpec } from '../helpers/factories.js';
import { rawValue } from './helpers.js';

const DISK = 'local-lvm:vm-100-disk-0,size=8G';
const ROOTFS = 'local-lvm:vm-200-disk-0,size=8G';
const BIND = '/srv/data,mp=/data';
/** A token that may write guests 100–202 and sees no storage (no Datastore.Audit). */
const NO_STORAGES = { id: 'ops@pve!guests', secret: 's3cret' };
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
        { vmid: 200, type: 'lxc', node: 'pve-01', config: `hostname: ct-01\ntags: pve-gitops\nmemory: 512\nrootfs: ${ROOTFS}\n${OLD}` },
        {
          vmid: 201,
          type: 'lxc',
          node: 'pve-01',
          config: `hostname: ct-02\ntags: pve-gitops\nmemory: 512\nrootfs: ${ROOTFS}\nmp0: ${BIND}\n`,
        },
      ],
      tokens: [{ id: NO_STORAGES.id, secret: NO_STORAGES.secret, role: 'admin', vmids: [100, 101, 200, 201], guestsOnly: true }],
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

function ct(vmid: number, name: string, config: Record<string, string> = {}): GuestSpec {
  return makeGuestSpec({ type: 'lxc', vmid, name, node: 'pve-01', config: { memory: '1024', ...config } });
}

/** The plan, and how many `GET /cluster/resources` it took. */
async function planOf(clusterSpec: ClusterSpec, guests: GuestSpec[], over = adapter) {
  const before = resourceReads();
  const plan = await runPlan({ head: { clusters: [clusterSpec], guests }, readers: { lab: over } });
  return { plan, resourceReads: resourceReads() - before };
}

async function planAndApply(clusterSpec: ClusterSpec, guests: GuestSpec[], snapshotName = 'pvegitops-run-1', over = adapter) {
  const { plan, resourceReads: reads } = await planOf(clusterSpec, guests, over);
  const result = await executePlan(plan, { lab: over }, { lockPollMs: 5, snapshotName });
  return { plan, resourceReads: reads, byVmid: Object.fromEntries(result.guests.map((g) => [g.vmid, g])) };
}

/** An adapter over the token that sees no storage. */
function blindAdapter(): { adapter: PveClusterAdapter; close: () => Promise<void> } {
  const blind = new PveClient({ cluster: 'lab', url: sim.url, token: `${NO_STORAGES.id}=${NO_STORAGES.secret}`, retries: 0 });
  return { adapter: new PveClusterAdapter(blind, { wait: { intervalMs: 5 } }), close: () => blind.close() };
}

const snapshotNames = async (vmid: number, type: 'qemu' | 'lxc' = 'qemu'): Promise<string[]> =>
  (await adapter.listSnapshots({ node: 'pve-01', type, vmid })).map((s) => s.name).sort();

const resourceReads = (): number => sim.sim.stats().requests.byRoute['GET /cluster/resources'] ?? 0;

describe('snapshots first', () => {
  it('snapshot: always takes one before the first write, keeps the newest of its own, and a rollback restores the old value', async () => {
    const { plan, byVmid } = await planAndApply(cluster({ snapshot: 'always', snapshotsKept: 2 }), [vm(100, 'web-01', DISK)]);
    expect(plan.guests.find((g) => g.vmid === 100)?.snapshot).toEqual({
      reason: 'snapshot before the apply (snapshot: always); its volumes can all be snapshotted (local-lvm: lvmthin)',
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

  it('a container is snapshotted the same way, its own oldest pruned, and a rollback restores it', async () => {
    const { plan, byVmid } = await planAndApply(cluster({ snapshot: 'always', snapshotsKept: 2 }), [ct(200, 'ct-01')]);
    expect(plan.guests.find((g) => g.vmid === 200)?.snapshot?.reason).toBe(
      'snapshot before the apply (snapshot: always); its volumes can all be snapshotted (local-lvm: lvmthin)',
    );
    const ct1 = byVmid[200];
    expect(ct1?.status).toBe('applied');
    expect(ct1?.steps.map((s) => s.op)).toEqual(['snapshot', 'delete-snapshot', 'config']);
    expect(ct1?.steps[0]?.upid).toMatch(/:vzsnapshot:200:/);
    expect(await snapshotNames(200, 'lxc')).toEqual(['manual', 'pvegitops-old2', 'pvegitops-run-1']);
    expect(rawValue(sim, 200, 'memory')).toBe('1024');

    await adapter.rollbackSnapshot({ node: 'pve-01', type: 'lxc', vmid: 200 }, 'pvegitops-run-1');
    expect(rawValue(sim, 200, 'memory')).toBe('512');
  });

  it('the plan makes a guest whose snapshot Proxmox would refuse an error, naming the volume, its storage and type; nothing is written', async () => {
    const {
      plan,
      byVmid,
      resourceReads: reads,
    } = await planAndApply(cluster({ snapshot: 'always' }), [
      vm(100, 'web-01', DISK),
      vm(101, 'raw-01', 'local:101/vm-101-disk-0.raw,size=8G'),
      ct(200, 'ct-01'),
      ct(201, 'ct-02', { mp0: BIND }),
    ]);
    // The guest listing and the storages: one request each, whatever the number of guests.
    expect(reads).toBe(2);
    const of = (vmid: number) => plan.guests.find((g) => g.vmid === vmid);
    expect(of(101)?.action).toBe('error');
    expect(of(101)?.errors).toEqual([
      'snapshot refused: local:101/vm-101-disk-0.raw (scsi0) on local (dir) cannot be snapshotted; the apply would fail this guest with nothing written: move the volume to a storage that can snapshot it (LVM-thin, ZFS, Ceph RBD; for a VM also a qcow2 image on a directory storage), or set `snapshot: never` on the guest',
    ]);
    expect(of(201)?.action).toBe('error');
    expect(of(201)?.errors[0]).toMatch(/^snapshot refused: mp0 \/srv\/data is a bind mount point, which cannot be snapshotted; /);
    expect(planHasErrors(plan)).toBe(true);
    expect([of(100)?.action, of(200)?.action]).toEqual(['update', 'update']);
    expect(byVmid[100]?.status).toBe('applied');
    expect(byVmid[101]?.steps ?? []).toEqual([]);
    expect(rawValue(sim, 101, 'memory')).toBe('2048');
    expect(rawValue(sim, 201, 'memory')).toBe('512');
    expect(await snapshotNames(201, 'lxc')).toEqual([]);
  });

  it('a drift report, which applies nothing, neither reads the storages nor makes a guest an error for its snapshot', async () => {
    const before = resourceReads();
    const drift = await runDrift({
      head: { clusters: [cluster({ snapshot: 'always' })], guests: [vm(101, 'raw-01', 'local:101/vm-101-disk-0.raw,size=8G')] },
      readers: { lab: adapter },
    });
    expect(resourceReads() - before).toBe(1);
    expect(drift.guests.find((g) => g.vmid === 101)).toMatchObject({ action: 'update', errors: [] });
    expect(planHasErrors(drift)).toBe(false);
  });

  it('where the plan cannot see a storage it says so, and the apply is refused by Proxmox with nothing written', async () => {
    const blind = blindAdapter();
    try {
      const { plan, byVmid } = await planAndApply(
        cluster({ snapshot: 'always' }),
        [vm(101, 'raw-01', 'local:101/vm-101-disk-0.raw,size=8G')],
        'pvegitops-run-1',
        blind.adapter,
      );
      expect(plan.guests.find((g) => g.vmid === 101)?.snapshot?.reason).toBe(
        "snapshot before the apply (snapshot: always); the plan cannot tell whether scsi0 on local can be snapshotted (storage 'local' is not visible to the plan's token (Datastore.Audit)); a storage without snapshot support refuses it, and then nothing is written",
      );
      const raw = byVmid[101];
      expect(raw?.status).toBe('failed');
      expect(raw?.error).toMatch(
        /^snapshot pvegitops-run-1 before the apply failed: .*snapshot feature is not available.*; nothing was written$/,
      );
      expect(raw?.steps.map((s) => s.op)).toEqual([]);
      expect(rawValue(sim, 101, 'memory')).toBe('2048');
      expect(await snapshotNames(101)).toEqual([]);
    } finally {
      await blind.close();
    }
  });

  it('snapshot: risky leaves a live change alone, and never is the default', async () => {
    const risky = await planAndApply(cluster({ snapshot: 'risky' }), [vm(100, 'web-01', DISK)]);
    expect(risky.plan.guests.find((g) => g.vmid === 100)?.snapshot).toBeUndefined();
    expect(risky.byVmid[100]?.steps.map((s) => s.op)).toEqual(['config']);
    const plain = await planOf(cluster(), [vm(100, 'web-01', DISK, { config: { memory: '8192', scsi0: DISK } })]);
    expect(plain.plan.guests.find((g) => g.vmid === 100)?.snapshot).toBeUndefined();
    // Nothing to snapshot: the storages are not read (the listing is the one request).
    expect(plain.resourceReads).toBe(1);
    expect(await snapshotNames(100)).toEqual(['manual', 'pvegitops-old1', 'pvegitops-old2']);
  });
});
