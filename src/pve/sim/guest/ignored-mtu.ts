/**
 * `print_netdevice_full` (qemu-server `QemuServer.pm`), run for every NIC when a VM starts: an
 * MTU only applies to a VirtIO NIC on a bridge; anywhere else it is ignored with a `log_warn`,
 * which makes the start task end `WARNINGS: N`. The VM row of the flavour table asks for it.
 */
import type { Guest } from './guest.js';
import { parseOption } from '../property-format.js';
import type { TaskContext } from '../tasks.js';

/** Logs a warning for every NIC whose MTU qemu ignores. */
export function warnIgnoredMtu(guest: Guest, log: TaskContext): void {
  for (let i = 0; i < 32; i++) {
    const netid = `net${i}`;
    const value = guest.main.get(netid);
    const net = value === undefined ? undefined : parseOption('qemu', netid, value);
    if (net?.mtu === undefined) continue;
    if (net.model === 'virtio' && net.bridge) continue;
    const why = net.bridge ? 'not using VirtIO' : 'no bridge configured';
    log.warn(`netdev ${netid}: ignoring MTU '${net.mtu}', ${why}`);
  }
}
