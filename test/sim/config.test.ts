import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { api, CT_CONFIG, waitTask, WEB_CONFIG, startGuestSimulator, WEB_GUEST } from './helpers.js';

let sim: RunningSimulator;

beforeEach(async () => {
  sim = await startGuestSimulator([
    WEB_GUEST,
    {
      vmid: 101,
      type: 'qemu',
      node: 'pve-01',
      running: false,
      config: WEB_CONFIG.replace('web-01', 'web-02').replaceAll('vm-100-', 'vm-101-'),
    },
    { vmid: 200, type: 'lxc', node: 'pve-02', running: true, config: CT_CONFIG },
  ]);
});
afterEach(() => sim.close());

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

async function config(vmid: number, query = '', type = 'qemu', node = 'pve-01'): Promise<Record<string, unknown>> {
  const res = await api(sim, 'GET', `/nodes/${node}/${type}/${vmid}/config${query}`);
  expect(res.status).toBe(200);
  return res.body!.data as Record<string, unknown>;
}

describe('config files and digests (docs/proxmox-api.md#the-digest)', () => {
  it('digest is the SHA1 of the raw file text and changes with every write', async () => {
    const before = sim.sim.getGuest(100)!;
    expect(before.rawConfig).toBe(WEB_CONFIG);
    expect((await config(100)).digest).toBe(sha1(WEB_CONFIG));
    await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { description: 'front: "web"\nsecond line' } });
    const after = sim.sim.getGuest(100)!;
    expect(after.digest).toBe(sha1(after.rawConfig));
    expect(after.digest).not.toBe(before.digest);
    // description as encoded comment lines at the top, `:` percent-encoded.
    expect(after.rawConfig.startsWith('#front%3A "web"\n#second line\nboot: ')).toBe(true);
    expect((await config(100)).description).toBe('front: "web"\nsecond line');
  });

  it('types values like Proxmox: integers and booleans as numbers, memory and cpulimit as strings', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cpulimit: '4' } });
    const data = await config(101);
    expect(data).toMatchObject({ cores: 2, onboot: 1, memory: '2048', cpulimit: '4', name: 'web-02' });
    expect(data).not.toHaveProperty('vmid');
  });

  it('rejects a stale digest with the exact qemu text, before the lock check', async () => {
    const stale = sha1('something else');
    void sim.sim.holdLock(100, 'backup', 60_000);
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { cores: '4', digest: stale } });
    expect(res.status).toBe(500);
    expect(res.body?.message).toBe('checksum mismatch (file change by other user?)\n');
  });

  it('rejects a stale digest with the exact lxc text, after the lock check', async () => {
    const stale = sha1('other');
    const res = await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { cores: '2', digest: stale } });
    expect(res.status).toBe(500);
    expect(res.body?.message).toBe('detected modified configuration - file changed by other user? Try again.\n');
    void sim.sim.holdLock(200, 'backup', 60_000);
    const locked = await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { cores: '2', digest: stale } });
    expect(locked.body?.message).toBe('CT is locked (backup)\n');
  });

  it('accepts the current digest', async () => {
    const digest = (await config(101)).digest as string;
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '4', digest } });
    expect(res.body).toEqual({ data: null });
    expect((await config(101)).cores).toBe(4);
  });
});

