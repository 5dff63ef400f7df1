import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clusterFirewall } from '../../src/pve/sim/kinds/firewall/state.js';
import { haConfig } from '../../src/pve/sim/kinds/ha/state.js';
import { haManager } from '../../src/pve/sim/kinds/ha/manager.js';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { api, type ApiAnswer, CT_CONFIG, waitTask, WEB_CONFIG } from './helpers.js';
import { cloneScenarios } from './clone-scenarios.js';

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
    const m = /^\| ([A-Z]{2,3}-\d+) \|/.exec(line);
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
/** Admin on everything but guests other than 100: Pool.Allocate everywhere, nothing on /vms/101. */
const POOLS_ONLY = 'ops@pve!pools=s3cret';
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
      tokens: [
        { id: 'ops@pve!limited', secret: 's3cret', role: 'admin', vmids: [100], guestsOnly: true },
        { id: 'ops@pve!pools', secret: 's3cret', role: 'admin', vmids: [100] },
      ],
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

/** Runs a request that answers with a UPID; returns the task's exit status and every log line. */
async function taskWithLog(method: Method, path: string, form?: Record<string, string>): Promise<{ exitstatus: string; log: string[] }> {
  const res = await call(method, path, form);
  expect(res.status, `${method} ${path}: ${res.text}`).toBe(200);
  const upid = res.body?.data as string;
  const node = /^UPID:([^:]+):/.exec(upid)?.[1] as string;
  const status = await waitTask(sim, node, upid);
  const log = await call('GET', `/nodes/${node}/tasks/${encodeURIComponent(upid)}/log?limit=0`);
  return { exitstatus: String(status.exitstatus), log: arr(log.body?.data).map((l) => String(l.t)) };
}

/** Creates a guest with `start=1`: the create task's log, the start task it forked (awaited), the guest's status. */
async function createAndStart(
  type: 'qemu' | 'lxc',
  vmid: number,
  form: Record<string, string>,
): Promise<{ log: string[]; start: Record<string, unknown>; status: unknown }> {
  const created = await taskWithLog('POST', `/nodes/pve-01/${type}`, form);
  expect(created.exitstatus).toBe('OK');
  const startType = type === 'qemu' ? 'qmstart' : 'vzstart';
  const starts = arr(await data(`/nodes/pve-01/tasks?source=all&typefilter=${startType}&vmid=${vmid}`));
  expect(starts).toHaveLength(1);
  const start = await waitTask(sim, 'pve-01', starts[0]?.upid as string);
  const status = ((await data(`/nodes/pve-01/${type}/${vmid}/status/current`)) as Record<string, unknown>).status;
  return { log: created.log, start, status };
}

/** VM 101 with a NIC that is not VirtIO and has an MTU, which a start ignores with a warning. */
function e1000WithMtu(): void {
  sim.sim.operatorEdit(101, { set: { net0: 'e1000=BC:24:11:00:00:09,bridge=vmbr0,mtu=9000' } });
}

/**
 * Starts a stopped guest and sends a PUT of one key right after the UPID came back: the start's
 * exit status, and the key as it is in effect and as the merged config shows it.
 */
