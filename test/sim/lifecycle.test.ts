import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { UPID_RE } from '../../src/pve/sim/tasks.js';
import { api, CT_CONFIG, waitTask, startGuestSimulator, WEB_GUEST } from './helpers.js';

let sim: RunningSimulator;

beforeEach(async () => {
  sim = await startGuestSimulator([WEB_GUEST, { vmid: 200, type: 'lxc', node: 'pve-02', running: false, config: CT_CONFIG }]);
});
afterEach(() => sim.close());

async function task(node: string, res: { body?: { data?: unknown } }): Promise<Record<string, unknown>> {
  const upid = res.body?.data;
  expect(typeof upid).toBe('string');
  return waitTask(sim, node, upid as string);
}

describe('create (docs/proxmox-api.md#create)', () => {
  it('creates a VM: lock: create while the task runs, then server-filled keys and allocated disks', async () => {
    await sim.sim.setTaskMs(200);
    const res = await api(sim, 'POST', '/nodes/pve-02/qemu', {
      form: {
        vmid: '300',
        name: 'app-01',
        memory: '4096',
        cores: '2',
        scsi0: 'local-lvm:32,ssd=on',
        net0: 'virtio,bridge=vmbr0',
        tags: 'Prod,app',
      },
    });
    expect(res.status).toBe(200);
    expect(sim.sim.getGuest(300)?.rawConfig).toBe('lock: create\n');
    const status = await task('pve-02', res);
    expect(status.exitstatus).toBe('OK');
    const data = (await api(sim, 'GET', '/nodes/pve-02/qemu/300/config')).body!.data as Record<string, unknown>;
    expect(data).toMatchObject({
      name: 'app-01',
      memory: '4096',
      cores: 2,
      scsi0: 'local-lvm:vm-300-disk-0,size=32G,ssd=1',
      boot: 'order=scsi0;net0',
      tags: 'app;prod',
    });
    expect(data.net0).toMatch(/^virtio=BC:24:11:[0-9A-F:]{8},bridge=vmbr0$/);
    expect(data.smbios1).toMatch(/^uuid=[0-9a-f-]{36}$/);
    expect(data.vmgenid).toMatch(/^[0-9a-f-]{36}$/);
    expect(data.meta).toMatch(/^creation-qemu=[\d.]+,ctime=\d+$/);
    expect(data).not.toHaveProperty('lock');
    const log = await api(sim, 'GET', `/nodes/pve-02/tasks/${encodeURIComponent(res.body!.data as string)}/log`);
    expect(log.body?.data).toContainEqual({ n: 1, t: "scsi0: successfully created disk 'local-lvm:vm-300-disk-0,size=32G,ssd=1'" });
  });

  it('the second create of a VMID is a visible collision with the exact qemu and lxc texts', async () => {
    const first = await api(sim, 'POST', '/nodes/pve-01/qemu', { form: { vmid: '301' } });
    expect(first.status).toBe(200);
    const again = await api(sim, 'POST', '/nodes/pve-02/qemu', { form: { vmid: '301' } });
    expect(again.status).toBe(500);
    expect(again.body?.message).toBe("unable to create VM 301 - VM 301 already exists on node 'pve-01'\n");
    const ct = await api(sim, 'POST', '/nodes/pve-01/lxc', {
      form: { vmid: '200', ostemplate: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst' },
    });
    expect(ct.body?.message).toBe("CT 200 already exists on node 'pve-02'\n");
    const vmOverCt = await api(sim, 'POST', '/nodes/pve-01/qemu', { form: { vmid: '200' } });
    expect(vmOverCt.body?.message).toBe("unable to create VM 200 - CT 200 already exists on node 'pve-02'\n");
  });

  it('creates a container with arch, ostype from the template, allocated rootfs and a NIC MAC', async () => {
    const res = await api(sim, 'POST', '/nodes/pve-01/lxc', {
      form: {
        vmid: '400',
        ostemplate: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst',
        hostname: 'ct-01',
        rootfs: 'local-lvm:8',
        net0: 'name=eth0,bridge=vmbr0,ip=dhcp',
        start: '1',
      },
    });
    expect((await task('pve-01', res)).exitstatus).toBe('OK');
    const data = (await api(sim, 'GET', '/nodes/pve-01/lxc/400/config')).body!.data as Record<string, unknown>;
    expect(data).toMatchObject({ arch: 'amd64', ostype: 'debian', hostname: 'ct-01', rootfs: 'local-lvm:vm-400-disk-0,size=8G' });
    expect(data.net0).toMatch(/^name=eth0,bridge=vmbr0,hwaddr=BC:24:11:[0-9A-F:]{8},ip=dhcp,type=veth$/);
    // `start=1` is a start task of its own, forked by the create task.
    const starts = (await api(sim, 'GET', '/nodes/pve-01/tasks?source=all&typefilter=vzstart&vmid=400')).body!.data as { upid: string }[];
    expect(starts).toHaveLength(1);
    expect((await waitTask(sim, 'pve-01', starts[0]!.upid)).exitstatus).toBe('OK');
    expect(sim.sim.getGuest(400)?.running).toBe(true);
  });

  it('refuses a pool that does not exist, when the fixture lists pools', async () => {
    await sim.close();
    sim = await startSimulator({ port: 0, taskMs: 5, fixture: { pools: ['databases'] } });
    const bad = await api(sim, 'POST', '/nodes/pve-01/qemu', { form: { vmid: '150', pool: 'nosuch' } });
    expect(bad.status).toBe(403);
    expect(bad.body?.message).toBe("Permission check failed (pool 'nosuch' does not exist)\n");
    const ok = await api(sim, 'POST', '/nodes/pve-01/qemu', { form: { vmid: '150', pool: 'databases' } });
    expect(ok.status).toBe(200);
  });

  it('requires ostemplate for containers', async () => {
    const res = await api(sim, 'POST', '/nodes/pve-01/lxc', { form: { vmid: '401' } });
    expect(res.body?.errors).toEqual({ ostemplate: 'property is missing and it is not optional' });
  });
});

describe('cluster listing with an RRD lag (docs/proxmox-api.md#cluster-resources)', () => {
  it('lists a new guest as unknown without a name, and power changes only at the next tick', async () => {
    sim.sim.setRrdLag(60_000);
    const listing = async (): Promise<Record<string, unknown>[]> =>
      ((await api(sim, 'GET', '/cluster/resources?type=vm')).body!.data as Record<string, unknown>[]).filter((e) => e.vmid === 100);
    const [first] = await listing();
    expect(first).toMatchObject({ status: 'unknown', vmid: 100 });
    expect(first).not.toHaveProperty('name');
    // A pvestatd cycle: with a 1 ms interval the next listing publishes what is live.
    sim.sim.setRrdLag(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await listing())[0]).toMatchObject({ status: 'running', name: 'web-01' });
    sim.sim.setRrdLag(60_000);
    sim.sim.setRunning(100, false);
    expect((await listing())[0]).toMatchObject({ status: 'running' });
    expect(((await api(sim, 'GET', '/nodes/pve-01/qemu/100/status/current')).body!.data as Record<string, unknown>).status).toBe('stopped');
  });
});