describe('delete and revert (docs/proxmox-api.md#delete-and-revert)', () => {
  it.each([
    ['comma', 'onboot,tags'],
    ['semicolon', 'onboot;tags'],
    ['whitespace', 'onboot tags'],
  ])('removes keys from a stopped VM (%s separated)', async (_label, list) => {
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { delete: list } });
    expect(res.status).toBe(200);
    const data = await config(101, '?current=1');
    expect(data).not.toHaveProperty('onboot');
    expect(data).not.toHaveProperty('tags');
    expect(sim.sim.getGuest(101)!.rawConfig).not.toMatch(/onboot|tags|PENDING/);
  });

  it('accepts delete as a JSON array', async () => {
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { json: { delete: ['onboot', 'tags'] } });
    expect(res.status).toBe(200);
    expect(await config(101)).not.toHaveProperty('onboot');
  });

  it('refuses set-and-delete of one key and unknown options with the exact (sic) texts', async () => {
    const both = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '3', delete: 'cores' } });
    expect(both.body?.errors).toEqual({ delete: "you can't use '-cores' and -delete cores' at the same time" });
    const revert = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '3', revert: 'cores' } });
    expect(revert.body?.errors).toEqual({ delete: "you can't use '-cores' and -revert cores' at the same time" });
    const unknown = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { delete: 'nosuchopt' } });
    expect(unknown.body?.errors).toEqual({ delete: "unknown option 'nosuchopt'" });
    const force = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { force: '1' } });
    expect(force.body?.errors).toEqual({ delete: "missing property required by 'force'" });
  });

  it('revert drops a pending value of a running VM', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { cores: '8' } });
    expect((await config(100)).cores).toBe(8);
    await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { revert: 'cores' } });
    expect((await config(100)).cores).toBe(2);
    expect(sim.sim.getGuest(100)!.rawConfig).not.toContain('[PENDING]');
  });
});

describe('pending values on running guests (docs/proxmox-api.md#the-pending-list, #hotplug-and-pending)', () => {
  it('keeps cores pending: visible in /pending and current=0, not in current=1, applied at restart', async () => {
    const put = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { cores: '4', name: 'web-01b' } });
    expect(put.body).toEqual({ data: null });
    const raw = sim.sim.getGuest(100)!.rawConfig;
    expect(raw).toContain('\n[PENDING]\ncores: 4\n');
    expect(raw).toContain('name: web-01b\n'); // fast-plug: applied at once

    const pending = (await api(sim, 'GET', '/nodes/pve-01/qemu/100/pending')).body!.data as Record<string, unknown>[];
    expect(pending).toContainEqual({ key: 'cores', value: 2, pending: 4 });
    expect(pending).toContainEqual({ key: 'name', value: 'web-01b' });
    expect(pending).toContainEqual({ key: 'digest', value: sim.sim.getGuest(100)!.digest });
    expect((await config(100)).cores).toBe(4);
    expect((await config(100, '?current=1')).cores).toBe(2);

    const stop = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/stop');
    expect((await waitTask(sim, 'pve-01', stop.body!.data as string)).exitstatus).toBe('OK');
    expect((await config(100, '?current=1')).cores).toBe(4);
    const start = await api(sim, 'POST', '/nodes/pve-01/qemu/100/status/start');
    expect((await waitTask(sim, 'pve-01', start.body!.data as string)).exitstatus).toBe('OK');
    expect(sim.sim.getGuest(100)!.running).toBe(true);
    expect(sim.sim.getGuest(100)!.rawConfig).not.toContain('[PENDING]');
  });

  it('reports pending deletions with delete: 1 (2 when forced) and keeps them out of current=0', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { delete: 'scsihw' } });
    await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { delete: 'boot', force: '1' } });
    const pending = (await api(sim, 'GET', '/nodes/pve-01/qemu/100/pending')).body!.data as Record<string, unknown>[];
    expect(pending).toContainEqual({ key: 'scsihw', value: 'virtio-scsi-pci', delete: 1 });
    expect(pending).toContainEqual({ key: 'boot', value: 'order=scsi0;net0', delete: 2 });
    expect(sim.sim.getGuest(100)!.rawConfig).toContain('[PENDING]\ndelete: !boot,scsihw\n');
    expect(await config(100)).not.toHaveProperty('scsihw');
    expect((await config(100, '?current=1')).scsihw).toBe('virtio-scsi-pci');
  });

  it('hot-plugs a new NIC (network hotplug default) and fills in its MAC', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { net1: 'virtio,bridge=vmbr1' } });
    const net1 = (await config(100, '?current=1')).net1 as string;
    expect(net1).toMatch(/^virtio=BC:24:11:[0-9A-F]{2}:[0-9A-F]{2}:[0-9A-F]{2},bridge=vmbr1$/);
  });

  it('applies container cores at once (LXC fast-plug) but keeps other keys pending', async () => {
    await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { cores: '3', ostype: 'ubuntu' } });
    const current = await config(200, '?current=1', 'lxc', 'pve-02');
    expect(current.cores).toBe(3);
    expect(current.ostype).toBe('debian');
    expect((await config(200, '', 'lxc', 'pve-02')).ostype).toBe('ubuntu');
  });

  it('writes container pending values under [pve:pending], as pve-container does', async () => {
    await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { ostype: 'ubuntu' } });
    const raw = sim.sim.getGuest(200)?.rawConfig ?? '';
    expect(raw).toContain('\n[pve:pending]\nostype: ubuntu\n');
    expect(raw).not.toContain('[PENDING]');
  });

  it('applies everything at once on a stopped VM', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '6', sockets: '2' } });
    expect(sim.sim.getGuest(101)!.rawConfig).not.toContain('[PENDING]');
    expect(await config(101, '?current=1')).toMatchObject({ cores: 6, sockets: 2 });
  });

  it('POST config returns a qmconfig UPID; deleting an unset key is a plain warn: logged, and the task ends OK', async () => {
    const res = await api(sim, 'POST', '/nodes/pve-01/qemu/101/config', { form: { delete: 'balloon', cores: '3' } });
    const upid = res.body!.data as string;
    expect(upid).toMatch(/^UPID:pve-01:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmconfig:101:root@pam!pve-gitops:$/);
    const status = await waitTask(sim, 'pve-01', upid);
    expect(status.exitstatus).toBe('OK');
    const log = await api(sim, 'GET', `/nodes/pve-01/tasks/${encodeURIComponent(upid)}/log`);
    expect(log.body?.data).toEqual([
      { n: 1, t: 'update VM 101: -cores 3 -delete balloon' },
      { n: 2, t: "cannot delete 'balloon' - not set in current configuration!" },
      { n: 3, t: 'TASK OK' },
    ]);
    expect(log.body?.total).toBe(3);
  });
});

