/**
 * `vmstatus` of one guest, as the node listings and `status/current` return it: the fields both
 * flavours share, then what each adds (a container its swap, a VM `memhost` and a serial port,
 * and from QMP its run state).
 */
import type { GuestType } from '../../../core/guest-flavours.js';
import { perlTrue, type Guest } from './guest.js';

type Fields = Record<string, unknown>;

/** What each flavour's `vmstatus` adds to the common fields. */
const FLAVOUR_FIELDS: Record<GuestType, (guest: Guest, common: Fields) => Fields> = {
  qemu: (guest, common) => {
    // `conf_has_serial`: only a VM with a serial port (serial0…serial3) says so.
    const serial = [0, 1, 2, 3].some((i) => perlTrue(guest.main.get(`serial${i}`)));
    return { ...common, memhost: common.mem, ...(serial ? { serial: 1 } : {}) };
  },
  lxc: (guest, common) => {
    const swap = Number(guest.main.get('swap') ?? 512) * 1024 * 1024;
    return { ...common, type: 'lxc', maxswap: swap, swap: 0 };
  },
};

const RUNNING_MACHINE = { 'running-machine': 'pc-i440fx-10.1+pve0', 'running-qemu': '10.1.2' };

/** qemu's `full` listing asks QMP for the run state; a container has no QMP. */
export const LISTING_FULL_FIELDS: Record<GuestType, (guest: Guest) => Fields> = {
  qemu: (guest) => ({ qmpstatus: guest.running ? 'running' : 'stopped', ...(guest.running ? RUNNING_MACHINE : {}) }),
  lxc: () => ({}),
};

/** What `status/current` adds: qemu its QMP state and whether the agent is configured. */
export const CURRENT_FIELDS: Record<GuestType, (guest: Guest) => Fields> = {
  qemu: (guest) => {
    const agent = guest.main.get('agent');
    return {
      qmpstatus: guest.running ? 'running' : 'stopped',
      ...(agent !== undefined && /^(1|enabled=1)/.test(agent) ? { agent: 1 } : {}),
      ...(guest.running ? RUNNING_MACHINE : {}),
    };
  },
  lxc: () => ({}),
};

/** `vmstatus` of one guest. */
export function guestStatus(guest: Guest): Fields {
  const s = guest.summary();
  const running = guest.running;
  const common: Fields = {
    vmid: guest.vmid,
    name: s.name,
    status: running ? 'running' : 'stopped',
    cpus: s.cpus,
    maxmem: s.maxmem,
    maxdisk: s.maxdisk,
    disk: 0,
    uptime: guest.uptime(),
    cpu: running ? 0.0123 : 0,
    mem: running ? Math.floor(s.maxmem * 0.41) : 0,
    netin: running ? 1_234_567 : 0,
    netout: running ? 765_432 : 0,
    diskread: running ? 98_765_432 : 0,
    diskwrite: running ? 12_345_678 : 0,
    ...(running ? { pid: 10_000 + (guest.vmid % 50_000) } : {}),
    ...(s.template ? { template: 1 } : {}),
    ...(s.tags !== undefined ? { tags: s.tags } : {}),
    ...(s.lock !== undefined ? { lock: s.lock } : {}),
  };
  return FLAVOUR_FIELDS[guest.type](guest, common);
}
