import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { api, CT_CONFIG, WEB_CONFIG } from './helpers.js';

let sim: RunningSimulator;
const LIMITED = 'limited@pve!plan=s3cret';

beforeAll(async () => {
  sim = await startSimulator({
    port: 0,
    fixture: {
      tokens: [{ id: 'limited@pve!plan', secret: 's3cret', role: 'audit', vmids: [100] }],
      guests: [
        { vmid: 100, type: 'qemu', node: 'pve-01', running: true, config: WEB_CONFIG },
        { vmid: 101, type: 'qemu', node: 'pve-01', config: WEB_CONFIG.replace('web-01', 'web-02') },
        { vmid: 200, type: 'lxc', node: 'pve-02', config: CT_CONFIG },
      ],
    },
  });
});
afterAll(() => sim.close());

describe('the audit token (PVEAuditor)', () => {
  it('reads everything', async () => {
    const res = await api(sim, 'GET', '/nodes/pve-01/qemu/100/pending', { token: sim.auditToken });
    expect(res.status).toBe(200);
    const listing = await api(sim, 'GET', '/cluster/resources?type=vm', { token: sim.auditToken });
    expect((listing.body!.data as unknown[]).length).toBe(3);
  });

  it.each([
    [
      'PUT',
      '/nodes/pve-01/qemu/100/config',
      { cores: '4' },
      'Permission check failed (/vms/100, VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|VM.Config.Cloudinit)\n',
    ],
    [
      'POST',
      '/nodes/pve-01/qemu/100/config',
      { cores: '4' },
      'Permission check failed (/vms/100, VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|VM.Config.Cloudinit)\n',
    ],
    [
      'PUT',
      '/nodes/pve-02/lxc/200/config',
      { cores: '4' },
      'Permission check failed (/vms/200, VM.Config.Disk|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.Options)\n',
    ],
    ['DELETE', '/nodes/pve-01/qemu/101', undefined, 'Permission check failed (/vms/101, VM.Allocate)\n'],
    ['POST', '/nodes/pve-01/qemu/100/status/stop', {}, 'Permission check failed (/vms/100, VM.PowerMgmt)\n'],
    ['POST', '/nodes/pve-01/qemu', { vmid: '500' }, 'Permission check failed\n'],
  ] as const)('cannot %s %s', async (method, path, form, message) => {
    const before = sim.sim.getGuest(100)!.digest;
    const res = await api(sim, method, path, { token: sim.auditToken, ...(form ? { form: { ...form } } : {}) });
    expect(res.status).toBe(403);
    expect(res.reason).toBe(message.trimEnd());
    expect(res.body).toEqual({ data: null, message });
    expect(sim.sim.getGuest(100)!.digest).toBe(before);
    expect(sim.sim.getGuest(101)).toBeDefined();
    expect(sim.sim.getGuest(500)).toBeUndefined();
  });
});

describe('a token limited to some guests', () => {
  it('does not see other guests in listings (empty, not an error)', async () => {
    const resources = await api(sim, 'GET', '/cluster/resources?type=vm', { token: LIMITED });
    expect((resources.body!.data as { vmid: number }[]).map((e) => e.vmid)).toEqual([100]);
    const node2 = await api(sim, 'GET', '/nodes/pve-02/lxc', { token: LIMITED });
    expect(node2.body).toEqual({ data: [] });
  });

  it('gets 403 VM.Audit for the config of a guest outside its set', async () => {
    const res = await api(sim, 'GET', '/nodes/pve-01/qemu/101/config', { token: LIMITED });
    expect(res.status).toBe(403);
    expect(res.body?.message).toBe('Permission check failed (/vms/101, VM.Audit)\n');
    const pending = await api(sim, 'GET', '/nodes/pve-02/lxc/200/pending', { token: LIMITED });
    expect(pending.body?.message).toBe('Permission check failed (/vms/200, VM.Audit)\n');
    expect((await api(sim, 'GET', '/nodes/pve-01/qemu/100/config', { token: LIMITED })).status).toBe(200);
  });
});

describe('root-only options for tokens (docs/proxmox-api.md#token-privilege-separation)', () => {
  it('refuses args and lock even for root@pam tokens', async () => {
    const res = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { args: '-no-reboot' } });
    expect(res.status).toBe(500);
    expect(res.body?.message).toBe("only root can set 'args' config\n");
    const skip = await api(sim, 'PUT', '/nodes/pve-01/qemu/101/config', { form: { cores: '2', skiplock: '1' } });
    expect(skip.body?.errors).toEqual({ skiplock: 'Only root may use this option.' });
  });
});

describe('a token replaced while the simulator runs', () => {
  it('authenticates by its new secret only, though its old header was answered before', async () => {
    expect((await api(sim, 'GET', '/nodes/pve-01/qemu/100/pending', { token: LIMITED })).status).toBe(200);
    sim.sim.tokens.add({ id: 'limited@pve!plan', secret: 'n3w', role: 'audit', vmids: new Set([100]) });
    try {
      const old = await api(sim, 'GET', '/nodes/pve-01/qemu/100/pending', { token: LIMITED });
      expect([old.status, old.reason]).toEqual([401, 'Authentication failed!']);
      expect((await api(sim, 'GET', '/nodes/pve-01/qemu/100/pending', { token: 'limited@pve!plan=n3w' })).status).toBe(200);
    } finally {
      sim.sim.tokens.add({ id: 'limited@pve!plan', secret: 's3cret', role: 'audit', vmids: new Set([100]) });
    }
  });
});
