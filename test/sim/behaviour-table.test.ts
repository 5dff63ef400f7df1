import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { api, type ApiAnswer, CT_CONFIG, waitTask, WEB_CONFIG } from './helpers.js';

/**
 * docs/proxmox-behaviour.md is the expectation: every row of its tables names a behaviour read
 * from Proxmox's source and what Proxmox answers. Each row here has a scenario that provokes the
 * behaviour on the simulator over HTTP; the answer is compared with the row's text, not with
 * anything the simulator or the planner computes. A row without a scenario fails, and so does a
 * scenario without a row.
 */
const DOC = fileURLToPath(new URL('../../docs/proxmox-behaviour.md', import.meta.url));

interface DocRow {
  id: string;
  situation: string;
  expected: string;
}

/** Table rows `| ID | Request | Situation | Proxmox answers | Source |` (pipes in cells escaped as `\|`). */
function readRows(): DocRow[] {
  const rows: DocRow[] = [];
  for (const line of readFileSync(DOC, 'utf8').split('\n')) {
    const m = /^\| ([A-Z]{3}-\d+) \|/.exec(line);
    if (!m) continue;
    const cells = line.split(/(?<!\\)\|/).map((c) => c.replace(/\\\|/g, '|'));
    const answer = /`([^`]*)`/.exec(cells[4] ?? '');
    if (!answer) throw new Error(`row ${m[1]} has no answer in backticks`);
    rows.push({ id: m[1] as string, situation: (cells[3] ?? '').trim(), expected: answer[1] as string });
  }
  return rows;
}

/** What a scenario observed: the HTTP answer, a task's exit status, data, or the config file. */
interface Observed {
  http?: ApiAnswer;
  task?: string;
  data?: unknown;
  raw?: string;
}

let sim: RunningSimulator;
const LIMITED = 'ops@pve!limited=s3cret';
const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

const VM_101 = `${WEB_CONFIG.replace('web-01', 'web-02').replaceAll('vm-100-', 'vm-101-')}`.replace(
  'boot: order=scsi0;net0\n',
  'boot: order=scsi0;net0\nide2: local:iso/debian.iso,media=cdrom\n',
);

beforeEach(async () => {
  sim = await startSimulator({
    port: 0,
    taskMs: 2,
    fixture: {
      storages: ['local-lvm', { storage: 'local', type: 'dir', content: ['iso', 'vztmpl', 'backup', 'import', 'snippets'] }],
      files: [
        { volid: TEMPLATE, size: 126023475 },
        { volid: 'local:iso/debian.iso', size: 4096 },
      ],
      pools: [{ poolid: 'web', comment: 'Web servers', vmids: [100] }],
      tokens: [{ id: 'ops@pve!limited', secret: 's3cret', role: 'admin', vmids: [100], guestsOnly: true }],
      guests: [
        { vmid: 100, type: 'qemu', node: 'pve-01', running: true, config: WEB_CONFIG },
        { vmid: 101, type: 'qemu', node: 'pve-01', config: VM_101 },
        { vmid: 102, type: 'qemu', node: 'pve-01', config: 'name: tpl\ntemplate: 1\n' },
        { vmid: 103, type: 'qemu', node: 'pve-01', config: 'name: guarded\nprotection: 1\nscsi0: local-lvm:vm-103-disk-0,size=8G\n' },
        { vmid: 200, type: 'lxc', node: 'pve-02', running: true, config: `${CT_CONFIG}unprivileged: 1\n` },
        { vmid: 201, type: 'lxc', node: 'pve-01', config: CT_CONFIG.replace('db-01', 'db-02').replace('vm-200-', 'vm-201-') },
      ],
    },
  });
});
afterEach(() => sim.close());

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

function call(method: Method, path: string, form?: Record<string, string>, token?: string | null): Promise<ApiAnswer> {
  return api(sim, method, path, { ...(form ? { form } : {}), ...(token !== undefined ? { token } : {}) });
}

async function http(method: Method, path: string, form?: Record<string, string>, token?: string | null): Promise<Observed> {
  return { http: await call(method, path, form, token) };
}

/** Runs a request that answers with a UPID and waits for its exit status. */
async function task(method: Method, path: string, form?: Record<string, string>, token?: string | null): Promise<Observed> {
  const res = await call(method, path, form, token);
  const upid = res.body?.data;
  if (res.status !== 200 || typeof upid !== 'string') return { http: res };
  const node = /^UPID:([^:]+):/.exec(upid)?.[1] as string;
  const status = await waitTask(sim, node, upid);
  return { task: String(status.exitstatus) };
}

/** Runs a request (a task is awaited) and returns the guest's config file afterwards. */
async function file(vmid: number, method: Method, path: string, form?: Record<string, string>): Promise<Observed> {
  const done = await task(method, path, form);
  if (done.http && done.http.status !== 200) return done;
  return { raw: sim.sim.getGuest(vmid)?.rawConfig ?? '' };
}

async function data(path: string, token?: string): Promise<unknown> {
  const res = await call('GET', path, undefined, token);
  expect(res.status, `GET ${path}: ${res.text}`).toBe(200);
  return res.body?.data;
}

const arr = (value: unknown): Record<string, unknown>[] => value as Record<string, unknown>[];
const byKey = (value: unknown): Record<string, Record<string, unknown>> => Object.fromEntries(arr(value).map((e) => [String(e.key), e]));

/** A task of the admin token that finished, for the task rows. */
async function finishedStop(): Promise<string> {
  const res = await call('POST', '/nodes/pve-01/qemu/101/status/stop');
  const upid = res.body?.data as string;
  await waitTask(sim, 'pve-01', upid);
  return upid;
}

const CREATE_VM = { vmid: '180', memory: '1024', scsi0: 'local-lvm:8', net0: 'virtio,bridge=vmbr0' };
const CREATE_CT = { vmid: '181', ostemplate: TEMPLATE, rootfs: 'local-lvm:8', hostname: 'ct-181' };
const UNKNOWN_UPID = 'UPID:pve-01:00001234:00005678:65000000:qmstart:100:root@pam!pve-gitops:';

/** The config of a guest whose create task has just started (and runs on): its keys besides the digest. */
async function whileCreating(type: 'qemu' | 'lxc', vmid: number, form: Record<string, string>): Promise<Observed> {
  sim.sim.setTaskMs(60_000);
  const started = await call('POST', `/nodes/pve-01/${type}`, form);
  expect(started.status, started.text).toBe(200);
  const config = (await data(`/nodes/pve-01/${type}/${vmid}/config`)) as Record<string, unknown>;
  return { data: { keys: Object.keys(config).filter((key) => key !== 'digest'), lock: config.lock } };
}

const SCENARIOS: Record<string, () => Promise<Observed>> = {
  'API-1': () => http('GET', '/version', undefined, null),
  'API-2': () => http('GET', '/version', undefined, 'root@pam!pve-gitops=wrong'),
  'API-3': () => http('GET', '/nodes/pve-01/nope'),
  'API-4': () => http('GET', '/cluster/nextid?foo=1'),
  'API-5': async () => ({
    http: await api(sim, 'DELETE', '/nodes/pve-01/qemu/100', {
      body: 'purge=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }),
  }),
  'VER-1': async () => ({ data: await data('/version') }),

  'NOD-1': async () => ({ data: await data('/nodes') }),
  'NOD-2': async () => ({ data: { statistics: arr(await data('/nodes', LIMITED)).some((n) => 'maxcpu' in n || 'uptime' in n) } }),
  'RES-1': async () => ({ data: await data('/cluster/resources?type=vm', LIMITED) }),
  'RES-2': async () => {
    void sim.sim.holdLock(100, 'backup', 60_000);
    return { data: arr(await data('/cluster/resources?type=vm')).filter((e) => e.vmid === 100) };
  },
  'RES-3': async () => {
    const all = arr(await data('/cluster/resources'));
    return { data: { first: all[0], guest: all.find((e) => e.vmid === 100) } };
  },
  'RES-4': async () => ({ data: await data('/cluster/resources?type=storage', LIMITED) }),
  'RES-5': () => http('GET', '/cluster/resources?type=pool'),
  'NXT-1': () => http('GET', '/cluster/nextid?vmid=100'),
  'NXT-2': async () => ({ data: await data('/cluster/nextid') }),

  'TSK-1': async () => {
    sim.sim.setTaskMs(60_000);
    await call('POST', '/nodes/pve-01/qemu/100/status/stop');
    return { data: await data('/nodes/pve-01/tasks?source=active') };
  },
  'TSK-2': async () => {
    await finishedStop();
    return { data: await data('/nodes/pve-01/tasks') };
  },
  'TSK-3': async () => {
    await finishedStop();
    void sim.sim.holdLock(101, 'backup', 60_000);
    const destroy = await call('DELETE', '/nodes/pve-01/qemu/101');
    await waitTask(sim, 'pve-01', destroy.body?.data as string);
    return { data: await data('/nodes/pve-01/tasks?errors=1') };
  },
  'TSK-4': async () => {
    await finishedStop();
    await waitTask(sim, 'pve-01', (await call('POST', '/nodes/pve-01/qemu/101/status/start')).body?.data as string);
    await waitTask(sim, 'pve-01', (await call('POST', '/nodes/pve-01/qemu/100/status/start')).body?.data as string);
    return { data: await data('/nodes/pve-01/tasks?typefilter=qmstart&vmid=100') };
  },
  'TSK-5': async () => {
    await finishedStop();
    await finishedStop();
    const res = await call('GET', '/nodes/pve-01/tasks?userfilter=ROOT&limit=1');
    return { data: { returned: arr(res.body?.data).length, total: res.body?.total } };
  },
  'TSK-6': async () => {
    await finishedStop();
    const own = await call('POST', '/nodes/pve-01/qemu/100/status/stop', undefined, LIMITED);
    await waitTask(sim, 'pve-01', own.body?.data as string);
    return { data: await data('/nodes/pve-01/tasks', LIMITED) };
  },
  'TSK-7': async () => {
    await finishedStop();
    const warned = await call('POST', '/nodes/pve-01/qemu/101/config', { delete: 'balloon' });
    await waitTask(sim, 'pve-01', warned.body?.data as string);
    return { data: await data('/nodes/pve-01/tasks?statusfilter=warning') };
  },
  'TST-1': async () => ({ data: await data(`/nodes/pve-01/tasks/${encodeURIComponent(await finishedStop())}/status`) }),
  'TST-2': () => http('GET', '/nodes/pve-01/tasks/UPID-nope/status'),
  'TST-3': () => http('GET', `/nodes/pve-01/tasks/${encodeURIComponent(UNKNOWN_UPID)}/status`),
  'TST-4': async () => http('GET', `/nodes/pve-01/tasks/${encodeURIComponent(await finishedStop())}/status`, undefined, LIMITED),
  'TLG-1': async () => ({ data: await data(`/nodes/pve-01/tasks/${encodeURIComponent(UNKNOWN_UPID)}/log`) }),
  'TLG-2': async () => {
    const res = await call('POST', '/nodes/pve-01/qemu/101/config', { delete: 'balloon,vga', cores: '3' });
    const upid = res.body?.data as string;
    await waitTask(sim, 'pve-01', upid);
    const log = await call('GET', `/nodes/pve-01/tasks/${encodeURIComponent(upid)}/log?start=1&limit=0`);
    return { data: { lines: arr(log.body?.data).map((l) => l.n), total: log.body?.total } };
  },

  'QLS-1': async () => ({ data: await data('/nodes/pve-01/qemu', LIMITED) }),
  'LLS-1': async () => ({ data: await data('/nodes/pve-02/lxc') }),
  'QST-1': () => http('GET', '/nodes/pve-01/qemu/999/status/current'),
  'LST-1': async () => ({ data: await data('/nodes/pve-02/lxc/200/status/current') }),
  'QCF-1': () => http('GET', '/nodes/pve-01/qemu/100/config?snapshot=snap1&current=1'),
  'QCF-2': async () => {
    await call('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4' });
    const merged = (await data('/nodes/pve-01/qemu/100/config')) as Record<string, unknown>;
    const current = (await data('/nodes/pve-01/qemu/100/config?current=1')) as Record<string, unknown>;
    return { data: { merged: merged.cores, current: current.cores } };
  },
  'QCF-3': async () => {
    await call('PUT', '/nodes/pve-01/qemu/101/config', { cipassword: 's3cret-pw' });
    return { data: await data('/nodes/pve-01/qemu/101/config') };
  },
  'PND-1': async () => {
    await call('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4' });
    const entries = byKey(await data('/nodes/pve-01/qemu/100/pending'));
    return { data: { cores: entries.cores, digest: typeof entries.digest?.value === 'string' } };
  },

  'QUP-1': () => http('PUT', '/nodes/pve-01/qemu/101/config', { searchdomain: 'example.net\nargs: -S' }),
  'QUP-2': () => task('POST', '/nodes/pve-01/qemu/101/config', { ciuser: 'ops\nhookscript: local:snippets/x.sh' }),
  'QUP-3': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/config', { description: 'first line\nsecond line' }),
  'QUP-4': () => http('PUT', '/nodes/pve-01/qemu/101/config', { args: '-S' }),
  'QUP-5': () => http('PUT', '/nodes/pve-01/qemu/101/config', { vmgenid: '1' }),
  'QUP-6': async () => {
    sim.sim.operatorEdit(101, { set: { args: '-S' } });
    return http('PUT', '/nodes/pve-01/qemu/101/config', { delete: 'args' });
  },
  'QUP-7': () => http('PUT', '/nodes/pve-01/qemu/101/config', { serial0: '/dev/ttyS0' }),
  'QUP-8': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/config', { serial0: 'socket' }),
  'QUP-9': () => http('PUT', '/nodes/pve-01/qemu/101/config', { usb0: 'host=1234:5678' }),
  'QUP-10': () => http('PUT', '/nodes/pve-01/qemu/101/config', { hostpci0: '0000:01:00.0' }),
  'QUP-11': async () => {
    void sim.sim.holdLock(100, 'backup', 60_000);
    return http('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4', digest: '0'.repeat(40) });
  },
  'QUP-12': async () => {
    void sim.sim.holdLock(100, 'backup', 60_000);
    return http('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4' });
  },
  'QUP-13': () => http('PUT', '/nodes/pve-01/qemu/100/config', {}),
  'QUP-14': () => http('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4', skiplock: '1' }),
  'QUP-15': () => http('PUT', '/nodes/pve-01/qemu/100/config', { delete: 'nope' }),
  'QUP-16': () => http('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4', delete: 'cores' }),
  'QUP-17': () => task('POST', '/nodes/pve-01/qemu/100/config', { delete: 'balloon' }),
  'QUP-18': () => task('POST', '/nodes/pve-01/qemu/100/config', { delete: 'scsi0' }),
  'QUP-19': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/config', { tags: 'Beta,alpha beta' }),
  'QUP-20': () => http('PUT', '/nodes/pve-01/qemu/101/config', { sshkeys: 'ssh-ed25519 AAAA' }),
  'QUP-21': () => http('PUT', '/nodes/pve-01/qemu/101/config', { balloon: '4096' }),
  'QUP-22': () => http('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4' }, sim.auditToken),
  'QUP-23': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/config', { delete: 'scsi0' }),
  'QUP-24': () => http('PUT', '/nodes/pve-01/qemu/101/config', { boot: 'order=scsi7;net0' }),

  'LUP-1': () => http('PUT', '/nodes/pve-01/lxc/201/config', { entrypoint: '/sbin/init\nlxc.apparmor.profile: unconfined' }),
  'LUP-2': () => http('PUT', '/nodes/pve-02/lxc/200/config', { features: 'nesting=1,keyctl=1' }),
  'LUP-3': () => http('PUT', '/nodes/pve-01/lxc/201/config', { features: 'nesting=1' }),
  'LUP-4': async () => {
    const res = await call('PUT', '/nodes/pve-02/lxc/200/config', { features: 'nesting=1' });
    return res.status === 200 ? { data: await data('/nodes/pve-02/lxc/200/config') } : { http: res };
  },
  'LUP-5': () => http('PUT', '/nodes/pve-02/lxc/200/config', { dev0: '/dev/ttyUSB0' }),
  'LUP-6': () => http('PUT', '/nodes/pve-02/lxc/200/config', { mp0: '/srv/data,mp=/data' }),
  'LUP-7': () => http('PUT', '/nodes/pve-02/lxc/200/config', { hookscript: 'local:snippets/hook.pl' }),
  'LUP-8': () => http('PUT', '/nodes/pve-02/lxc/200/config', { unprivileged: '0' }),
  'LUP-9': async () => {
    void sim.sim.holdLock(200, 'backup', 60_000);
    return http('PUT', '/nodes/pve-02/lxc/200/config', { cores: '2', digest: '0'.repeat(40) });
  },
  'LUP-10': () => http('PUT', '/nodes/pve-02/lxc/200/config', { cores: '2', digest: '0'.repeat(40) }),
  'LUP-11': () => http('PUT', '/nodes/pve-02/lxc/200/config', { delete: 'memory' }),
  'LUP-12': () => file(201, 'PUT', '/nodes/pve-01/lxc/201/config', { nameserver: '1.1.1.1,9.9.9.9' }),

  'QCR-1': () => http('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, args: '-S' }),
  'QCR-2': () => http('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, hookscript: 'local:snippets/hook.pl' }),
  'QCR-3': () => http('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, serial0: '/dev/ttyS0' }),
  'QCR-4': () => task('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, serial0: 'socket' }),
  'QCR-5': () => http('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, usb0: 'host=1234:5678' }),
  'QCR-6': () => http('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, hostpci0: '0000:01:00.0' }),
  'QCR-7': () => task('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, ciuser: 'ops\nargs: -S' }),
  'QCR-8': () => http('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, vmid: '100' }),
  'QCR-9': () => http('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, pool: 'nope' }),
  'QCR-10': () => http('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, vmid: '100' }, sim.auditToken),
  'QCR-11': async () => {
    await task('POST', '/nodes/pve-01/qemu', CREATE_VM);
    const config = (await data('/nodes/pve-01/qemu/180/config')) as Record<string, unknown>;
    return {
      data: {
        boot: config.boot,
        smbios1: typeof config.smbios1 === 'string',
        vmgenid: typeof config.vmgenid === 'string',
        meta: typeof config.meta === 'string',
      },
    };
  },
  'QCR-12': async () => {
    await task('POST', '/nodes/pve-01/qemu', { ...CREATE_VM, pool: 'web' });
    return { data: arr(arr(await data('/pools?poolid=web'))[0]?.members).filter((m) => m.vmid === 180) };
  },
  'QCR-13': () => whileCreating('qemu', 180, CREATE_VM),
  'LCR-1': () => file(181, 'POST', '/nodes/pve-01/lxc', CREATE_CT),
  'LCR-2': () => file(181, 'POST', '/nodes/pve-01/lxc', { ...CREATE_CT, unprivileged: '0' }),
  'LCR-3': () => http('POST', '/nodes/pve-01/lxc', { ...CREATE_CT, features: 'keyctl=1' }),
  'LCR-4': () => http('POST', '/nodes/pve-01/lxc', { ...CREATE_CT, unprivileged: '0', features: 'nesting=1' }),
  'LCR-5': () => task('POST', '/nodes/pve-01/lxc', { ...CREATE_CT, features: 'nesting=1' }),
  'LCR-6': () => http('POST', '/nodes/pve-01/lxc', { ...CREATE_CT, vmid: '100' }, sim.auditToken),
  'LCR-7': async () => {
    await task('POST', '/nodes/pve-01/lxc', { vmid: '181', ostemplate: TEMPLATE, rootfs: 'local-lvm:8' });
    return { data: await data('/nodes/pve-01/lxc/181/config') };
  },
  'LCR-8': () => http('POST', '/nodes/pve-01/lxc', { vmid: '181', ostemplate: TEMPLATE }),
  'LCR-9': () => task('POST', '/nodes/pve-01/lxc', { ...CREATE_CT, ostemplate: 'local:vztmpl/nope.tar.zst' }),
  'LCR-10': () => http('POST', '/nodes/pve-01/lxc', { ...CREATE_CT, ostemplate: 'local:iso/debian.iso' }),
  'LCR-11': () => http('POST', '/nodes/pve-01/lxc', { ...CREATE_CT, mp0: '/srv/data,mp=/data' }),
  'LCR-12': () => task('POST', '/nodes/pve-01/lxc', { ...CREATE_CT, entrypoint: '/sbin/init\nlxc.cap.drop:' }),
  'LCR-13': () => whileCreating('lxc', 181, CREATE_CT),

  'QPW-1': () => task('POST', '/nodes/pve-01/qemu/100/status/start'),
  'QPW-2': () => task('POST', '/nodes/pve-01/qemu/101/status/stop'),
  'QPW-3': () => task('POST', '/nodes/pve-01/qemu/102/status/start'),
  'QPW-4': () => task('POST', '/nodes/pve-01/qemu/999/status/start'),
  'QPW-5': () => task('POST', '/nodes/pve-01/qemu/101/status/start', { machine: 'q35' }),
  'QPW-6': () => http('POST', '/nodes/pve-01/qemu/101/status/start', { skiplock: '1' }),
  'QPW-7': async () => {
    void sim.sim.holdLock(101, 'backup', 60_000);
    return task('POST', '/nodes/pve-01/qemu/101/status/start');
  },
  'QPW-8': async () => {
    void sim.sim.holdLock(100, 'backup', 60_000);
    return task('POST', '/nodes/pve-01/qemu/100/status/start');
  },
  'LPW-1': () => http('POST', '/nodes/pve-02/lxc/200/status/start'),
  'LPW-2': () => http('POST', '/nodes/pve-01/lxc/201/status/shutdown'),
  'LPW-3': () => task('POST', '/nodes/pve-01/lxc/999/status/start'),
  'LPW-4': async () => {
    void sim.sim.holdLock(201, 'mounted', 60_000);
    return task('POST', '/nodes/pve-01/lxc/201/status/start');
  },
  'LPW-5': () => http('POST', '/nodes/pve-02/lxc/200/status/stop', undefined, sim.auditToken),

  'QRS-1': () => task('PUT', '/nodes/pve-01/qemu/101/resize', { disk: 'scsi0', size: '16G' }),
  'QRS-2': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/resize', { disk: 'scsi0', size: '+8G' }),
  'QRS-3': () => task('PUT', '/nodes/pve-01/qemu/101/resize', { disk: 'ide2', size: '+1G' }),
  'LRS-1': () => http('PUT', '/nodes/pve-01/lxc/201/resize', { disk: 'rootfs', size: '8G' }),
  'LRS-2': () => http('PUT', '/nodes/pve-01/lxc/201/resize', { disk: 'rootfs', size: '4G' }),
  'QMV-1': () => http('POST', '/nodes/pve-01/qemu/101/move_disk', { disk: 'scsi0', storage: 'local-lvm' }),
  'LMV-1': () => http('POST', '/nodes/pve-02/lxc/200/move_volume', { volume: 'rootfs', storage: 'local-lvm' }),

  'QDS-1': () => http('DELETE', '/nodes/pve-01/qemu/103'),
  'QDS-2': () => http('DELETE', '/nodes/pve-01/qemu/100'),
  'QDS-3': async () => {
    void sim.sim.holdLock(101, 'backup', 60_000);
    return task('DELETE', '/nodes/pve-01/qemu/101');
  },
  'QDS-4': async () => {
    await task('POST', '/nodes/pve-01/qemu/100/status/stop');
    await task('DELETE', '/nodes/pve-01/qemu/100');
    return { data: arr(await data('/pools?poolid=web'))[0] };
  },
  'LDS-1': async () => {
    void sim.sim.holdLock(201, 'backup', 60_000);
    return http('DELETE', '/nodes/pve-01/lxc/201');
  },
  'LDS-2': () => http('DELETE', '/nodes/pve-02/lxc/200'),
  'LDS-3': async () => {
    sim.sim.operatorEdit(201, { set: { protection: 1 } });
    void sim.sim.holdLock(201, 'backup', 60_000);
    return http('DELETE', '/nodes/pve-01/lxc/201');
  },
  'LDS-4': () => task('DELETE', '/nodes/pve-02/lxc/200?force=1'),

  'STO-1': async () => ({
    data: Object.fromEntries(
      arr(await data('/nodes/pve-01/storage')).map((s) => [s.storage, { ...s, content: String(s.content).split(',').sort() }]),
    ),
  }),
  'STO-2': async () => ({ data: await data('/nodes/pve-01/storage', LIMITED) }),
  'STO-3': () => http('GET', '/nodes/pve-01/storage?storage=nope'),
  'STO-4': async () => ({ data: await data('/nodes/pve-01/storage?content=rootdir') }),
  'CNT-1': async () => ({ data: await data('/nodes/pve-01/storage/local/content?content=vztmpl') }),
  'CNT-2': async () => ({ data: await data('/nodes/pve-01/storage/local-lvm/content?vmid=101') }),
  'CNT-3': async () => ({
    data: Object.fromEntries(
      arr(await data('/nodes/pve-01/storage/local-lvm/content'))
        .filter((v) => v.vmid === 200)
        .map((v) => [v.volid, v.content]),
    ),
  }),
  'CNT-4': async () => ({ data: { count: arr(await data('/nodes/pve-01/storage/local/content', sim.auditToken)).length } }),
  'CNT-5': async () => ({ data: await data('/nodes/pve-01/storage/local-lvm/content', sim.auditToken) }),
  'CNT-6': () => http('GET', '/nodes/pve-01/storage/local/content', undefined, LIMITED),
  'CNT-7': () => http('GET', '/nodes/pve-01/storage/nope/content'),
  'CNT-8': () => http('GET', '/nodes/pve-01/storage/local/content?content=nope'),

  'POL-1': async () => ({ data: await data('/pools') }),
  'POL-2': async () => ({ data: await data('/pools', LIMITED) }),
  'POL-3': async () => ({ data: await data('/pools?poolid=web', LIMITED) }),
  'POL-4': () => http('GET', '/pools/web', undefined, LIMITED),
  'POL-5': () => http('GET', '/pools?poolid=nope'),
  'POL-6': () => http('GET', '/pools?type=qemu'),
};

/** Compares an observation with a row's answer, in the notation the page describes. */
function expectAnswer(expected: string, observed: Observed): void {
  if (expected.startsWith('task ')) {
    expect(observed.http?.body ?? observed.http?.reason, 'expected a task, got a synchronous answer').toBeUndefined();
    expect(observed.task).toBe(expected.slice(5));
    return;
  }
  if (expected.startsWith('file ')) {
    expect(observed.http?.body?.message, 'the request failed').toBeUndefined();
    const lines = (observed.raw ?? '').split('\n\n')[0]?.split('\n') ?? [];
    const line = expected.slice(5);
    if (line.startsWith('!')) expect(lines.filter((l) => l.startsWith(`${line.slice(1)}:`))).toEqual([]);
    else expect(lines).toContain(line);
    return;
  }
  const m = /^(\d{3}) (.*)$/s.exec(expected);
  if (!m) throw new Error(`unreadable answer '${expected}'`);
  const status = Number(m[1]);
  const rest = m[2] as string;
  if (status === 200) {
    const want = JSON.parse(rest) as unknown;
    if (want !== null && typeof want === 'object') expect(observed.data).toMatchObject(want as object);
    else expect(observed.data).toEqual(want);
    return;
  }
  const res = observed.http;
  expect(res, `expected HTTP ${status}, got ${JSON.stringify(observed)}`).toBeDefined();
  expect(res?.status).toBe(status);
  if (status === 400) {
    expect(res?.body?.errors).toEqual(JSON.parse(rest));
  } else if (res?.body === undefined) {
    expect(res?.reason).toBe(rest);
  } else {
    expect(res.body.message?.replace(/\n$/, '')).toBe(rest);
  }
}

const ROWS = readRows();

describe('docs/proxmox-behaviour.md, row by row', () => {
  it('has a scenario for every row and a row for every scenario', () => {
    const ids = ROWS.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((id) => !SCENARIOS[id])).toEqual([]);
    expect(Object.keys(SCENARIOS).filter((id) => !ids.includes(id))).toEqual([]);
  });

  it.each(ROWS.map((r) => [`${r.id}: ${r.situation || '(plain)'}`, r] as const))('%s', async (_name, row) => {
    const scenario = SCENARIOS[row.id];
    if (!scenario) throw new Error(`no scenario for ${row.id}`);
    expectAnswer(row.expected, await scenario());
  });
});