describe('nextid (docs/proxmox-api.md#next-free-vmid)', () => {
  it('returns a string; a taken vmid is a 400 with the VM text', async () => {
    const next = await api(sim, 'GET', '/cluster/nextid');
    expect(next.body).toEqual({ data: '101' });
    const free = await api(sim, 'GET', '/cluster/nextid?vmid=555');
    expect(free.body).toEqual({ data: '555' });
    const taken = await api(sim, 'GET', '/cluster/nextid?vmid=200');
    expect(taken.status).toBe(400);
    expect(taken.body).toEqual({ data: null, errors: { vmid: 'VM 200 already exists' }, message: 'Parameter verification failed.\n' });
  });
});

describe('tasks (docs/proxmox-api.md#tasks-and-upids)', () => {
  it('UPIDs have the real format and the fields of GET …/tasks/{upid}/status, with tokenid for token tasks', async () => {
    const res = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/shutdown');
    const upid = res.body!.data as string;
    const m = UPID_RE.exec(upid);
    expect(m).not.toBeNull();
    expect(upid).toMatch(/^UPID:pve-01:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmshutdown:100:root@pam!pve-gitops:$/);
    const status = await waitTask(sim, 'pve-01', upid);
    const [, , pid, pstart, starttime] = upid.split(':');
    expect(status).toEqual({
      upid,
      node: 'pve-01',
      pid: parseInt(pid as string, 16),
      pstart: parseInt(pstart as string, 16),
      starttime: parseInt(starttime as string, 16),
      type: 'qmshutdown',
      id: '100',
      user: 'root@pam',
      tokenid: 'pve-gitops',
      status: 'stopped',
      exitstatus: 'OK',
    });
    expect(Math.abs((status.starttime as number) - Date.now() / 1000)).toBeLessThan(60);
  });

  it('a task runs for task-ms: running (no exitstatus) first, stopped with OK after', async () => {
    sim.sim.setTaskMs(1500);
    const res = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/stop');
    const upid = res.body!.data as string;
    const first = (await api(sim, 'GET', `/nodes/pve-01/tasks/${encodeURIComponent(upid)}/status`)).body!.data as Record<string, unknown>;
    expect(first.status).toBe('running');
    expect(first).not.toHaveProperty('exitstatus');
    expect(sim.sim.getGuest(100)?.running).toBe(true);
    const final = await waitTask(sim, 'pve-01', upid);
    expect(final.exitstatus).toBe('OK');
    expect(sim.sim.getGuest(100)?.running).toBe(false);
  });

  it("lists a node's tasks by guest: active ones while running, with the exit status once finished", async () => {
    sim.sim.setTaskMs(300);
    const res = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/stop');
    const upid = res.body!.data as string;
    const active = await api(sim, 'GET', '/nodes/pve-01/tasks?vmid=100&source=active');
    // pve-manager `API2/Tasks.pm`, `node_tasks`: active tasks get status RUNNING and keep the UPID's user.
    expect(active.body?.data).toEqual([
      expect.objectContaining({ upid, type: 'qmstop', id: '100', user: 'root@pam!pve-gitops', status: 'RUNNING' }),
    ]);
    expect((active.body!.data as Record<string, unknown>[])[0]).not.toHaveProperty('tokenid');
    expect((await api(sim, 'GET', '/nodes/pve-01/tasks?vmid=200&source=active')).body?.data).toEqual([]);
    expect((await api(sim, 'GET', '/nodes/pve-02/tasks?vmid=100&source=active')).body?.data).toEqual([]);
    await waitTask(sim, 'pve-01', upid);
    expect((await api(sim, 'GET', '/nodes/pve-01/tasks?vmid=100&source=active')).body?.data).toEqual([]);
    const archive = await api(sim, 'GET', '/nodes/pve-01/tasks?vmid=100');
    expect(archive.body?.data).toEqual([
      expect.objectContaining({ upid, status: 'OK', endtime: expect.any(Number), user: 'root@pam', tokenid: 'pve-gitops' }),
    ]);
    const bad = await api(sim, 'GET', '/nodes/pve-01/tasks?source=everything');
    expect(bad.status).toBe(400);
    expect(bad.body?.errors?.source).toMatch(/does not have a value in the enumeration/);
  });

  it('task log paging and unknown/garbled UPIDs', async () => {
    const res = await api(sim, 'POST', '/nodes/pve-01/qemu/100/config', { form: { delete: 'balloon,vga', cores: '3' } });
    const upid = res.body!.data as string;
    await waitTask(sim, 'pve-01', upid);
    const page = await api(sim, 'GET', `/nodes/pve-01/tasks/${encodeURIComponent(upid)}/log?start=1&limit=1`);
    expect(page.body).toEqual({ data: [{ n: 2, t: "cannot delete 'balloon' - not set in current configuration!" }], total: 4 });
    const garbled = await api(sim, 'GET', '/nodes/pve-01/tasks/UPID-nope/status');
    expect(garbled.body?.errors).toEqual({ upid: 'unable to parse worker upid' });
    const otherNode = await api(sim, 'GET', `/nodes/pve-02/tasks/${encodeURIComponent(upid)}/status`);
    expect(otherNode.body?.errors).toEqual({ upid: 'no such task' });
  });
});

