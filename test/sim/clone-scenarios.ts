/**
 * The scenarios of docs/proxmox-behaviour.md's rows on clones, templates, `import-from` and
 * cloud-init (QCL-, LCL-, TPL-, IMF-, CIN-), for the row-by-row test in behaviour-table.test.ts:
 * each provokes its behaviour over HTTP on the table's fixture and returns what it observed.
 */
import { expect } from 'vitest';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { type ApiAnswer, waitTask } from './helpers.js';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What a scenario observed, as the row-by-row test compares it. */
export interface CloneObserved {
  http?: ApiAnswer;
  task?: string;
  data?: unknown;
  raw?: string;
}

/** The table test's helpers these scenarios use. */
export interface ScenarioTools {
  sim(): RunningSimulator;
  call(method: Method, path: string, form?: Record<string, string>, token?: string | null): Promise<ApiAnswer>;
  http(method: Method, path: string, form?: Record<string, string>, token?: string | null): Promise<CloneObserved>;
  task(method: Method, path: string, form?: Record<string, string>, token?: string | null): Promise<CloneObserved>;
  file(vmid: number, method: Method, path: string, form?: Record<string, string>): Promise<CloneObserved>;
  data(path: string, token?: string): Promise<unknown>;
}

/** The limited token of the table's fixture: admin on guest 100 only, nothing elsewhere. */
const LIMITED = 'ops@pve!limited=s3cret';

/** A container template on pve-01 (its root disk a base image) and a stopped VM template with a disk. */
const CT_TEMPLATE = [
  'arch: amd64',
  'hostname: ct-tpl',
  'memory: 512',
  'net0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:31,ip=dhcp,type=veth',
  'ostype: debian',
  'rootfs: local-lvm:base-210-disk-0,size=4G',
  'template: 1',
  '',
].join('\n');
const VM_TEMPLATE = [
  'boot: order=scsi0',
  'ide2: local-lvm:vm-110-cloudinit,media=cdrom',
  'name: debian-12-cloud',
  'net0: virtio=BC:24:11:00:00:41,bridge=vmbr0',
  'onboot: 1',
  'protection: 1',
  'scsi0: local-lvm:base-110-disk-0,size=2G',
  'smbios1: uuid=11111111-2222-3333-4444-555555555555',
  'tags: pve-gitops',
  'template: 1',
  'unused0: local-lvm:vm-110-disk-9',
  'vmgenid: 00000000-0000-0000-0000-000000000001',
  '',
].join('\n');

const arr = (value: unknown): Record<string, unknown>[] => value as Record<string, unknown>[];

