import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyImpact } from '../../src/core/plan/impact.js';
import type { GuestType } from '../../src/core/guest-flavours.js';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { api } from './helpers.js';

/**
 * Which change a guest takes at once and which waits for a restart, written down from Proxmox's
 * own code — not from src/core/hotplug.ts, which the simulator and the planner share — and
 * checked against both: the simulator over HTTP, the planner through its impact labels.
 *
 * qemu (running): qemu-server `QemuServer.pm`, `vmconfig_hotplug_pending` — `$fast_plug_option`
 * values are written at once; then per option `hotplug` (skip if old or new has cpu/memory),
 * `tablet` (usb feature), `usbN` (usb feature and ostype l26 or Windows 8+), `vcpus` (cpu
 * feature), `balloon` (skip when the balloon device is switched on or off), `netN`
 * (`vmconfig_update_net`: bridge/tag/firewall/rate/link in place, model/macaddr/queues/mtu need
 * the network feature), drives (`vmconfig_update_disk`: aio, discard, iothread, queues, product,
 * cache, ssd, vendor, ro wait; other options apply; a new volume needs the disk feature; never
 * efidisk0/tpmstate0; ide/sata are not plugged), `memory` (memory feature), `cpuunits` and
 * `cpulimit` (cgroup), `agent` (`vmconfig_update_agent`: only fstrim_cloned_disks), anything else
 * waits. Deletions: the same features; efidisk/ide/sata/tpmstate wait; the boot disk refuses
 * (`vm_deviceunplug`: `can't unplug bootdisk`). Stopped: `vmconfig_apply_pending` applies all.
 *
 * lxc (running): pve-container `LXC/Config.pm`, `vmconfig_hotplug_pending` —
 * `$LXC_FASTPLUG_OPTIONS` at once; `cpulimit`, `cpuunits`, `netN`, `memory`, `swap`, a new
 * `mpN` or `devN`; anything else waits. Deletions: fast-plug options, `unusedN`, `swap`,
 * `cpulimit`, `cpuunits`, and `net0`–`net9` (the pattern is `^net(\d)$`).
 */
type Expected = 'live' | 'pending' | { refusal: string };

interface Row {
  type: GuestType;
  running: boolean;
  /** Config lines besides the base config. */
  current?: Record<string, string>;
  /** Options set; a key mapped to undefined is deleted. */
  change: Record<string, string | undefined>;
  expected: Expected;
}

const QEMU_BASE: Record<string, string> = {
  boot: 'order=scsi0;net0',
  cores: '2',
  memory: '2048',
  name: 'web',
  net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0',
  ostype: 'l26',
  scsi0: 'local-lvm:vm-VMID-disk-0,size=32G',
  scsihw: 'virtio-scsi-pci',
};
const LXC_BASE: Record<string, string> = {
  arch: 'amd64',
  cores: '1',
  hostname: 'ct',
  memory: '512',
  net0: 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:02,ip=dhcp,type=veth',
  ostype: 'debian',
  rootfs: 'local-lvm:vm-VMID-disk-0,size=8G',
  swap: '512',
  unprivileged: '1',
};
const SCSI1 = 'local-lvm:vm-VMID-disk-1,size=8G';

const q = (change: Row['change'], expected: Expected, current?: Record<string, string>): Row => ({
  type: 'qemu',
  running: true,
  change,
  expected,
  ...(current ? { current } : {}),
});
const l = (change: Row['change'], expected: Expected, current?: Record<string, string>): Row => ({
  type: 'lxc',
  running: true,
  change,
  expected,
  ...(current ? { current } : {}),
});