describe('power (docs/proxmox-api.md#power-endpoints)', () => {
  it('accepts root-only power options set to false from a token', async () => {
    const stop = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/stop', { form: { skiplock: '0' } });
    expect(stop.status).toBe(200);
    const refused = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/stop', { form: { skiplock: '1' } });
    expect(refused.body?.errors).toEqual({ skiplock: 'Only root may use this option.' });
  });

  it('qemu: errors surface in the task; lxc: synchronously', async () => {
    const again = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/start');
    expect((await task('pve-01', again)).exitstatus).toBe('VM 100 already running');
    const missing = await api(sim, 'POST', '/nodes/pve-01/qemu/999/status/start');
    expect((await task('pve-01', missing)).exitstatus).toBe("Configuration file 'nodes/pve-01/qemu-server/999.conf' does not exist");
    const ctStop = await api(sim, 'POST', '/nodes/pve-02/lxc/200/status/stop');
    expect(ctStop.status).toBe(500);
    expect(ctStop.body?.message).toBe('CT 200 not running\n');
    const ctStart = await api(sim, 'POST', '/nodes/pve-02/lxc/200/status/start');
    expect((await task('pve-02', ctStart)).exitstatus).toBe('OK');
    const ctStartAgain = await api(sim, 'POST', '/nodes/pve-02/lxc/200/status/start');
    expect(ctStartAgain.body?.message).toBe('CT 200 already running\n');
  });

  it('a locked VM refuses to start in the task; skiplock is root@pam only', async () => {
    await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/stop').then((r) => task('pve-01', r));
    void sim.sim.holdLock(100, 'backup', 60_000);
    const start = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/start');
    expect((await task('pve-01', start)).exitstatus).toBe('VM is locked (backup)');
    const skip = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/start', { form: { skiplock: '1' } });
    expect(skip.body?.errors).toEqual({ skiplock: 'Only root may use this option.' });
  });

  it('status/current reports power state', async () => {
    const res = await api(sim, 'GET', '/nodes/pve-01/qemu/100/status/current');
    expect(res.body?.data).toMatchObject({
      vmid: 100,
      status: 'running',
      qmpstatus: 'running',
      name: 'web-01',
      cpus: 2,
      maxmem: 2048 * 1024 ** 2,
      ha: { managed: 0 },
    });
  });
});

