import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { api, waitTask } from './helpers.js';

/**
 * The requests community.general.proxmox (6.6.2, proxmoxer 1.2.0) made for a container's create,
 * start, stop and removal, as recorded by test/tools/ansible/run.ts from the simulator's journal,
 * with the fields of each answer the module reads (`plugins/modules/proxmox.py`,
 * `plugins/module_utils/proxmox.py`). The module polls task status once a second; here each task
 * is awaited instead.
 */
let sim: RunningSimulator;
beforeEach(async () => {
  sim = await startSimulator({ port: 0, taskMs: 5 });
});
afterEach(() => sim.close());

const VMID = 1042;
const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

async function get(path: string, query = ''): Promise<unknown> {
  const res = await api(sim, 'GET', `${path}${query}`);
  expect(res.status, `GET ${path}`).toBe(200);
  return res.body?.data;
}

/** `get_vm`: the guest's line in the cluster listing, found by integer VMID. */
async function listed(): Promise<Record<string, unknown> | undefined> {
  const vms = (await get('/cluster/resources', '?type=vm')) as Record<string, unknown>[];
  return vms.find((vm) => vm.vmid === VMID);
}

/** `api_task_ok`: the task stopped with exit status OK. */
async function taskOk(upid: unknown): Promise<void> {
  expect(upid).toMatch(/^UPID:pve-01:/);
  const status = await waitTask(sim, 'pve-01', upid as string);
  expect(status).toMatchObject({ status: 'stopped', exitstatus: 'OK' });
}

describe("Ansible's proxmox module, replayed", () => {
  it('creates, starts, stops and removes a container', async () => {
    // Connect: the version is read to test the token, and again for version-dependent features.
    expect(((await get('/version')) as { version: string }).version).toMatch(/^9\./);
    expect(await listed()).toBeUndefined();
    expect((await get('/nodes')) as unknown[]).toContainEqual(expect.objectContaining({ node: 'pve-01' }));
    // content_check: the template must be listed on its storage.
    const content = (await get('/nodes/pve-01/storage/local/content')) as { volid: string }[];
    expect(content.map((c) => c.volid)).toContain(TEMPLATE);

    const created = await api(sim, 'POST', '/nodes/pve-01/lxc', {
      form: {
        vmid: String(VMID),
        storage: 'local-lvm',
        memory: '512',
        swap: '512',
        cores: '1',
        hostname: 'ansible-ct',
        ostemplate: TEMPLATE,
        force: '0',
        unprivileged: '0',
        rootfs: '4',
        net0: 'name=eth0,ip=dhcp,bridge=vmbr0',
      },
    });
    expect(created.status).toBe(200);
    await taskOk(created.body?.data);
    expect(await listed()).toMatchObject({ vmid: VMID, node: 'pve-01', type: 'lxc' });

    const status = async (): Promise<string> => ((await get(`/nodes/pve-01/lxc/${VMID}/status/current`)) as { status: string }).status;
    expect(await status()).toBe('stopped');
    await taskOk((await api(sim, 'POST', `/nodes/pve-01/lxc/${VMID}/status/start`)).body?.data);
    expect(await status()).toBe('running');
    await taskOk((await api(sim, 'POST', `/nodes/pve-01/lxc/${VMID}/status/shutdown`)).body?.data);
    expect(await status()).toBe('stopped');
    await taskOk((await api(sim, 'DELETE', `/nodes/pve-01/lxc/${VMID}`)).body?.data);
    expect(await listed()).toBeUndefined();
  });

  it('sees the container as it asked for it: privileged (unprivileged=0 is not written), rootfs on the default storage', async () => {
    const created = await api(sim, 'POST', '/nodes/pve-01/lxc', {
      form: { vmid: String(VMID), storage: 'local-lvm', ostemplate: TEMPLATE, unprivileged: '0', rootfs: '4', hostname: 'ansible-ct' },
    });
    await taskOk(created.body?.data);
    const config = (await get(`/nodes/pve-01/lxc/${VMID}/config`)) as Record<string, unknown>;
    expect(config).not.toHaveProperty('unprivileged');
    expect(config.rootfs).toBe('local-lvm:vm-1042-disk-0,size=4G');
  });
});