const ROWS: [string, Row][] = [
  // qemu: fast-plug options
  ['qemu name', q({ name: 'web-2' }, 'live')],
  ['qemu onboot', q({ onboot: '1' }, 'live')],
  ['qemu protection', q({ protection: '1' }, 'live')],
  ['qemu description', q({ description: 'hello' }, 'live')],
  ['qemu tags', q({ tags: 'a;b' }, 'live')],
  ['qemu startup', q({ startup: 'order=2' }, 'live')],
  ['qemu ciuser (cloud-init)', q({ ciuser: 'ops' }, 'live')],
  ['qemu ipconfig0 (cloud-init)', q({ ipconfig0: 'ip=dhcp' }, 'live')],
  // qemu: cgroup options
  ['qemu cpulimit set', q({ cpulimit: '2' }, 'live')],
  ['qemu cpulimit delete', q({ cpulimit: undefined }, 'live', { cpulimit: '2' })],
  ['qemu cpuunits set', q({ cpuunits: '200' }, 'live')],
  // qemu: options no branch handles
  ['qemu cores', q({ cores: '4' }, 'pending')],
  ['qemu sockets', q({ sockets: '2' }, 'pending')],
  ['qemu cpu', q({ cpu: 'host' }, 'pending')],
  ['qemu machine', q({ machine: 'q35' }, 'pending')],
  ['qemu bios', q({ bios: 'ovmf' }, 'pending')],
  ['qemu vga', q({ vga: 'virtio' }, 'pending')],
  ['qemu scsihw', q({ scsihw: 'virtio-scsi-single' }, 'pending')],
  ['qemu ostype', q({ ostype: 'win11' }, 'pending')],
  ['qemu numa', q({ numa: '1' }, 'pending')],
  ['qemu boot', q({ boot: 'order=net0;scsi0' }, 'pending')],
  // qemu: memory and hotplug features
  ['qemu memory, no memory hotplug', q({ memory: '4096' }, 'pending')],
  ['qemu memory, memory hotplug', q({ memory: '4096' }, 'live', { hotplug: 'network,disk,memory' })],
  ['qemu vcpus, no cpu hotplug', q({ vcpus: '1' }, 'pending')],
  ['qemu vcpus, cpu hotplug', q({ vcpus: '1' }, 'live', { hotplug: 'network,disk,cpu', sockets: '2' })],
  ['qemu hotplug adds memory', q({ hotplug: 'network,disk,memory' }, 'pending')],
  ['qemu hotplug drops usb', q({ hotplug: 'network,disk' }, 'live')],
  ['qemu hotplug delete with cpu', q({ hotplug: undefined }, 'pending', { hotplug: 'network,disk,cpu' })],
  ['qemu hotplug delete without cpu/memory', q({ hotplug: undefined }, 'live', { hotplug: 'network,disk' })],
  // qemu: balloon
  ['qemu balloon stays enabled', q({ balloon: '1024' }, 'live')],
  ['qemu balloon switched off', q({ balloon: '0' }, 'pending')],
  ['qemu balloon delete when 0', q({ balloon: undefined }, 'pending', { balloon: '0' })],
  ['qemu balloon delete when set', q({ balloon: undefined }, 'live', { balloon: '1024' })],
  // qemu: NICs
  ['qemu net0 bridge', q({ net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr1' }, 'live')],
  ['qemu net0 tag and rate', q({ net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=20,rate=10' }, 'live')],
  ['qemu net0 model, network hotplug', q({ net0: 'e1000=BC:24:11:00:00:01,bridge=vmbr0' }, 'live')],
  ['qemu net0 model, no network hotplug', q({ net0: 'e1000=BC:24:11:00:00:01,bridge=vmbr0' }, 'pending', { hotplug: 'disk' })],
  ['qemu net1 added', q({ net1: 'virtio=BC:24:11:00:00:09,bridge=vmbr0' }, 'live')],
  ['qemu net1 added, hotplug 0', q({ net1: 'virtio=BC:24:11:00:00:09,bridge=vmbr0' }, 'pending', { hotplug: '0' })],
  ['qemu net1 delete, hotplug 0', q({ net1: undefined }, 'pending', { hotplug: '0', net1: 'virtio=BC:24:11:00:00:09,bridge=vmbr0' })],
  // qemu: disks
  ['qemu scsi0 cache', q({ scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,cache=writeback' }, 'pending')],
  ['qemu scsi0 discard', q({ scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,discard=on' }, 'pending')],
  ['qemu scsi0 iothread', q({ scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,iothread=1' }, 'pending')],
  ['qemu scsi0 ssd', q({ scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,ssd=1' }, 'pending')],
  ['qemu scsi0 iops throttle', q({ scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,iops=100' }, 'live')],
  ['qemu scsi0 backup flag', q({ scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,backup=0' }, 'live')],
  ['qemu scsi0 serial', q({ scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,serial=abc' }, 'live')],
  ['qemu scsi0 detect_zeroes', q({ scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,detect_zeroes=0' }, 'live')],
  ['qemu scsi1 new disk', q({ scsi1: 'local-lvm:8' }, 'live')],
  ['qemu sata1 new disk', q({ sata1: 'local-lvm:8' }, 'pending')],
  ['qemu scsi1 new disk, hotplug network only', q({ scsi1: 'local-lvm:8' }, 'pending', { hotplug: 'network' })],
  ['qemu scsi1 delete', q({ scsi1: undefined }, 'live', { scsi1: SCSI1 })],
  ['qemu scsi0 delete (boot disk)', q({ scsi0: undefined }, { refusal: "can't unplug bootdisk 'scsi0'" })],
  ['qemu efidisk0 delete', q({ efidisk0: undefined }, 'pending', { efidisk0: 'local-lvm:vm-VMID-disk-2,size=4M' })],
  ['qemu ide2 CD-ROM medium', q({ ide2: 'none,media=cdrom' }, 'live', { ide2: 'local:iso/debian.iso,media=cdrom' })],
  // qemu: USB and tablet
  ['qemu tablet, usb hotplug', q({ tablet: '0' }, 'live')],
  ['qemu tablet, no usb hotplug', q({ tablet: '0' }, 'pending', { hotplug: 'network,disk' })],
  ['qemu usb0 on Linux', q({ usb0: 'spice' }, 'live')],
  ['qemu usb0 on Windows 7', q({ usb0: 'spice' }, 'pending', { ostype: 'win7' })],
  ['qemu usb0 on Windows 11', q({ usb0: 'spice' }, 'live', { ostype: 'win11' })],
  ['qemu usb0 without ostype', q({ usb0: 'spice' }, 'pending', { ostype: '' })],
  // qemu: guest agent
  ['qemu agent enabled where none was', q({ agent: 'enabled=1' }, 'pending')],
  ['qemu agent fstrim_cloned_disks', q({ agent: 'enabled=1,fstrim_cloned_disks=1' }, 'live', { agent: 'enabled=1' })],
  ['qemu agent type', q({ agent: 'enabled=1,type=isa' }, 'pending', { agent: 'enabled=1' })],
  ['qemu agent freeze-fs', q({ agent: 'enabled=1,freeze-fs=0' }, 'pending', { agent: 'enabled=1' })],
  // qemu: stopped guests take everything
  ['qemu cores, stopped', { type: 'qemu', running: false, change: { cores: '4' }, expected: 'live' }],
  [
    'qemu scsi0 cache, stopped',
    { type: 'qemu', running: false, change: { scsi0: 'local-lvm:vm-VMID-disk-0,size=32G,cache=writeback' }, expected: 'live' },
  ],
  // lxc
  ['lxc cores', l({ cores: '2' }, 'live')],
  ['lxc hostname', l({ hostname: 'ct-2' }, 'live')],
  ['lxc onboot', l({ onboot: '1' }, 'live')],
  ['lxc tags', l({ tags: 'a' }, 'live')],
  ['lxc cpulimit', l({ cpulimit: '1.5' }, 'live')],
  ['lxc cpuunits', l({ cpuunits: '200' }, 'live')],
  ['lxc memory', l({ memory: '1024' }, 'live')],
  ['lxc swap', l({ swap: '0' }, 'live')],
  ['lxc net0 changed', l({ net0: 'name=eth0,bridge=vmbr1,hwaddr=BC:24:11:00:00:02,ip=dhcp,type=veth' }, 'live')],
  ['lxc net1 added', l({ net1: 'name=eth1,bridge=vmbr0,ip=dhcp' }, 'live')],
  ['lxc mp0 added', l({ mp0: 'local-lvm:4,mp=/srv' }, 'live')],
  [
    'lxc mp0 changed',
    l({ mp0: 'local-lvm:vm-VMID-disk-1,mp=/data,size=4G' }, 'pending', { mp0: 'local-lvm:vm-VMID-disk-1,mp=/srv,size=4G' }),
  ],
  ['lxc nameserver', l({ nameserver: '1.1.1.1' }, 'pending')],
  ['lxc searchdomain', l({ searchdomain: 'example.net' }, 'pending')],
  ['lxc features', l({ features: 'nesting=1' }, 'pending')],
  ['lxc timezone', l({ timezone: 'Europe/Vienna' }, 'pending')],
  ['lxc cpulimit delete', l({ cpulimit: undefined }, 'live', { cpulimit: '2' })],
  ['lxc swap delete', l({ swap: undefined }, 'live')],
  ['lxc onboot delete', l({ onboot: undefined }, 'live', { onboot: '1' })],
  ['lxc net1 delete', l({ net1: undefined }, 'live', { net1: 'name=eth1,bridge=vmbr0,hwaddr=BC:24:11:00:00:03,ip=dhcp,type=veth' })],
  ['lxc net10 delete', l({ net10: undefined }, 'pending', { net10: 'name=eth10,bridge=vmbr0,hwaddr=BC:24:11:00:00:0A,ip=dhcp,type=veth' })],
  ['lxc mp0 delete', l({ mp0: undefined }, 'pending', { mp0: 'local-lvm:vm-VMID-disk-1,mp=/srv,size=4G' })],
  ['lxc nameserver delete', l({ nameserver: undefined }, 'pending', { nameserver: '1.1.1.1' })],
  [
    'lxc mp0 changed, stopped',
    {
      type: 'lxc',
      running: false,
      change: { mp0: 'local-lvm:vm-VMID-disk-1,mp=/data,size=4G' },
      expected: 'live',
      current: { mp0: 'local-lvm:vm-VMID-disk-1,mp=/srv,size=4G' },
    },
  ],
];

let sim: RunningSimulator;
let nextVmid = 700;
beforeAll(async () => {
  sim = await startSimulator({ port: 0, taskMs: 1 });
});
afterAll(() => sim.close());

/** The row's guest config: base, then the row's current values ('' drops a key). */
function rowConfig(row: Row, vmid: number): Record<string, string> {
  const config: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...(row.type === 'qemu' ? QEMU_BASE : LXC_BASE), ...row.current })) {
    if (v !== '') config[k] = v.replaceAll('VMID', String(vmid));
  }
  return config;
}

function withVmid(change: Row['change'], vmid: number): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(change).map(([k, v]) => [k, v?.replaceAll('VMID', String(vmid))]));
}

/** What the simulator did with the change: taken, left pending, or refused (400 hotplug problem). */
async function simulatorVerdict(row: Row): Promise<Expected> {
  const vmid = nextVmid++;
  const node = 'pve-01';
  const config = rowConfig(row, vmid);
  sim.sim.addGuest({ vmid, type: row.type, node, running: row.running, config });
  const change = withVmid(row.change, vmid);
  const set = Object.fromEntries(Object.entries(change).filter((e): e is [string, string] => e[1] !== undefined));
  const deletes = Object.keys(change).filter((k) => change[k] === undefined);
  const form: Record<string, string> = { ...set, ...(deletes.length ? { delete: deletes.join(',') } : {}) };
  const res = await api(sim, 'PUT', `/nodes/${node}/${row.type}/${vmid}/config`, { form });
  if (res.status === 400 && res.body?.errors) {
    const message = Object.values(res.body.errors)[0] ?? '';
    return {
      refusal: message
        .replace(/^hotplug problem - /, '')
        .replace(/^unable to hotplug \S+: /, '')
        .trimEnd(),
    };
  }
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const pending = (await api(sim, 'GET', `/nodes/${node}/${row.type}/${vmid}/pending`)).body?.data as Record<string, unknown>[];
  const waits = Object.keys(change).some((key) => {
    const entry = pending.find((e) => e.key === key);
    return entry !== undefined && ('pending' in entry || 'delete' in entry);
  });
  return waits ? 'pending' : 'live';
}

/** What the planner labels the change (one key per row). */
function plannerVerdict(row: Row): Expected {
  const vmid = 999;
  const [[key, to]] = Object.entries(withVmid(row.change, vmid)) as [[string, string | undefined]];
  const result = keyImpact({ type: row.type, running: row.running, current: rowConfig(row, vmid) }, key, to);
  if (result.refusal) return { refusal: result.refusal };
  return result.impact === 'live' ? 'live' : 'pending';
}

describe('hotplug oracle: expectations from qemu-server and pve-container, not from the shared rules', () => {
  it.each(ROWS)('%s: the simulator over HTTP', async (_name, row) => {
    expect(await simulatorVerdict(row)).toEqual(row.expected);
  });

  it.each(ROWS)('%s: the planner’s impact label', (_name, row) => {
    expect(plannerVerdict(row)).toEqual(row.expected);
  });
});