describe('tags, locks and protection', () => {
  it('normalises tags: lower-cased, de-duplicated, sorted, ;-joined', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { tags: 'B, a  b;Zed' } });
    expect((await config(100, '?current=1')).tags).toBe('a;b;zed');
    await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { tags: 'X y,x' } });
    expect((await config(200, '?current=1', 'lxc', 'pve-02')).tags).toBe('x;y');
    const listing = (await api(sim, 'GET', '/cluster/resources?type=vm')).body!.data as Record<string, unknown>[];
    expect(listing.find((e) => e.vmid === 100)?.tags).toBe('a;b;zed');
  });

  it('a held lock blocks writes with the exact text and clears, changing the digest both times', async () => {
    const d0 = sim.sim.getGuest(101)!.digest;
    const released = sim.sim.holdLock(101, 'backup', 150);
    const d1 = sim.sim.getGuest(101)!.digest;
    expect(d1).not.toBe(d0);
    expect(sim.sim.getGuest(101)!.rawConfig).toContain('lock: backup\n');
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '3' } });
    expect(res.status).toBe(500);
    expect(res.reason).toBe('VM is locked (backup)');
    expect(res.body?.message).toBe('VM is locked (backup)\n');
    const listing = (await api(sim, 'GET', '/cluster/resources?type=vm')).body!.data as Record<string, unknown>[];
    expect(listing.find((e) => e.vmid === 101)?.lock).toBe('backup');
    await released;
    expect(sim.sim.getGuest(101)!.digest).toBe(d0);
    expect((await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '3' } })).status).toBe(200);
  });

  it('protection blocks destroy and drive removal, and can itself be cleared', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { protection: '1' } });
    const destroy = await api(sim, 'DELETE', '/nodes/pve-01/qemu/101');
    expect(destroy.status).toBe(500);
    expect(destroy.body?.message).toBe("can't remove VM 101 - protection mode enabled\n");
    const drive = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { delete: 'scsi0' } });
    expect(drive.body?.message).toBe("can't remove drive 'scsi0' - protection mode enabled\n");
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { delete: 'protection' } });
    const ok = await api(sim, 'DELETE', '/nodes/pve-01/qemu/101');
    expect((await waitTask(sim, 'pve-01', ok.body!.data as string)).exitstatus).toBe('OK');
    expect(sim.sim.getGuest(101)).toBeUndefined();
  });

  it('protection also keeps a saved vmstate', async () => {
    sim.sim.operatorEdit(101, { set: { protection: '1' } });
    const guest = sim.sim.getGuest(101)?.rawConfig ?? '';
    sim.sim.removeGuest(101);
    sim.sim.addGuest({
      vmid: 101,
      type: 'qemu',
      node: 'pve-01',
      config: guest.replace('name: web-02\n', 'name: web-02\nvmstate: local-lvm:vm-101-state-suspend\n'),
    });
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { delete: 'vmstate' } });
    expect(res.body?.message).toBe("can't remove vmstate 'local-lvm:vm-101-state-suspend' - protection mode enabled\n");
  });

  it('a detached disk becomes unusedN on a stopped VM', async () => {
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { delete: 'scsi0' } });
    expect(await config(101, '?current=1')).toMatchObject({ unused0: 'local-lvm:vm-101-disk-0' });
  });
});

