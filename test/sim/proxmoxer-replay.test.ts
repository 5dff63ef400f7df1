import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { api, CT_CONFIG, waitTask, startGuestSimulator, WEB_GUEST } from './helpers.js';

/**
 * The requests proxmoxer 1.2.0 (Debian's python3-proxmoxer, the client of Ansible's Proxmox
 * modules) made for the calls of test/tools/proxmoxer/calls.py — endpoints real clients use and
 * pve-gitops does not — as recorded by test/tools/proxmoxer/run.ts from the simulator's journal,
 * with the fields of each answer the script reads. proxmoxer polls a task's status every 100 ms;
 * here each task is awaited instead.
 */
let sim: RunningSimulator;
beforeEach(async () => {
  sim = await startGuestSimulator([WEB_GUEST, { vmid: 200, type: 'lxc', node: 'pve-01', running: true, config: CT_CONFIG }]);
});
afterEach(() => sim.close());

async function get(path: string): Promise<unknown> {
  const res = await api(sim, 'GET', path);
  expect(res.status, `GET ${path}: ${res.text}`).toBe(200);
  return res.body?.data;
}

const subdirs = async (path: string): Promise<string[]> => ((await get(path)) as { subdir: string }[]).map((e) => e.subdir);

async function rebootOk(path: string, form?: Record<string, string>): Promise<void> {
  const res = await api(sim, 'POST', path, form ? { form } : {});
  expect(res.status, `POST ${path}: ${res.text}`).toBe(200);
  expect(await waitTask(sim, 'pve-01', res.body?.data as string)).toMatchObject({ status: 'stopped', exitstatus: 'OK' });
}

describe('proxmoxer, replayed', () => {
  it('reads the directory indexes, node and cluster status, reboots a VM and a container, lists the cluster tasks', async () => {
    expect(await subdirs('/nodes/pve-01/qemu/100')).toEqual(expect.arrayContaining(['config', 'pending', 'status', 'snapshot']));
    expect(await subdirs('/nodes/pve-01/qemu/100/status')).toEqual(['current', 'start', 'stop', 'reset', 'shutdown', 'suspend', 'reboot']);
    expect(await subdirs('/nodes/pve-01/lxc/200')).toEqual(expect.arrayContaining(['config', 'pending', 'status', 'interfaces']));
    expect(await subdirs('/nodes/pve-01/lxc/200/status')).toEqual(['current', 'start', 'stop', 'shutdown', 'reboot', 'migrate']);

    const node = (await get('/nodes/pve-01/status')) as {
      pveversion: string;
      cpuinfo: { cpus: number };
      memory: { total: number };
      uptime: number;
    };
    expect(node.pveversion).toMatch(/^pve-manager\/9\.\d+\.\d+\/[0-9a-f]+$/);
    expect(node.cpuinfo.cpus).toBeGreaterThan(0);
    expect(node.memory.total).toBeGreaterThan(0);
    expect(node.uptime).toBeGreaterThan(0);
    const cluster = (await get('/cluster/status')) as { type: string; name: string }[];
    expect(cluster.map((e) => [e.type, e.name])).toEqual([
      ['cluster', 'pve-sim'],
      ['node', 'pve-01'],
      ['node', 'pve-02'],
    ]);

    await rebootOk('/nodes/pve-01/qemu/100/status/reboot');
    // qmeventd's restart: a start task of root@pam's, after which the VM runs again.
    const starts = (await get('/nodes/pve-01/tasks?source=all&typefilter=qmstart&vmid=100')) as { upid: string }[];
    expect(starts).toHaveLength(1);
    await waitTask(sim, 'pve-01', starts[0]?.upid as string);
    await rebootOk('/nodes/pve-01/lxc/200/status/reboot', { timeout: '30' });
    for (const path of ['/nodes/pve-01/qemu/100/status/current', '/nodes/pve-01/lxc/200/status/current']) {
      expect(((await get(path)) as { status: string }).status).toBe('running');
    }

    const tasks = (await get('/cluster/tasks')) as { type: string; user: string; tokenid?: string }[];
    expect(tasks.map((t) => [t.type, t.user, t.tokenid ?? '']).sort()).toEqual([
      ['qmreboot', 'root@pam', 'pve-gitops'],
      ['qmstart', 'root@pam', ''],
      ['vzreboot', 'root@pam', 'pve-gitops'],
    ]);
  });
});