async function startThenPut(type: 'qemu' | 'lxc', vmid: number, node: string, key: string, value: string): Promise<Observed> {
  sim.sim.setTaskMs(100);
  const base = `/nodes/${node}/${type}/${vmid}`;
  const started = await call('POST', `${base}/status/start`);
  const put = await call('PUT', `${base}/config`, { [key]: value });
  expect(put.status, put.text).toBe(200);
  const start = await waitTask(sim, node, started.body?.data as string);
  const current = (await data(`${base}/config?current=1`)) as Record<string, unknown>;
  const merged = (await data(`${base}/config`)) as Record<string, unknown>;
  return { data: { start: start.exitstatus, current: current[key], merged: merged[key] } };
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

/** A directory index (`[{subdir}, …]`) as one comma-separated string, in its order. */
const subdirs = async (path: string, token?: string): Promise<Observed> => ({
  data: arr(await data(path, token))
    .map((e) => e.subdir)
    .join(','),
});
/** The config of a guest whose create task has just started (and runs on): its keys besides the digest. */
async function whileCreating(type: 'qemu' | 'lxc', vmid: number, form: Record<string, string>): Promise<Observed> {
  sim.sim.setTaskMs(60_000);
  const started = await call('POST', `/nodes/pve-01/${type}`, form);
  expect(started.status, started.text).toBe(200);
  const config = (await data(`/nodes/pve-01/${type}/${vmid}/config`)) as Record<string, unknown>;
  return { data: { keys: Object.keys(config).filter((key) => key !== 'digest'), lock: config.lock } };
}

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

/**
 * The cluster of the RHS and RHM rows: pve-01 with 8 CPUs and only vmbr0, `local` without disks,
 * `fast` on pve-02 only; the LVM volume groups `tight` (16 GiB, 4 MiB free) and `thick` (16 GiB,
 * 2 GiB free, VM 101's 1 GiB `scsi2` on it).
 */
const RHS_FIXTURE = {
  nodeCpus: { 'pve-01': 8 },
  bridges: { 'pve-01': ['vmbr0'] },
  storages: [
    'local-lvm',
    { storage: 'local', type: 'dir', content: ['iso', 'vztmpl', 'backup', 'snippets'] },
    { storage: 'fast', type: 'lvmthin', content: ['images', 'rootdir'], nodes: ['pve-02'] },
    { storage: 'tight', type: 'lvm', content: ['images', 'rootdir'], total: 16 * GIB, used: 16 * GIB - 4 * MIB },
    { storage: 'thick', type: 'lvm', content: ['images', 'rootdir'], total: 16 * GIB, used: 14 * GIB },
  ],
  guests: [
    {
      vmid: 101,
      type: 'qemu',
      node: 'pve-01',
      config:
        'cores: 2\nname: app\nnet0: virtio=BC:24:11:00:00:01,bridge=vmbr0\nscsi0: local-lvm:vm-101-disk-0,size=8G\nscsi2: thick:vm-101-disk-0,size=1G\n',
    },
    { vmid: 110, type: 'qemu', node: 'pve-01', config: 'name: tpl\nscsi0: local-lvm:base-110-disk-0,size=2G\ntemplate: 1\n' },
    { vmid: 201, type: 'lxc', node: 'pve-01', config: CT_CONFIG.replace('db-01', 'db-02').replace('vm-200-', 'vm-201-') },
  ],
};

/** Runs a scenario on the RHS rows' cluster instead of the shared one. */
async function onRehearsalCluster(scenario: () => Promise<Observed>): Promise<Observed> {
  const shared = sim;
  const own = await startSimulator({ port: 0, taskMs: 2, fixture: RHS_FIXTURE });
  sim = own;
  try {
    return await scenario();
  } finally {
    sim = shared;
    await own.close();
  }
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
  'API-6': async () => {
    const id = 'ops@pve!rotated';
    sim.sim.tokens.add({ id, secret: 'first', role: 'audit' });
    expect((await call('GET', '/version', undefined, `${id}=first`)).status).toBe(200);
    sim.sim.tokens.add({ id, secret: 'second', role: 'audit' });
    return http('GET', '/version', undefined, `${id}=first`);
  },
  'API-7': async () => {
    // The headers only: a compressed body is not JSON to read.
    const headersOf = async (path: string): Promise<Record<string, string | string[] | undefined>> => {
      const res = await request(`${sim.url}/api2/json${path}`, {
        headers: { authorization: `PVEAPIToken=${sim.token}`, 'accept-encoding': 'gzip' },
      });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
      return res.headers;
    };
    const large = { headers: await headersOf('/cluster/resources') };
    const small = { headers: await headersOf('/version') };
    const { expires, date } = large.headers;
    return {
      data: {
        cacheControl: large.headers['cache-control'],
        pragma: large.headers.pragma,
        expiresAtAnswer: Math.abs(Date.parse(String(expires)) - Date.parse(String(date))) <= 1000,
        over1KiB: large.headers['content-encoding'] ?? 'none',
        under1KiB: small.headers['content-encoding'] ?? 'none',
      },
    };
  },
  'VER-1': async () => ({ data: await data('/version') }),

  'NOD-1': async () => ({ data: await data('/nodes') }),
  'NOD-2': async () => ({ data: { statistics: arr(await data('/nodes', LIMITED)).some((n) => 'maxcpu' in n || 'uptime' in n) } }),
  'NOD-3': async () => ({ data: await data('/nodes/pve-01/status', sim.auditToken) }),
  'NOD-4': () => http('GET', '/nodes/pve-01/status', undefined, LIMITED),
  'CLS-1': async () => ({ data: await data('/cluster/status', sim.auditToken) }),
  'CLS-2': () => http('GET', '/cluster/status', undefined, LIMITED),
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
  'RES-6': async () => {
    const listed = arr(await data('/cluster/resources?type=vm'));
    const uptime = (vmid: number): unknown => listed.find((l) => l.vmid === vmid)?.uptime;
    const running = uptime(100);
    return { data: { running: Number.isInteger(running) && (running as number) >= 0 ? 'whole seconds' : running, stopped: uptime(101) } };
  },
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
    e1000WithMtu();
    const warned = await call('POST', '/nodes/pve-01/qemu/101/status/start');
    await waitTask(sim, 'pve-01', warned.body?.data as string);
    return { data: await data('/nodes/pve-01/tasks?statusfilter=warning') };
  },
  'CTS-1': async () => {
    await finishedStop();
    sim.sim.setTaskMs(60_000);
    await call('POST', '/nodes/pve-01/qemu/100/status/stop');
    const tasks = arr(await data('/cluster/tasks', sim.auditToken)).filter((t) => t.node === 'pve-01');
    return {
      data: tasks.map(({ type, id, user, tokenid, status, saved, ...rest }) => ({
        type,
        id,
        user,
        tokenid,
        ...(status !== undefined ? { status, saved } : {}),
        pid: 'pid' in rest,
        pstart: 'pstart' in rest,
      })),
    };
  },
  'CTS-2': async () => {
    const own = await call('POST', '/nodes/pve-01/qemu/100/status/stop', undefined, LIMITED);
    await waitTask(sim, 'pve-01', own.body?.data as string);
    return { data: await data('/cluster/tasks', LIMITED) };
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
  'QDX-1': () => subdirs('/nodes/pve-01/qemu/999', LIMITED),
  'QSX-1': () => subdirs('/nodes/pve-01/qemu/101/status', LIMITED),
  'QSX-2': () => http('GET', '/nodes/pve-01/qemu/999/status'),
  'LDX-1': () => subdirs('/nodes/pve-02/lxc/200', LIMITED),
  'LDX-2': () => http('GET', '/nodes/pve-01/lxc/999'),
  'LSX-1': () => subdirs('/nodes/pve-02/lxc/200/status', LIMITED),
  'LST-1': async () => ({ data: await data('/nodes/pve-02/lxc/200/status/current') }),
  'QST-2': async () => {
    await call('PUT', '/nodes/pve-01/qemu/101/config', { serial0: 'socket' });
    const without = (await data('/nodes/pve-01/qemu/100/status/current')) as Record<string, unknown>;
    const withSerial = (await data('/nodes/pve-01/qemu/101/status/current')) as Record<string, unknown>;
    return { data: { without: 'serial' in without, with: withSerial.serial } };
  },
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

  'IMP-1': async () => {
    await call('PUT', '/nodes/pve-01/qemu/101/config', { cipassword: 's3cret-pw' });
    return { data: byKey(await data('/nodes/pve-01/qemu/101/pending')).cipassword };
  },
  'ONB-1': async () => {
    const [options, rules, ipset, aliases] = await Promise.all(['options', 'rules', 'ipset', 'aliases'].map((s) => data(`${FW}/${s}`)));
    return { data: { options: Object.keys(options as object), rules, ipset, aliases } };
  },
  'IMP-2': async () => {
    sim.sim.addGuest({
      vmid: 202,
      type: 'lxc',
      node: 'pve-02',
      config: `${CT_CONFIG.replace('db-01', 'db-03')}lxc.apparmor.profile: unconfined\n`,
    });
    const entries = arr(await data('/nodes/pve-02/lxc/202/pending'));
    const config = (await data('/nodes/pve-02/lxc/202/config')) as Record<string, unknown>;
    return { data: { raw: entries.filter((e) => String(e.key).startsWith('lxc')), configShowsLxc: Array.isArray(config.lxc) } };
  },
  'IMP-3': async () => {
    void sim.sim.holdLock(100, 'backup', 60_000);
    return { data: byKey(await data('/nodes/pve-01/qemu/100/pending')).lock };
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
  'QUP-17': async () => ({ data: await taskWithLog('POST', '/nodes/pve-01/qemu/100/config', { delete: 'balloon' }) }),
  'QUP-18': () => task('POST', '/nodes/pve-01/qemu/100/config', { delete: 'scsi0' }),
  'QUP-19': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/config', { tags: 'Beta,alpha beta' }),
  'QUP-20': () => http('PUT', '/nodes/pve-01/qemu/101/config', { sshkeys: 'ssh-ed25519 AAAA' }),
  'QUP-21': () => http('PUT', '/nodes/pve-01/qemu/101/config', { balloon: '4096' }),
  'QUP-22': () => http('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4' }, sim.auditToken),
  'QUP-23': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/config', { delete: 'scsi0' }),
  'QUP-24': () => http('PUT', '/nodes/pve-01/qemu/101/config', { boot: 'order=scsi7;net0' }),
  'QUP-25': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/config', { tags: 'web\nProd' }),
  'QUP-26': () => http('PUT', '/nodes/pve-01/qemu/101/config', { nameserver: '1.1.1.1\n9.9.9.9' }),
  'QUP-27': () => file(101, 'POST', '/nodes/pve-01/qemu/101/config', { tags: 'web\nProd' }),

  'QUP-28': async () => {
    sim.sim.setTaskMs(60_000);
    const posted = await call('POST', '/nodes/pve-01/qemu/101/config', { cores: '3' });
    const config = (await data('/nodes/pve-01/qemu/101/config?current=1')) as Record<string, unknown>;
    const status = (await data(`/nodes/pve-01/tasks/${encodeURIComponent(posted.body?.data as string)}/status`)) as Record<string, unknown>;
    return { data: { cores: config.cores, task: status.status } };
  },
  'QUP-29': async () => {
    sim.sim.setTaskMs(200);
    const posted = await call('POST', '/nodes/pve-01/qemu/101/config', { cores: '3' });
    const put = await call('PUT', '/nodes/pve-01/qemu/101/config', { cores: '4' });
    expect(put.status, put.text).toBe(200);
    const post = await waitTask(sim, 'pve-01', posted.body?.data as string);
    const config = (await data('/nodes/pve-01/qemu/101/config?current=1')) as Record<string, unknown>;
    return { data: { post: post.exitstatus, cores: config.cores } };
  },

  'QUP-30': () => startThenPut('qemu', 101, 'pve-01', 'cores', '4'),

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
  'LUP-13': () => file(201, 'PUT', '/nodes/pve-01/lxc/201/config', { tags: 'web\nProd' }),
  'LUP-14': () => file(201, 'PUT', '/nodes/pve-01/lxc/201/config', { searchdomain: 'example.com\nexample.net' }),

  'LUP-15': () => startThenPut('lxc', 201, 'pve-01', 'ostype', 'ubuntu'),

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
  'QCR-13': () => file(180, 'POST', '/nodes/pve-01/qemu', { ...CREATE_VM, tags: 'web\nProd' }),
  'QCR-14': async () => {
    const seen = await createAndStart('qemu', 180, { ...CREATE_VM, start: '1' });
    return { data: { ...seen, log: seen.log.find((l) => /start/i.test(l)) } };
  },
  'QCR-15': () => whileCreating('qemu', 180, CREATE_VM),
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
  'LCR-14': () => whileCreating('lxc', 181, CREATE_CT),

  'LCR-13': async () => {
    const seen = await createAndStart('lxc', 181, { ...CREATE_CT, start: '1' });
    return { data: { ...seen, log: seen.log.filter((l) => /start/i.test(l)) } };
  },

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
  'QPW-9': async () => {
    e1000WithMtu();
    const started = await taskWithLog('POST', '/nodes/pve-01/qemu/101/status/start');
    return { data: { exitstatus: started.exitstatus, warning: started.log.find((l) => l.startsWith('WARN: ')) } };
  },
  'QPW-10': async () => {
    await call('PUT', '/nodes/pve-01/qemu/100/config', { cores: '4' });
    const rebooted = await task('POST', '/nodes/pve-01/qemu/100/status/reboot');
    const starts = arr(await data('/nodes/pve-01/tasks?source=all&typefilter=qmstart'));
    const restart = await waitTask(sim, 'pve-01', starts[0]?.upid as string);
    const status = (await data('/nodes/pve-01/qemu/100/status/current')) as Record<string, unknown>;
    const config = (await data('/nodes/pve-01/qemu/100/config?current=1')) as Record<string, unknown>;
    return { data: { reboot: rebooted.task, restart, status: status.status, cores: config.cores } };
  },
  'QPW-11': () => http('POST', '/nodes/pve-01/qemu/101/status/reboot'),
  'QPW-12': () => http('POST', '/nodes/pve-01/qemu/999/status/reboot'),
  'QPW-13': async () => {
    void sim.sim.holdLock(100, 'backup', 60_000);
    return task('POST', '/nodes/pve-01/qemu/100/status/reboot');
  },
  'LPW-1': () => http('POST', '/nodes/pve-02/lxc/200/status/start'),
  'LPW-2': () => http('POST', '/nodes/pve-01/lxc/201/status/shutdown'),
  'LPW-3': () => task('POST', '/nodes/pve-01/lxc/999/status/start'),
  'LPW-4': async () => {
    void sim.sim.holdLock(201, 'mounted', 60_000);
    return task('POST', '/nodes/pve-01/lxc/201/status/start');
  },
  'LPW-5': () => http('POST', '/nodes/pve-02/lxc/200/status/stop', undefined, sim.auditToken),

  'LPW-6': async () => {
    await call('PUT', '/nodes/pve-02/lxc/200/config', { ostype: 'ubuntu' });
    const rebooted = await task('POST', '/nodes/pve-02/lxc/200/status/reboot');
    const tasks = arr(await data('/nodes/pve-02/tasks?source=all')).map((t) => t.type);
    const status = (await data('/nodes/pve-02/lxc/200/status/current')) as Record<string, unknown>;
    const config = (await data('/nodes/pve-02/lxc/200/config?current=1')) as Record<string, unknown>;
    return { data: { reboot: rebooted.task, tasks, status: status.status, ostype: config.ostype } };
  },
  'LPW-7': () => http('POST', '/nodes/pve-01/lxc/201/status/reboot'),
  'LPW-8': () => http('POST', '/nodes/pve-02/lxc/200/status/reboot', undefined, sim.auditToken),

  'QRS-1': () => task('PUT', '/nodes/pve-01/qemu/101/resize', { disk: 'scsi0', size: '16G' }),
  'QRS-2': () => file(101, 'PUT', '/nodes/pve-01/qemu/101/resize', { disk: 'scsi0', size: '+8G' }),
  'QRS-3': () => task('PUT', '/nodes/pve-01/qemu/101/resize', { disk: 'ide2', size: '+1G' }),
  'LRS-1': () => http('PUT', '/nodes/pve-01/lxc/201/resize', { disk: 'rootfs', size: '8G' }),
  'LRS-2': () => http('PUT', '/nodes/pve-01/lxc/201/resize', { disk: 'rootfs', size: '4G' }),
  'QMV-1': () => http('POST', '/nodes/pve-01/qemu/101/move_disk', { disk: 'scsi0', storage: 'local-lvm' }),
  'QMV-2': () => http('POST', '/nodes/pve-01/qemu/101/move_disk', { disk: 'scsi0' }),
  'QMV-3': () => http('POST', '/nodes/pve-01/qemu/101/move_disk', { disk: 'scsi0', storage: 'local', 'target-vmid': '100' }),
  'LMV-1': () => http('POST', '/nodes/pve-02/lxc/200/move_volume', { volume: 'rootfs', storage: 'local-lvm' }),

  'LMV-2': () => http('POST', '/nodes/pve-02/lxc/200/move_volume', { volume: 'rootfs' }),

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
  'POL-7': async () => {
    const created = await call('POST', '/pools', { poolid: 'apps', comment: 'Apps' });
    expect(created.body?.data, created.text).toBeNull();
    return { data: await data('/pools?poolid=apps') };
  },
  'POL-8': () => http('POST', '/pools', { poolid: 'web' }),
  'POL-9': () => http('POST', '/pools', { poolid: '1apps' }),
  'POL-10': () => http('POST', '/pools', { poolid: 'apps' }, LIMITED),
  'POL-11': async () => {
    await call('POST', '/pools', { poolid: 'db' });
    return http('PUT', '/pools', { poolid: 'db', vms: '100' });
  },
  'POL-12': async () => {
    await call('POST', '/pools', { poolid: 'db' });
    const moved = await call('PUT', '/pools', { poolid: 'db', vms: '100', 'allow-move': '1' });
    expect(moved.status, moved.text).toBe(200);
    return { data: await poolMembers('web', 'db') };
  },
  'POL-13': () => http('PUT', '/pools', { poolid: 'web', vms: '101', delete: '1' }),
  'POL-14': () => http('PUT', '/pools', { poolid: 'web', vms: '100' }),
  'POL-15': async () => {
    const put = await call('PUT', '/pools', { poolid: 'web', comment: 'Frontends' });
    expect(put.status, put.text).toBe(200);
    return { data: await data('/pools') };
  },
  'POL-16': () => http('PUT', '/pools', { poolid: 'web', vms: '101' }, POOLS_ONLY),
  'POL-17': async () => {
    await call('POST', '/pools', { poolid: 'db' });
    const put = await call('PUT', '/pools', { poolid: 'db', vms: '101,100' });
    expect(put.body?.message).toContain("VM 100 belongs already to pool 'web'");
    return { data: await poolMembers('web', 'db') };
  },
  'POL-18': () => http('PUT', '/pools/web', { vms: '100' }),
  'POL-19': () => http('DELETE', '/pools?poolid=web'),
  'POL-20': async () => {
    await call('POST', '/pools', { poolid: 'apps' });
    const deleted = await call('DELETE', '/pools?poolid=apps');
    expect(deleted.status, deleted.text).toBe(200);
    return http('GET', '/pools?poolid=apps');
  },
  'POL-21': async () => ({ data: await data('/access/permissions?path=/pool', LIMITED) }),
  'BAK-1': async () => {
    await backupJob('nightly', { vmid: '100,101', 'prune-backups': 'keep-last=3' });
    return { data: await data('/cluster/backup') };
  },
  'BAK-2': () => http('GET', '/cluster/backup', undefined, LIMITED),
  'BAK-3': () => http('GET', '/cluster/backup/nope'),
  'BAK-4': async () => {
    await backupJob('nightly', { vmid: '100' });
    const job = (await data('/cluster/backup/nightly')) as Record<string, unknown>;
    return { data: { digest: job.digest ?? null } };
  },
  'BAK-5': async () => {
    const created = await call('POST', '/cluster/backup', { schedule: 'daily', vmid: '100' });
    expect(created.status, created.text).toBe(200);
    const id = String(arr(await data('/cluster/backup'))[0]?.id);
    return { data: { uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id) } };
  },
  'BAK-6': async () => {
    await backupJob('nightly', { vmid: '100' });
    return http('POST', '/cluster/backup', { id: 'nightly', schedule: 'daily', vmid: '101' });
  },
  'BAK-7': () => http('POST', '/cluster/backup', { id: 'nightly', schedule: 'daily', vmid: '100', tmpdir: '/var/tmp' }),
  'BAK-8': () => http('POST', '/cluster/backup', { id: 'nightly', schedule: 'daily', vmid: '100' }, sim.auditToken),
  'BAK-9': () => http('POST', '/cluster/backup', { id: 'nightly', vmid: '100' }),
  'BAK-10': () => http('POST', '/cluster/backup', { id: 'nightly', schedule: 'daily', pool: 'web' }, POOLS_ONLY),
  'BAK-11': async () => {
    await backupJob('nightly', { exclude: '101' });
    const job = (await data('/cluster/backup/nightly')) as Record<string, unknown>;
    return { data: { all: job.all, exclude: job.exclude, vmid: job.vmid ?? null } };
  },
  'BAK-12': async () => {
    await backupJob('nightly', { exclude: '100' });
    const put = await call('PUT', '/cluster/backup/nightly', { vmid: '101' });
    expect(put.status, put.text).toBe(200);
    const job = (await data('/cluster/backup/nightly')) as Record<string, unknown>;
    return { data: { vmid: job.vmid, all: job.all ?? null, exclude: job.exclude ?? null } };
  },
  'BAK-13': () => http('PUT', '/cluster/backup/nope', { schedule: 'daily' }),
  'BAK-14': async () => {
    await backupJob('nightly', { vmid: '100' });
    return http('PUT', '/cluster/backup/nightly', {});
  },
  'BAK-15': async () => {
    await backupJob('nightly', { vmid: '100' });
    const deleted = await call('DELETE', '/cluster/backup/nightly');
    expect(deleted.status, deleted.text).toBe(200);
    return http('GET', '/cluster/backup/nightly');
  },
  'BAK-16': async () => {
    await backupJob('nightly', { vmid: '100,101' });
    await backupJob('solo', { vmid: '101' });
    const destroyed = await task('DELETE', '/nodes/pve-01/qemu/101?purge=1');
    expect(destroyed.task).toBe('OK');
    const ids = arr(await data('/cluster/backup')).map((j) => String(j.id));
    const nightly = (await data('/cluster/backup/nightly')) as Record<string, unknown>;
    return { data: { nightly: nightly.vmid, solo: ids.includes('solo') } };
  },
  'HA-1': () => http('GET', '/cluster/ha/resources', undefined, LIMITED),
  'HA-2': async () => {
    const created = await call('POST', '/cluster/ha/resources', { sid: 'vm:100', state: 'started', max_restart: '2' });
    expect(created.body?.data, created.text).toBeNull();
    const read = (await data('/cluster/ha/resources/vm:100')) as Record<string, unknown>;
    return { data: { ...read, digest: /^[0-9a-f]{40}$/.test(String(read.digest)) ? '(40 hex)' : read.digest } };
  },
  'HA-3': async () => {
    const created = await call('POST', '/cluster/ha/resources', { sid: '200' });
    expect(created.status, created.text).toBe(200);
    return { data: await data('/cluster/ha/resources/ct:200') };
  },
  'HA-4': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:100' });
    return http('POST', '/cluster/ha/resources', { sid: 'vm:100' });
  },
  'HA-5': () => http('POST', '/cluster/ha/resources', { sid: 'vm:100', group: 'g1' }),
  'HA-6': () => http('POST', '/cluster/ha/resources', { sid: 'vm:999' }),
  'HA-7': () => http('POST', '/cluster/ha/resources', { sid: 'vm:200' }),
  'HA-8': () => http('POST', '/cluster/ha/resources', { sid: 'vm:100' }, sim.auditToken),
  'HA-9': () => http('GET', '/cluster/ha/resources/vm:101'),
  'HA-10': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:100' });
    const before = (await data('/cluster/ha/resources/vm:100')) as Record<string, unknown>;
    await call('POST', '/cluster/ha/resources', { sid: 'ct:200' });
    return http('PUT', '/cluster/ha/resources/vm:100', { state: 'stopped', digest: String(before.digest) });
  },
  'HA-11': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:100', state: 'started', comment: 'primary db' });
    const updated = await call('PUT', '/cluster/ha/resources/vm:100', { max_restart: '3', delete: 'comment' });
    expect(updated.status, updated.text).toBe(200);
    return { data: Object.keys((await data('/cluster/ha/resources/vm:100')) as object).sort() };
  },
  'HA-12': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:100' });
    haConfig(sim.sim).errorState.add('vm:100');
    return http('PUT', '/cluster/ha/resources/vm:100', { state: 'started' });
  },
  'HA-13': () => http('DELETE', '/cluster/ha/resources/vm:101'),
  'HA-14': () => http('POST', '/cluster/ha/resources', { sid: 'not a sid' }),
  'HA-15': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:100', state: 'disabled' });
    await call('POST', '/cluster/ha/resources', { sid: 'ct:200' });
    const listed = arr(await data('/cluster/resources?type=vm'));
    return { data: listed.map((e) => ({ vmid: e.vmid, hastate: e.hastate ?? null })) };
  },
  'FW-1': () => http('GET', '/nodes/pve-01/qemu/101/firewall/rules', undefined, LIMITED),
  'FW-2': () => http('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT' }, sim.auditToken),
  'FW-3': async () => {
    const created = await call('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT', proto: 'tcp', dport: '22' });
    expect(created.body?.data, created.text).toBeNull();
    return { data: arr(await data(`${FW}/rules`)).map(({ digest: _digest, ...rule }) => rule) };
  },
  'FW-4': async () => {
    await call('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT', comment: 'first' });
    await call('POST', `${FW}/rules`, { type: 'in', action: 'DROP', comment: 'second', pos: '1' });
    return { data: arr(await data(`${FW}/rules`)).map((r) => r.comment) };
  },
  'FW-5': async () => {
    await call('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT' });
    const stale = String(arr(await data(`${FW}/rules`))[0]?.digest);
    await call('POST', `${FW}/rules`, { type: 'in', action: 'DROP' });
    const third = await call('POST', `${FW}/rules`, { type: 'out', action: 'ACCEPT', digest: stale.replace(/./, 'f') });
    expect(third.status, third.text).toBe(200);
    return { data: arr(await data(`${FW}/rules`)).length - 1 };
  },
  'FW-6': async () => fwStale('PUT', `${FW}/rules/0`, { comment: 'x' }),
  'FW-7': async () => fwStale('DELETE', `${FW}/rules/0`),
  'FW-8': async () => {
    await fwRules('a', 'b');
    const before = arr(await data(`${FW}/rules`));
    await call('PUT', `${FW}/rules/0`, { moveto: '2' });
    const after = arr(await data(`${FW}/rules`));
    return { data: { same: new Set(before.map((r) => r.digest)).size === 1, changed: before[0]?.digest !== after[0]?.digest } };
  },
  'FW-9': async () => {
    await fwRules('a', 'b', 'c');
    const moved = await call('PUT', `${FW}/rules/0`, { moveto: '2', digest: String(arr(await data(`${FW}/rules`))[0]?.digest) });
    expect(moved.status, moved.text).toBe(200);
    return { data: arr(await data(`${FW}/rules`)).map((r) => r.comment) };
  },
  'FW-10': () => http('GET', `${FW}/rules/5`),
  'FW-11': () => http('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT', source: '+admins' }),
  'FW-12': () => http('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT', dport: '22' }),
  'FW-13': () => http('POST', '/nodes/pve-01/lxc/201/firewall/rules', { type: 'forward', action: 'ACCEPT' }),
  'FW-14': async () => {
    const set = await call('PUT', `${FW}/options`, { enable: '1', policy_in: 'DROP' });
    expect(set.status, set.text).toBe(200);
    const read = (await data(`${FW}/options`)) as Record<string, unknown>;
    return { data: { ...read, digest: /^[0-9a-f]{40}$/.test(String(read.digest)) ? '(40 hex)' : read.digest } };
  },
  'FW-15': async () => {
    const stale = String(((await data(`${FW}/options`)) as Record<string, unknown>).digest);
    await call('PUT', `${FW}/options`, { enable: '1' });
    return http('PUT', `${FW}/options`, { policy_in: 'DROP', digest: stale });
  },
  'FW-16': async () => {
    await call('POST', `${FW}/ipset`, { name: 'admins' });
    await call('POST', `${FW}/ipset/admins`, { cidr: '10.1.0.5/32' });
    const added = await call('POST', `${FW}/ipset/admins`, { cidr: '10.0.0.0/24' });
    expect(added.status, added.text).toBe(200);
    return { data: arr(await data(`${FW}/ipset/admins`)).map((e) => e.cidr) };
  },
  'FW-17': async () => {
    await call('POST', `${FW}/ipset`, { name: 'admins' });
    await call('POST', `${FW}/ipset/admins`, { cidr: '10.0.0.0/24' });
    return http('DELETE', `${FW}/ipset/admins`);
  },
  'FW-18': async () => {
    await call('POST', `${FW}/ipset`, { name: 'admins' });
    await call('POST', `${FW}/ipset/admins`, { cidr: '10.1.0.5' });
    const stale = String(arr(await data(`${FW}/ipset/admins`))[0]?.digest);
    await call('POST', `${FW}/ipset/admins`, { cidr: '10.0.0.0/24' });
    return http('PUT', `${FW}/ipset/admins/10.1.0.5`, { comment: 'bastion', digest: stale });
  },
  'FW-19': async () => {
    await call('POST', `${FW}/aliases`, { name: 'bastion', cidr: '10.1.0.5' });
    return http('POST', `${FW}/aliases`, { name: 'Bastion', cidr: '10.1.0.6' });
  },
  'FW-20': async () => {
    await fwRules('a');
    const destroyed = await task('DELETE', '/nodes/pve-01/qemu/101');
    expect(destroyed.task).toBe('OK');
    return { data: await data(`${FW}/rules`) };
  },
  'FW-21': async () => {
    const ct = '/nodes/pve-01/lxc/201/firewall/rules';
    const added = await call('POST', ct, { type: 'in', action: 'ACCEPT', comment: 'a' });
    expect(added.status, added.text).toBe(200);
    const destroyed = await task('DELETE', '/nodes/pve-01/lxc/201');
    expect(destroyed.task).toBe('OK');
    return { data: await data(ct) };
  },
  'HAP-1': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:101' });
    const started = await taskWithLog('POST', '/nodes/pve-01/qemu/101/status/start');
    const current = (await data('/nodes/pve-01/qemu/101/status/current')) as Record<string, unknown>;
    const log = started.log.filter((l) => l.startsWith('Requesting'));
    return { data: { exitstatus: started.exitstatus, log, status: current.status, ha: current.ha } };
  },
  'HAP-2': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:101' });
    expect((await taskWithLog('POST', '/nodes/pve-01/qemu/101/status/start')).exitstatus).toBe('OK');
    haManager(sim.sim).tick();
    const current = (await data('/nodes/pve-01/qemu/101/status/current')) as Record<string, unknown>;
    const listed = arr(await data('/cluster/resources?type=vm')).find((e) => e.vmid === 101);
    return { data: { status: current.status, ha: current.ha, hastate: listed?.hastate } };
  },
  'HAP-3': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:100' });
    const res = await call('POST', '/nodes/pve-01/qemu/100/status/shutdown', { timeout: '30' });
    const upid = String(res.body?.data);
    await waitTask(sim, 'pve-01', upid);
    const before = ((await data('/nodes/pve-01/qemu/100/status/current')) as Record<string, unknown>).status;
    haManager(sim.sim).tick();
    const after = ((await data('/nodes/pve-01/qemu/100/status/current')) as Record<string, unknown>).status;
    const configured = ((await data('/cluster/ha/resources/vm:100')) as Record<string, unknown>).state;
    return { data: { task: upid.split(':')[5], before, after, configured } };
  },
  'HAP-4': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:100' });
    return http('POST', '/nodes/pve-01/qemu/100/status/stop', { 'overrule-shutdown': '1' });
  },
  'HAP-5': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'ct:200' });
    const stopped = await taskWithLog('POST', '/nodes/pve-02/lxc/200/status/stop');
    const status = ((await data('/nodes/pve-02/lxc/200/status/current')) as Record<string, unknown>).status;
    return { data: { exitstatus: stopped.exitstatus, log: stopped.log.filter((l) => l.startsWith('Requesting')), status } };
  },
  'HAP-6': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:101' });
    haConfig(sim.sim).errorState.add('vm:101');
    return task('POST', '/nodes/pve-01/qemu/101/status/start');
  },
  'HAP-7': async () => {
    await call('POST', '/cluster/ha/resources', { sid: 'vm:101', state: 'ignored' });
    const res = await call('POST', '/nodes/pve-01/qemu/101/status/start');
    const upid = String(res.body?.data);
    await waitTask(sim, 'pve-01', upid);
    const current = (await data('/nodes/pve-01/qemu/101/status/current')) as Record<string, unknown>;
    return { data: { task: upid.split(':')[5], status: current.status, ha: current.ha } };
  },
  'RST-1': () => {
    sim.sim.ignoresShutdown.add(100);
    return task('POST', '/nodes/pve-01/qemu/100/status/shutdown', { timeout: '5' });
  },
  'RST-2': async () => {
    sim.sim.ignoresShutdown.add(100);
    const done = await taskWithLog('POST', '/nodes/pve-01/qemu/100/status/shutdown', { timeout: '5', forceStop: '1' });
    const status = ((await data('/nodes/pve-01/qemu/100/status/current')) as Record<string, unknown>).status;
    return { data: { exitstatus: done.exitstatus, log: done.log.filter((l) => l.startsWith('VM still')), status } };
  },
  'RST-3': () => {
    sim.sim.ignoresShutdown.add(200);
    return task('POST', '/nodes/pve-02/lxc/200/status/shutdown', { timeout: '5' });
  },
  'RST-4': async () => {
    expect((await call('PUT', '/nodes/pve-01/qemu/100/config', { memory: '4096' })).status).toBe(200);
    const queued = byKey(await data('/nodes/pve-01/qemu/100/pending')).memory?.pending;
    expect((await taskWithLog('POST', '/nodes/pve-01/qemu/100/status/shutdown')).exitstatus).toBe('OK');
    expect((await taskWithLog('POST', '/nodes/pve-01/qemu/100/status/start')).exitstatus).toBe('OK');
    const entries = arr(await data('/nodes/pve-01/qemu/100/pending'));
    const after = entries.find((e) => e.key === 'memory')?.value;
    return { data: { queued, after, pending: entries.filter((e) => e.pending !== undefined || e.delete !== undefined).map((e) => e.key) } };
  },
  ...cloneScenarios({ sim: () => sim, call, http, task, file, data }),
  'RHS-1': () => onRehearsalCluster(() => http('PUT', '/nodes/pve-01/qemu/101/config', { scsi1: 'local:4' })),
  'RHS-2': () => onRehearsalCluster(() => http('PUT', '/nodes/pve-01/qemu/101/config', { scsi1: 'fast:4' })),
  'RHS-3': () => onRehearsalCluster(() => http('PUT', '/nodes/pve-01/lxc/201/config', { mp0: 'local:4,mp=/data' })),
  'RHS-4': () =>
    onRehearsalCluster(async () => {
      expect((await call('PUT', '/nodes/pve-01/qemu/101/config', { cores: '4', sockets: '4' })).status).toBe(200);
      return task('POST', '/nodes/pve-01/qemu/101/status/start');
    }),
  'RHS-5': () =>
    onRehearsalCluster(async () => {
      expect((await call('PUT', '/nodes/pve-01/qemu/101/config', { net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr1' })).status).toBe(200);
      return task('POST', '/nodes/pve-01/qemu/101/status/start');
    }),
  'RHS-6': () => onRehearsalCluster(async () => ({ data: arr(await data('/nodes/pve-01/storage')).filter((s) => s.storage === 'fast') })),
  'RHS-7': () => onRehearsalCluster(async () => ({ data: await data('/nodes/pve-01/network?type=any_bridge', sim.auditToken) })),
  'RHS-8': () => onRehearsalCluster(() => http('POST', '/nodes/pve-01/qemu/101/move_disk', { disk: 'scsi0', storage: 'local' })),
  'RHS-9': () => onRehearsalCluster(() => http('POST', '/nodes/pve-01/qemu/101/move_disk', { disk: 'scsi0', storage: 'fast' })),
  'RHS-10': () => onRehearsalCluster(() => http('POST', '/nodes/pve-01/lxc', { vmid: '181', ostemplate: TEMPLATE, rootfs: 'fast:8' })),
  'RHS-11': () => onRehearsalCluster(() => http('POST', '/nodes/pve-01/qemu/110/clone', { newid: '150', full: '1', storage: 'fast' })),
  'RHS-12': () => onRehearsalCluster(async () => ({ data: await data('/nodes/pve-01/status', sim.auditToken) })),
  'RHS-13': () => onRehearsalCluster(() => task('POST', '/nodes/pve-01/qemu', { vmid: '150', scsi0: 'fast:8' })),
  'RHM-1': () => onRehearsalCluster(() => http('PUT', '/nodes/pve-01/qemu/101/config', { scsi1: 'tight:8' })),
  'RHM-2': () => onRehearsalCluster(() => http('PUT', '/nodes/pve-01/qemu/101/config', { scsi1: 'thick:4' })),
  'RHM-3': () => onRehearsalCluster(() => task('PUT', '/nodes/pve-01/qemu/101/resize', { disk: 'scsi2', size: '+4G' })),
  'RHM-4': () =>
    onRehearsalCluster(async () => {
      // 1 GiB fits and takes its space: of the 2 GiB free, 1 GiB (256 extents) is left.
      expect((await call('PUT', '/nodes/pve-01/qemu/101/config', { scsi1: 'thick:1' })).status).toBe(200);
      return http('PUT', '/nodes/pve-01/qemu/101/config', { scsi3: 'thick:2' });
    }),
  'RHM-5': () =>
    onRehearsalCluster(async () => ({
      data: (await call('PUT', '/nodes/pve-01/qemu/101/config', { scsi1: 'local-lvm:1000' })).body?.data,
    })),
  'RHM-6': () =>
    onRehearsalCluster(async () => ({
      data: arr(await data('/cluster/resources?type=storage', sim.auditToken)).filter(
        (s) => s.storage === 'fast' || s.id === 'storage/pve-01/thick',
      ),
    })),
  'RHK-1': () => http('POST', '/pools', { poolid: 'team/web' }),
  'RHK-2': () => http('POST', '/cluster/backup', { id: 'nightly', schedule: 'daily', pool: 'nope' }),
  'RHK-3': () => http('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT', macro: 'HTTPX' }),
  'RHK-4': async () => {
    clusterFirewall(sim.sim).ipsets.set('mgmt', { comment: 'management', entries: [{ cidr: '10.9.0.0/24' }] });
    const list = arr(await data('/cluster/firewall/ipset', sim.auditToken));
    return { data: list.map(({ digest, ...rest }) => (typeof digest === 'string' && digest.length === 40 ? rest : { digest })) };
  },
  'RHK-5': async () => {
    clusterFirewall(sim.sim).ipsets.set('mgmt', { entries: [] });
    await call('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT', source: '+guest/mgmt' });
    const refused = await call('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT', source: '+mgmt' });
    expect(refused.status, refused.text).toBe(200);
    return { data: arr(await data(`${FW}/rules`)).map((r) => ({ source: r.source })) };
  },
  'RHK-6': async () => {
    clusterFirewall(sim.sim).aliases.set('bastion', { name: 'bastion', cidr: '10.1.0.5', ipversion: 4 });
    return { data: await data('/cluster/firewall/aliases', sim.auditToken) };
  },
  'RHK-7': () => http('GET', '/cluster/firewall/ipset', undefined, LIMITED),
  'SNP-1': async () => {
    const taken = await snapshotTaken('/nodes/pve-01/qemu/100');
    const snapshot = (await data('/nodes/pve-01/qemu/100/snapshot/pre-1/config')) as Record<string, unknown>;
    return {
      data: {
        ...taken,
        listed: taken.listed.map((e) => e.name),
        snapshot: { memory: snapshot.memory, snapstate: snapshot.snapstate ?? null, hasSnaptime: typeof snapshot.snaptime === 'number' },
      },
    };
  },
  'SNP-2': () => http('POST', '/nodes/pve-01/qemu/100/snapshot', { snapname: 'current' }),
  'SNP-3': async () => {
    expect((await task('POST', '/nodes/pve-01/qemu/100/snapshot', { snapname: 'pre-1' })).task).toBe('OK');
    return task('POST', '/nodes/pve-01/qemu/100/snapshot', { snapname: 'pre-1' });
  },
  'SNP-4': () => snapshotOf(101, 'local-lvm:vm-101-disk-0', 'local:101/vm-101-disk-0.raw'),
  'SNP-5': () => http('GET', '/nodes/pve-01/qemu/100/snapshot/nope/config'),
  'SNP-6': async () => ({ data: await rolledBack('/nodes/pve-01/qemu/100', { memory: '4096', cores: '4' }) }),
  'SNP-7': async () => ({ data: await snapshotDeleted('/nodes/pve-01/qemu/100') }),
  'CSN-1': async () => {
    const taken = await snapshotTaken('/nodes/pve-01/lxc/201');
    return { data: { ...taken, listed: taken.listed.map((e) => ({ name: e.name, vmstate: e.vmstate ?? null })) } };
  },
  'CSN-2': () => http('POST', '/nodes/pve-01/lxc/201/snapshot', { snapname: 'vzdump' }),
  'CSN-3': () => snapshotOf(201, '\nswap:', '\nmp0: /srv/data,mp=/data\nswap:'),
  'CSN-4': () => snapshotOf(201, 'local-lvm:vm-201-disk-0', 'local:201/vm-201-disk-0.raw'),
  'CSN-5': () => snapshotOf(201, '\nswap:', '\nmp0: local:201/vm-201-disk-1.raw,mp=/data,backup=0,size=4G\nswap:'),
  'CSN-6': async () => {
    const guest = sim.sim.guests.get(201);
    guest?.replaceRaw(`${guest.raw}lxc.apparmor.profile: unconfined\n`);
    expect((await task('POST', '/nodes/pve-01/lxc/201/snapshot', { snapname: 'pre-1' })).task).toBe('OK');
    const snapshot = (await data('/nodes/pve-01/lxc/201/snapshot/pre-1/config')) as Record<string, unknown>;
    const current = (await data('/nodes/pve-01/lxc/201/config')) as Record<string, unknown>;
    const inFile = /\[pre-1\][^[]*lxc\.apparmor\.profile: unconfined/.test(guest?.raw ?? '');
    return {
      data: {
        hostname: snapshot.hostname,
        lxc: snapshot.lxc ?? null,
        digest: snapshot.digest ?? null,
        currentHasLxc: Array.isArray(current.lxc),
        inFile,
      },
    };
  },
  'CSN-7': async () => ({ data: await rolledBack('/nodes/pve-02/lxc/200', { memory: '2048', ostype: 'alpine' }, true) }),
  'CSN-8': async () => ({ data: await snapshotDeleted('/nodes/pve-01/lxc/201') }),
  'CSN-9': async () => ({
    data: arr(await data('/cluster/resources?type=storage')).map((e) => ({ storage: e.storage, node: e.node, plugintype: e.plugintype })),
  }),
  'CSN-10': () => snapshotOf(101, 'local-lvm:vm-101-disk-0', 'local:101/vm-101-disk-0.qcow2'),
};

/** Waits for the task `upid` names, on its node. */
const upidDone = (upid: string): ReturnType<typeof waitTask> => waitTask(sim, /^UPID:([^:]+):/.exec(upid)?.[1] as string, upid);

/** The type a UPID names (`UPID:node:pid:pstart:starttime:type:id:user:`). */
const upidType = (upid: string): string | undefined => upid.split(':')[5];

/**
 * Snapshot `pre-1` of the guest at `path` with tasks long enough to look in: its lock and a config
 * write while the task runs, then the task's type and exit status, the config's lock and parent,
 * and the listing.
 */
async function snapshotTaken(path: string): Promise<Record<string, unknown> & { listed: Record<string, unknown>[] }> {
  sim.sim.setTaskMs(300);
  const upid = String((await call('POST', `${path}/snapshot`, { snapname: 'pre-1' })).body?.data);
  const during = ((await data(`${path}/config`)) as Record<string, unknown>).lock;
  const write = (await call('PUT', `${path}/config`, { memory: '4096' })).body?.message?.replace(/\n$/, '');
  const status = await upidDone(upid);
  sim.sim.setTaskMs(2);
  const config = (await data(`${path}/config`)) as Record<string, unknown>;
  const listed = arr(await data(`${path}/snapshot`));
  return {
    type: upidType(upid),
    during,
    write,
    exitstatus: status.exitstatus,
    lockAfter: config.lock ?? null,
    parent: config.parent,
    listed,
  };
}

/** Snapshot `pre-1` of guest `vmid` (on pve-01) once `from` in its config file reads `to`. */
function snapshotOf(vmid: number, from: string, to: string): Promise<Observed> {
  const guest = sim.sim.guests.get(vmid);
  guest?.replaceRaw(guest.raw.replace(from, to));
  return task('POST', `/nodes/pve-01/${guest?.type}/${vmid}/snapshot`, { snapname: 'pre-1' });
}

/** Snapshot `pre-1`, `written` written after it, then a rollback (with `start=1` when asked): what was pending before, what the guest is after. */
async function rolledBack(path: string, written: Record<string, string>, start = false): Promise<Record<string, unknown>> {
  expect((await task('POST', `${path}/snapshot`, { snapname: 'pre-1' })).task).toBe('OK');
  expect((await call('PUT', `${path}/config`, written)).status).toBe(200);
  const pendingKeys = async (): Promise<unknown[]> =>
    arr(await data(`${path}/pending`))
      .filter((e) => e.pending !== undefined)
      .map((e) => e.key);
  const pendingBefore = await pendingKeys();
  const res = await call('POST', `${path}/snapshot/pre-1/rollback`, start ? { start: '1' } : undefined);
  const upid = String(res.body?.data);
  const rolled = await upidDone(upid);
  const config = (await data(`${path}/config?current=1`)) as Record<string, unknown>;
  const pending = await pendingKeys();
  const status = ((await data(`${path}/status/current`)) as Record<string, unknown>).status;
  return {
    pendingBefore,
    type: upidType(upid),
    exitstatus: rolled.exitstatus,
    status,
    memory: config.memory,
    cores: config.cores,
    pending,
    parent: config.parent,
  };
}

/** Snapshots `first` then `second`, then `first` deleted: the task, the listing, the parent links. */
async function snapshotDeleted(path: string): Promise<Record<string, unknown>> {
  expect((await task('POST', `${path}/snapshot`, { snapname: 'first' })).task).toBe('OK');
  expect((await task('POST', `${path}/snapshot`, { snapname: 'second' })).task).toBe('OK');
  const upid = String((await call('DELETE', `${path}/snapshot/first`)).body?.data);
  const deleted = await upidDone(upid);
  const listed = arr(await data(`${path}/snapshot`));
  const config = (await data(`${path}/config`)) as Record<string, unknown>;
  return {
    type: upidType(upid),
    exitstatus: deleted.exitstatus,
    listed: listed.map((e) => e.name),
    secondParent: listed.find((e) => e.name === 'second')?.parent ?? null,
    parent: config.parent,
  };
}

/** VM 101's firewall, where the FW rows act. */
const FW = '/nodes/pve-01/qemu/101/firewall';

/** Adds enabled rules to VM 101 so they read in the order given (each `POST` lands at position 0). */
async function fwRules(...comments: string[]): Promise<void> {
  for (const comment of [...comments].reverse()) {
    const res = await call('POST', `${FW}/rules`, { type: 'in', action: 'ACCEPT', enable: '1', comment });
    expect(res.status, res.text).toBe(200);
  }
}

/** A rule write with the digest read before another rule was added. */
async function fwStale(method: 'PUT' | 'DELETE', path: string, form: Record<string, string> = {}): Promise<Observed> {
  await fwRules('a');
  const stale = String(arr(await data(`${FW}/rules`))[0]?.digest);
  await fwRules('b');
  return http(method, `${path}?digest=${stale}`, method === 'PUT' ? form : undefined);
}

/** Creates a backup job `id` on schedule `sun 01:00` (the admin token), asserting it was created. */
async function backupJob(id: string, form: Record<string, string>): Promise<void> {
  const created = await call('POST', '/cluster/backup', { id, schedule: 'sun 01:00', ...form });
  expect(created.status, created.text).toBe(200);
}

/** The VMIDs of each pool's guest members, by pool. */
async function poolMembers(...ids: string[]): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const id of ids) {
    const [pool] = arr(await data(`/pools?poolid=${id}`));
    out[id] = arr(pool?.members).map((m) => Number(m.vmid));
  }
  return out;
}

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
