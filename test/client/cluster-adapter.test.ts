/**
 * The Proxmox adapter speaks the ports' vocabulary: every failure the engine branches on comes out
 * as one of `core/port-errors.ts`, produced here from real simulator responses (and, where the
 * simulator cannot be made to say it, from a tiny server answering with Proxmox's text).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AlreadyInPowerStateError,
  DigestConflictError,
  GuestNotFoundError,
  LockedError,
  PermissionDeniedError,
  PortError,
  TaskFailedError,
  UnavailableError,
  VmidTakenError,
} from '../../src/core/port-errors.js';
import type { GuestRef } from '../../src/core/ports.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { sendJson, startTinyServer } from './helpers/tiny-server.js';

const NODE = 'pve-01';
let running: RunningSimulator;
const clients: PveClient[] = [];
let lab: PveClusterAdapter;

function adapter(token = running.token, url = running.url): PveClusterAdapter {
  const client = new PveClient({ cluster: 'lab', url, token, retries: 0 });
  clients.push(client);
  return new PveClusterAdapter(client, { wait: { intervalMs: 10 } });
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: unknown) => err,
  );
}

function qemu(vmid: number, runningGuest = false): GuestRef {
  running.sim.addGuest({ vmid, type: 'qemu', node: NODE, running: runningGuest, config: { name: `vm-${vmid}`, memory: 2048 } });
  return { node: NODE, type: 'qemu', vmid };
}

function lxc(vmid: number, runningGuest = false): GuestRef {
  running.sim.addGuest({
    vmid,
    type: 'lxc',
    node: NODE,
    running: runningGuest,
    config: { hostname: `ct-${vmid}`, memory: 512, ostype: 'debian', arch: 'amd64', rootfs: `local-lvm:vm-${vmid}-disk-0,size=4G` },
  });
  return { node: NODE, type: 'lxc', vmid };
}

beforeAll(async () => {
  running = await startSimulator({ port: 0, taskMs: 5 });
  lab = adapter();
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await running.close();
});

describe('the Proxmox adapter maps failures onto the port errors', () => {
  it('a guest that is not there: GuestNotFoundError, with the cluster', async () => {
    const err = await failure(lab.readGuestForApply({ node: NODE, type: 'qemu', vmid: 99_999 }));
    expect(err).toBeInstanceOf(GuestNotFoundError);
    expect(err).toMatchObject({ cluster: 'lab', message: `Configuration file 'nodes/${NODE}/qemu-server/99999.conf' does not exist` });
  });

  it('a stale digest: DigestConflictError with both digests', async () => {
    const ref = lxc(110);
    const read = await lab.readGuestForApply(ref);
    running.sim.operatorEdit(110, { set: { memory: 1024 } });
    const err = await failure(lab.updateConfig(ref, { memory: '768' }, [], read.digest));
    expect(err).toBeInstanceOf(DigestConflictError);
    expect(err).toMatchObject({ expectedDigest: read.digest, actualDigest: running.sim.getGuest(110)!.digest });
  });

  it('a lock: LockedError with the lock, also when it surfaces as the reason of a failed task', async () => {
    const ref = qemu(120);
    const read = await lab.readGuestForApply(ref);
    void running.sim.holdLock(120, 'backup', 60_000);
    const direct = await failure(lab.updateConfig(ref, { memory: '1024' }, [], running.sim.getGuest(120)!.digest));
    expect(direct).toBeInstanceOf(LockedError);
    expect(direct).toMatchObject({ lock: 'backup' });
    expect(read.digest).not.toBe(running.sim.getGuest(120)!.digest);
    // QEMU destroy checks the lock inside its task (qemu-server PVE/API2/Qemu.pm destroy_vm).
    const task = await failure(lab.destroy(ref));
    expect(task).toBeInstanceOf(TaskFailedError);
    expect(task).toMatchObject({ exitStatus: 'VM is locked (backup)', upid: expect.stringMatching(/^UPID:pve-01:.*:qmdestroy:120:/) });
    expect((task as TaskFailedError).cause).toBeInstanceOf(LockedError);
  });

  it('a VMID in use: VmidTakenError with the VMID and the node holding it', async () => {
    qemu(130);
    const err = await failure(lab.create({ node: 'pve-02', type: 'qemu', vmid: 130 }, { name: 'again', memory: '512' }));
    expect(err).toBeInstanceOf(VmidTakenError);
    expect(err).toMatchObject({ vmid: 130, node: NODE });
  });

  it('a power change to the state the guest is in: AlreadyInPowerStateError, for qemu (in the task) and lxc', async () => {
    // qemu-server PVE/QemuServer.pm vm_start_nolock dies in the start task.
    const vm = await failure(lab.start(qemu(140, true)));
    expect(vm).toBeInstanceOf(TaskFailedError);
    expect((vm as TaskFailedError).cause).toBeInstanceOf(AlreadyInPowerStateError);
    expect((vm as TaskFailedError).cause).toMatchObject({ state: 'running', message: 'VM 140 already running' });
    // pve-container PVE/API2/LXC/Status.pm vm_start / vm_shutdown die before forking a task.
    const started = await failure(lab.start(lxc(141, true)));
    expect(started).toBeInstanceOf(AlreadyInPowerStateError);
    expect(started).toMatchObject({ state: 'running' });
    const stopped = await failure(lab.shutdown(lxc(142, false)));
    expect(stopped).toBeInstanceOf(AlreadyInPowerStateError);
    expect(stopped).toMatchObject({ state: 'stopped', message: 'CT 142 not running' });
  });

  it('a token without the privilege: PermissionDeniedError', async () => {
    const ref = qemu(150);
    const read = await lab.readGuestForApply(ref);
    const auditor = adapter(running.auditToken);
    const err = await failure(auditor.updateConfig(ref, { memory: '1024' }, [], read.digest));
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect((err as Error).message).toMatch(/^Permission check failed \(\/vms\/150, /);
  });

  it('a cluster that cannot be reached: UnavailableError, a write marked uncertain only when it may have happened', async () => {
    const server = await startTinyServer((req) => void req.socket.destroy());
    try {
      const flaky = adapter(running.token, server.url);
      const read = await failure(flaky.listGuests());
      expect(read).toBeInstanceOf(UnavailableError);
      expect(read).toMatchObject({ writeUncertain: false });
      const write = await failure(flaky.start({ node: NODE, type: 'qemu', vmid: 1 }));
      expect(write).toBeInstanceOf(UnavailableError);
      expect(write).toMatchObject({ writeUncertain: true });
    } finally {
      await server.close();
    }
  });

  it('"already running" answering a stop is no "already there": a plain PortError', async () => {
    const server = await startTinyServer((_req, res) => sendJson(res, 500, { data: null, message: 'CT 160 already running\n' }));
    try {
      const odd = adapter(running.token, server.url);
      const err = await failure(odd.stop({ node: NODE, type: 'lxc', vmid: 160 }));
      expect(err).toBeInstanceOf(PortError);
      expect(err).not.toBeInstanceOf(AlreadyInPowerStateError);
      expect((err as Error).message).toBe('CT 160 already running');
    } finally {
      await server.close();
    }
  });
});