describe('descriptions (comment lines)', () => {
  it('keeps the newline of a container description and strips a VM one', async () => {
    await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { description: 'hello' } });
    expect((await config(200, '?current=1', 'lxc', 'pve-02')).description).toBe('hello\n');
    expect(sim.sim.getGuest(200)?.rawConfig).toMatch(/^#hello\n/);
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { description: 'hello' } });
    expect((await config(101, '?current=1')).description).toBe('hello');
  });

  it('writes nothing for an empty or "0" description of a stopped VM', async () => {
    const before = sim.sim.getGuest(101)?.rawConfig;
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { description: '' } });
    expect(sim.sim.getGuest(101)?.rawConfig).toBe(before);
    expect(await config(101, '?current=1')).not.toHaveProperty('description');
  });
});

describe('operator edits', () => {
  it('operatorEdit goes through the pending path of a running VM', async () => {
    const before = sim.sim.getGuest(100)!.digest;
    sim.sim.operatorEdit(100, { set: { cores: 6 } });
    expect(sim.sim.getGuest(100)!.digest).not.toBe(before);
    expect((await config(100, '?current=1')).cores).toBe(2);
    expect((await config(100)).cores).toBe(6);
  });

  it('editAfterNextRead lands between a read and the following write', async () => {
    sim.sim.editAfterNextRead(101, { set: { memory: '4096' } });
    const read = await config(101);
    expect(read.memory).toBe('2048');
    const write = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '4', digest: read.digest as string } });
    expect(write.body?.message).toBe('checksum mismatch (file change by other user?)\n');
    expect((await config(101)).memory).toBe('4096');
  });
});

describe('POST config with background_delay', () => {
  it('waits for the task and answers null when it finished, or the failure', async () => {
    const ok = await api(sim, 'POST', '/nodes/pve-01/qemu/101/config', { form: { cores: '3', background_delay: '5' } });
    expect(ok.body).toEqual({ data: null });
    await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { protection: '1' } });
    const failed = await api(sim, 'POST', '/nodes/pve-01/qemu/101/config', { form: { delete: 'scsi0', background_delay: '5' } });
    expect(failed.status).toBe(500);
    expect(failed.body?.message).toBe("failed to update VM 101: can't remove drive 'scsi0' - protection mode enabled\n");
  });
});

