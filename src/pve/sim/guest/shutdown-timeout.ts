/**
 * A clean shutdown the guest does not answer (no ACPI handling, a hung init): qemu-server
 * `QemuServer.pm` `_do_vm_stop` waits `timeout` seconds, then kills the VM when `forceStop` is set
 * and otherwise dies "VM quit/powerdown failed - got timeout"; pve-container `LXC.pm` `vm_stop`
 * runs `lxc-stop --nokill` unless `forceStop`, then dies "container did not stop"
 * (docs/proxmox-behaviour.md, RST-…). Tests mark such guests in `Simulator.ignoresShutdown`.
 */
import { perlTrue } from './guest.js';
import { TaskFailure, type TaskContext } from '../tasks.js';
import type { GuestFlavour } from './flavours.js';

/**
 * For a shutdown of a guest that ignores it: returns when the guest is to be stopped anyway
 * (`forceStop`, after logging what Proxmox logs), throws the task's failure otherwise.
 */
export function shutdownIgnored(flavour: GuestFlavour, forceStop: string | undefined, log: TaskContext): void {
  const force = forceStop !== undefined && perlTrue(forceStop);
  if (flavour.type === 'qemu') {
    if (!force) throw new TaskFailure('VM quit/powerdown failed - got timeout');
    log.log('VM still running - terminating now with SIGTERM');
    return;
  }
  if (!force) throw new TaskFailure('container did not stop');
}