describe('destroy (docs/proxmox-api.md#destroy)', () => {
  it('refuses a running VM synchronously; a locked VM fails only in the task', async () => {
    const running = await api(sim, 'DELETE', '/nodes/pve-01/qemu/100');
    expect(running.body?.message).toBe('VM 100 is running - destroy failed\n');
    await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/stop').then((r) => task('pve-01', r));
    void sim.sim.holdLock(100, 'backup', 60_000);
    const locked = await api(sim, 'DELETE', '/nodes/pve-01/qemu/100?purge=1');
    expect(locked.status).toBe(200);
    expect((await task('pve-01', locked)).exitstatus).toBe('VM is locked (backup)');
    expect(sim.sim.getGuest(100)).toBeDefined();
  });

  it('lxc: lock, protection and running are synchronous', async () => {
    await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { protection: '1' } });
    const prot = await api(sim, 'DELETE', '/nodes/pve-02/lxc/200');
    expect(prot.body?.message).toBe("can't remove CT 200 - protection mode enabled\n");
    await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { delete: 'protection' } });
    void sim.sim.holdLock(200, 'backup', 60_000);
    const locked = await api(sim, 'DELETE', '/nodes/pve-02/lxc/200');
    expect(locked.body?.message).toBe('CT is locked (backup)\n');
  });

  it('destroys a stopped container and frees its VMID', async () => {
    const res = await api(sim, 'DELETE', '/nodes/pve-02/lxc/200?purge=1&destroy-unreferenced-disks=1');
    expect((await task('pve-02', res)).exitstatus).toBe('OK');
    expect(sim.sim.getGuest(200)).toBeUndefined();
    expect((await api(sim, 'GET', '/cluster/nextid?vmid=200')).body?.data).toBe('200');
  });
});

describe('disks', () => {
  it('resize grows (+5G and absolute) and refuses to shrink with the qemu text in the task', async () => {
    const grow = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/resize', { form: { disk: 'scsi0', size: '+8G' } });
    expect((await task('pve-01', grow)).exitstatus).toBe('OK');
    expect(sim.sim.getGuest(100)?.rawConfig).toContain('scsi0: local-lvm:vm-100-disk-0,size=40G\n');
    const abs = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/resize', { form: { disk: 'scsi0', size: '64G' } });
    expect((await task('pve-01', abs)).exitstatus).toBe('OK');
    const shrink = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/resize', { form: { disk: 'scsi0', size: '10G' } });
    expect((await task('pve-01', shrink)).exitstatus).toBe('shrinking disks is not supported');
    const ct = await api(sim, 'PUT', '/nodes/pve-02/lxc/200/resize', { form: { disk: 'rootfs', size: '4G' } });
    expect(ct.body?.message).toBe('unable to shrink disk size\n');
  });

  it('move_disk puts the disk on the new storage and keeps the old volume as unused0', async () => {
    const same = await api(sim, 'POST', '/nodes/pve-01/qemu/100/move_disk', { form: { disk: 'scsi0', storage: 'local-lvm' } });
    expect(same.body?.message).toBe("you can't move to the same storage with same format\n");
    const res = await api(sim, 'POST', '/nodes/pve-01/qemu/100/move_disk', { form: { disk: 'scsi0', storage: 'ceph' } });
    expect((await task('pve-01', res)).exitstatus).toBe('OK');
    const data = (await api(sim, 'GET', '/nodes/pve-01/qemu/100/config?current=1')).body!.data as Record<string, unknown>;
    expect(data.scsi0).toBe('ceph:vm-100-disk-0,size=32G');
    expect(data.unused0).toBe('local-lvm:vm-100-disk-0');
  });

  it('move_volume locks the container with lock: disk while it runs', async () => {
    sim.sim.setTaskMs(300);
    const res = await api(sim, 'POST', '/nodes/pve-02/lxc/200/move_volume', { form: { volume: 'rootfs', storage: 'ceph', delete: '1' } });
    expect(sim.sim.getGuest(200)?.rawConfig).toContain('lock: disk\n');
    expect((await task('pve-02', res)).exitstatus).toBe('OK');
    const data = (await api(sim, 'GET', '/nodes/pve-02/lxc/200/config')).body!.data as Record<string, unknown>;
    expect(data.rootfs).toBe('ceph:vm-200-disk-0,size=8G');
    expect(data).not.toHaveProperty('lock');
    expect(data).not.toHaveProperty('unused0');
  });
});