describe('more request shapes and container texts', () => {
  it('query-string parameters override body parameters', async () => {
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config?cores=3', { form: { cores: '2', sockets: '2' } });
    expect(res.status).toBe(200);
    expect(await config(101)).toMatchObject({ cores: 3, sockets: 2 });
  });

  it('container delete/revert conflicts and required options use the pve-container texts', async () => {
    const both = await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { swap: '256', delete: 'swap' } });
    expect(both.body?.errors).toEqual({ delete: "you can't use '-swap' and -delete swap' at the same time" });
    const revert = await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { swap: '256', revert: 'swap' } });
    expect(revert.body?.errors).toEqual({ revert: "you can't use '-swap' and '-revert swap' at the same time" });
    const delRevert = await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { delete: 'swap', revert: 'swap' } });
    expect(delRevert.body?.errors).toEqual({ delete: "you can't use '-delete swap' and '-revert swap' at the same time" });
    const required = await api(sim, 'PUT', '/nodes/pve-02/lxc/200/config', { form: { delete: 'memory' } });
    expect(required.body?.message).toBe("unable to delete required option 'memory'\n");
  });

  it('a hotplug failure on a running VM is a 400 after the other values were written', async () => {
    sim.sim.setRunning(100, false);
    sim.sim.operatorEdit(100, { set: { ide2: 'none,media=cdrom' } });
    sim.sim.setRunning(100, true);
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { ide2: 'local-lvm:8', onboot: '0' } });
    expect(res.status).toBe(400);
    // The die text keeps its newline in the errors map, as `"hotplug problem - $msg"` does.
    expect(res.body?.errors).toEqual({ ide2: 'hotplug problem - unable to change media type\n' });
    expect((await config(100, '?current=1')).onboot).toBe(0);
  });

  it('refuses to unplug the boot disk of a running VM', async () => {
    const del = await api(sim, 'PUT', '/nodes/pve-01/qemu/100/config', { form: { delete: 'scsi0' } });
    expect(del.status).toBe(400);
    expect(del.body?.errors).toEqual({ scsi0: "hotplug problem - can't unplug bootdisk 'scsi0'\n" });
    expect((await config(100, '?current=1')).scsi0).toBe('local-lvm:vm-100-disk-0,size=32G');
  });

  it('applies a POST config change when its worker runs, before the UPID is answered, not when the task ends', async () => {
    sim.sim.setTaskMs(60_000);
    const res = await api(sim, 'POST', '/nodes/pve-01/qemu/100/config', { form: { cpulimit: '3' } });
    const upid = res.body!.data as string;
    expect((await config(100, '?current=1')).cpulimit).toBe('3');
    const listed = (await api(sim, 'GET', '/nodes/pve-01/tasks?source=active')).body!.data as { upid: string }[];
    expect(listed.map((t) => t.upid)).toContain(upid);
  });

  it('a POST config worker that waits for the config lock checks the digest again once it has it', async () => {
    sim.sim.setTaskMs(300);
    const first = await api(sim, 'POST', '/nodes/pve-01/qemu/100/config', { form: { cores: '3' } });
    const digest = (await config(100)).digest as string;
    const second = await api(sim, 'POST', '/nodes/pve-01/qemu/100/config', { form: { cpulimit: '3', digest } });
    // An operator's edit does not queue on the lock: it lands while the second worker waits.
    sim.sim.operatorEdit(100, { set: { cpuunits: '200' } });
    expect((await waitTask(sim, 'pve-01', first.body!.data as string)).exitstatus).toBe('OK');
    const upid = second.body!.data as string;
    expect((await waitTask(sim, 'pve-01', upid)).exitstatus).toBe('checksum mismatch (file change by other user?)');
    const log = (await api(sim, 'GET', `/nodes/pve-01/tasks/${encodeURIComponent(upid)}/log`)).body!.data as { t: string }[];
    expect(log.map((l) => l.t).slice(0, 2)).toEqual(['trying to acquire lock...', ' OK']);
    expect((await config(100, '?current=1')).cpulimit).toBeUndefined();
  });
});