/** The scenarios, by row id. */
export function cloneScenarios(t: ScenarioTools): Record<string, () => Promise<CloneObserved>> {
  const addVmTemplate = (): void => void t.sim().sim.addGuest({ vmid: 110, type: 'qemu', node: 'pve-01', config: VM_TEMPLATE });
  const addCtTemplate = (): void => void t.sim().sim.addGuest({ vmid: 210, type: 'lxc', node: 'pve-01', config: CT_TEMPLATE });
  const config = async (type: 'qemu' | 'lxc', vmid: number, node = 'pve-01'): Promise<Record<string, unknown>> =>
    (await t.data(`/nodes/${node}/${type}/${vmid}/config`)) as Record<string, unknown>;
  /** Clones and waits for the task; the clone's config. */
  const cloned = async (type: 'qemu' | 'lxc', vmid: number, form: Record<string, string>): Promise<Record<string, unknown>> => {
    const res = await t.call('POST', `/nodes/pve-01/${type}/${vmid}/clone`, form);
    expect(res.status, res.text).toBe(200);
    const status = await waitTask(t.sim(), 'pve-01', res.body?.data as string);
    expect(status.exitstatus).toBe('OK');
    return config(type, Number(form.newid));
  };
  const taskLog = async (upid: string): Promise<string[]> => {
    const log = await t.call('GET', `/nodes/pve-01/tasks/${encodeURIComponent(upid)}/log?limit=0`);
    return arr(log.body?.data).map((l) => String(l.t));
  };
  const cloudinit = (vmid: number): Promise<unknown> => t.data(`/nodes/pve-01/qemu/${vmid}/cloudinit`);
  /** VM 111: a stopped VM with a cloud-init drive and `ciuser: old`. */
  const addCloudinitVm = (running: boolean): void =>
    void t.sim().sim.addGuest({
      vmid: 111,
      type: 'qemu',
      node: 'pve-01',
      running,
      config: 'ciuser: old\nide2: local-lvm:vm-111-cloudinit,media=cdrom\nname: ci\nscsi0: local-lvm:vm-111-disk-0,size=2G\n',
    });

  return {
    'QCL-1': () => t.http('POST', '/nodes/pve-01/qemu/101/clone', { newid: '150' }, LIMITED),
    'QCL-2': () => t.http('POST', '/nodes/pve-01/qemu/100/clone', { newid: '150' }, LIMITED),
    'QCL-3': () => {
      addVmTemplate();
      return t.http('POST', '/nodes/pve-01/qemu/110/clone', { newid: '150', storage: 'local-lvm' });
    },
    'QCL-4': () => {
      addVmTemplate();
      return t.http('POST', '/nodes/pve-01/qemu/110/clone', { newid: '150', format: 'qcow2' });
    },
    'QCL-5': () => t.http('POST', '/nodes/pve-01/qemu/101/clone', { newid: '150', target: 'pve-02' }),
    'QCL-6': () => t.http('POST', '/nodes/pve-01/qemu/101/clone', { newid: '100' }),
    'QCL-7': () => t.http('POST', '/nodes/pve-01/qemu/101/clone', { newid: '150', full: '0' }),
    'QCL-8': async () => {
      const res = await t.call('POST', '/nodes/pve-01/qemu/101/clone', { newid: '150' });
      const status = await waitTask(t.sim(), 'pve-01', res.body?.data as string);
      return { data: { type: status.type, id: status.id, exitstatus: status.exitstatus } };
    },
    'QCL-9': async () => {
      t.sim().sim.setTaskMs(60_000);
      const res = await t.call('POST', '/nodes/pve-01/qemu/101/clone', { newid: '150' });
      expect(res.status, res.text).toBe(200);
      const during = await config('qemu', 150);
      const active = arr(await t.data('/nodes/pve-01/tasks?source=active&vmid=150'));
      return { data: { lock: during.lock, tasksOfNewVmid: active.length } };
    },
    'QCL-10': async () => {
      addVmTemplate();
      const clone = await cloned('qemu', 110, { newid: '150' });
      return {
        data: {
          name: clone.name,
          template: clone.template ?? null,
          unused0: clone.unused0 ?? null,
          sameMac: String(clone.net0).includes('BC:24:11:00:00:41'),
          sameUuid: String(clone.smbios1).includes('11111111-2222'),
          sameVmgenid: clone.vmgenid === '00000000-0000-0000-0000-000000000001',
          lock: clone.lock ?? null,
        },
      };
    },
    'QCL-11': async () => {
      addVmTemplate();
      const clone = await cloned('qemu', 110, { newid: '150' });
      return { data: { tags: clone.tags, protection: clone.protection, onboot: clone.onboot } };
    },
    'QCL-12': async () => {
      addVmTemplate();
      const clone = await cloned('qemu', 110, { newid: '150' });
      return { data: { scsi0: clone.scsi0, ide2: clone.ide2 } };
    },
    'QCL-13': async () => {
      t.sim().sim.operatorEdit(101, { set: { cores: '4' } });
      t.sim().sim.setRunning(101, true);
      t.sim().sim.operatorEdit(101, { set: { cpu: 'host' } });
      t.sim().sim.setRunning(101, false);
      const res = await t.call('POST', '/nodes/pve-01/qemu/101/clone', { newid: '150' });
      await waitTask(t.sim(), 'pve-01', res.body?.data as string);
      const log = await taskLog(res.body?.data as string);
      const clone = await config('qemu', 150);
      return { data: { warning: log.find((l) => l.startsWith('found pending')), cpu: clone.cpu ?? null } };
    },
    'QCL-14': async () => {
      addVmTemplate();
      await cloned('qemu', 110, { newid: '150', pool: 'web' });
      const [pool] = arr(await t.data('/pools?poolid=web'));
      return { data: { members: arr(pool?.members).map((m) => Number(m.vmid)) } };
    },
    'QCL-15': async () => {
      addVmTemplate();
      const rule = { type: 'in', action: 'ACCEPT', enable: '1', comment: 'from the template' };
      expect((await t.call('POST', '/nodes/pve-01/qemu/110/firewall/rules', rule)).status).toBe(200);
      await cloned('qemu', 110, { newid: '150' });
      const rules = arr(await t.data('/nodes/pve-01/qemu/150/firewall/rules'));
      return { data: rules.map((r) => r.comment) };
    },
    'QCL-16': async () => {
      addVmTemplate();
      await cloned('qemu', 110, { newid: '150' });
      return t.http('POST', '/nodes/pve-01/qemu/110/clone', { newid: '150' });
    },
    'LCL-1': () => t.http('POST', '/nodes/pve-01/lxc/201/clone', { newid: '250' }, LIMITED),
    'LCL-2': () => {
      addCtTemplate();
      return t.http('POST', '/nodes/pve-01/lxc/210/clone', { newid: '250', storage: 'local-lvm' });
    },
    'LCL-3': () => t.http('POST', '/nodes/pve-02/lxc/200/clone', { newid: '250' }),
    'LCL-4': () => {
      t.sim().sim.operatorEdit(201, { set: { mp0: '/srv/data,mp=/data' } });
      return t.http('POST', '/nodes/pve-01/lxc/201/clone', { newid: '250' });
    },
    'LCL-5': () => t.http('POST', '/nodes/pve-01/lxc/201/clone', { newid: '250', target: 'pve-02' }),
    'LCL-6': async () => {
      await t.call('POST', '/nodes/pve-01/lxc/201/clone', { newid: '250', target: 'pve-02' });
      return { data: { source: (await config('lxc', 201)).lock ?? null, target: t.sim().sim.getGuest(250) ?? null } };
    },
    'LCL-7': async () => {
      addCtTemplate();
      t.sim().sim.setTaskMs(60_000);
      const res = await t.call('POST', '/nodes/pve-01/lxc/210/clone', { newid: '250', hostname: 'web-ct' });
      expect(res.status, res.text).toBe(200);
      const target = await config('lxc', 250);
      return {
        data: { source: (await config('lxc', 210)).lock, target: target.lock, hostname: target.hostname, rootfs: target.rootfs ?? null },
      };
    },
    'LCL-8': async () => {
      addCtTemplate();
      const res = await t.call('POST', '/nodes/pve-01/lxc/210/clone', { newid: '250' });
      const status = await waitTask(t.sim(), 'pve-01', res.body?.data as string);
      const clone = await config('lxc', 250);
      return {
        data: {
          type: status.type,
          id: status.id,
          source: (await config('lxc', 210)).lock ?? null,
          target: clone.lock ?? null,
          template: clone.template ?? null,
          sameMac: String(clone.net0).includes('BC:24:11:00:00:31'),
          hostname: clone.hostname,
        },
      };
    },
    'TPL-1': () => t.file(101, 'POST', '/nodes/pve-01/qemu/101/template'),
    'TPL-2': () => t.file(101, 'POST', '/nodes/pve-01/qemu/101/template'),
    'TPL-3': () => t.http('POST', '/nodes/pve-01/qemu/100/template'),
    'TPL-4': () => t.http('POST', '/nodes/pve-01/qemu/102/template'),
    'TPL-5': () => {
      t.sim().sim.addGuest({
        vmid: 112,
        type: 'qemu',
        node: 'pve-01',
        config:
          'name: snappy\nparent: s1\nscsi0: local-lvm:vm-112-disk-0,size=2G\n\n[s1]\nname: snappy\nscsi0: local-lvm:vm-112-disk-0,size=2G\nsnaptime: 1700000000\n',
      });
      return t.http('POST', '/nodes/pve-01/qemu/112/template');
    },
    'TPL-6': async () => {
      const res = await t.call('POST', '/nodes/pve-01/lxc/201/template');
      expect(res.status, res.text).toBe(200);
      return { data: res.body?.data ?? null };
    },
    'TPL-7': async () => {
      await t.call('POST', '/nodes/pve-01/lxc/201/template');
      const [task] = arr(await t.data('/nodes/pve-01/tasks?source=all&typefilter=vztemplate&vmid=201'));
      const status = await waitTask(t.sim(), 'pve-01', task?.upid as string);
      const ct = await config('lxc', 201);
      return { data: { exitstatus: status.exitstatus, template: ct.template, rootfs: ct.rootfs } };
    },
    'TPL-8': () => t.http('POST', '/nodes/pve-02/lxc/200/template'),
    'IMF-1': () => t.http('POST', '/nodes/pve-01/qemu', { vmid: '180', scsi0: 'local-lvm:8,import-from=local-lvm:vm-101-disk-0' }),
    'IMF-2': () => t.http('POST', '/nodes/pve-01/qemu', { vmid: '180', scsi0: 'local-lvm:0,import-from=local:iso/debian.iso' }),
    'IMF-3': () => t.file(180, 'POST', '/nodes/pve-01/qemu', { vmid: '180', scsi0: 'local-lvm:0,import-from=local-lvm:vm-101-disk-0' }),
    'CIN-1': async () => {
      const put = await t.call('PUT', '/nodes/pve-01/qemu/100/config', { ciuser: 'debian' });
      expect(put.status, put.text).toBe(200);
      const pending = arr(await t.data('/nodes/pve-01/qemu/100/pending')).find((e) => e.key === 'ciuser');
      return { data: { value: pending?.value, pending: pending?.pending ?? null, cloudinit: await cloudinit(100) } };
    },
    'CIN-2': async () => {
      addCloudinitVm(true);
      await t.call('PUT', '/nodes/pve-01/qemu/111/config', { ciuser: 'debian' });
      return { data: await cloudinit(111) };
    },
    'CIN-3': async () => {
      addCloudinitVm(true);
      await t.call('PUT', '/nodes/pve-01/qemu/111/config', { ciuser: 'debian' });
      const put = await t.call('PUT', '/nodes/pve-01/qemu/111/cloudinit');
      expect(put.status, put.text).toBe(200);
      return { data: { answer: put.body?.data ?? null, cloudinit: await cloudinit(111) } };
    },
    'CIN-4': async () => {
      addCloudinitVm(false);
      await t.call('PUT', '/nodes/pve-01/qemu/111/config', { ciuser: 'debian' });
      const before = await cloudinit(111);
      const start = await t.task('POST', '/nodes/pve-01/qemu/111/status/start');
      return { data: { before, start: start.task, after: await cloudinit(111) } };
    },
    'CIN-5': async () => {
      addCloudinitVm(false);
      t.sim().sim.operatorEdit(111, { set: { lock: 'backup' } });
      return t.http('PUT', '/nodes/pve-01/qemu/111/cloudinit');
    },
    'CIN-6': async () => {
      addCloudinitVm(true);
      await t.call('PUT', '/nodes/pve-01/qemu/111/config', { delete: 'ciuser' });
      return { data: await cloudinit(111) };
    },
  };
}
