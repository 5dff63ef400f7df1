/**
 * `POST …/status/{start|stop|shutdown}` for both flavours, with the qemu/lxc split of
 * docs/proxmox-api.md#power-endpoints read from the flavour table: task names (`qmstart`,
 * `vzstart`…), which lock a start ignores, whether the node is asked before the task is forked,
 * and whether stopping applies pending values.
 */
import { regenerateCloudinit } from './cloudinit.js';
import { flag, param, type HandlerResult, type RequestContext } from '../context.js';
import { underConfigLock, whenElapsed } from '../config-lock.js';
import { DieError, ParamError } from '../errors.js';
import { perlTrue } from './guest.js';
import { parseOption } from '../property-format.js';
import { TaskFailure, type TaskContext } from '../tasks.js';
import { applyAllPending } from '../config-update/apply-all-pending.js';
import type { GuestFlavour } from './flavours.js';
import { warnIgnoredMtu } from './ignored-mtu.js';
import { guestHere } from './path-guest.js';
import { guestTask, missingConfig } from './task.js';
import { haPower } from '../kinds/ha/power.js';
import { shutdownIgnored } from './shutdown-timeout.js';

/** The power actions that share one handler; reboot is each kind's own. */
type PowerAction = 'start' | 'stop' | 'shutdown';

/** Root-only parameters of the power endpoints (tokens are never root@pam). */
const ROOT_ONLY_POWER = [
  'skiplock',
  'migratedfrom',
  'stateuri',
  'targetstorage',
  'force-cpu',
  'migration_type',
  'migration_network',
  'nets-host-mtu',
  'with-conntrack-state',
  'keepActive',
];

/** The handler of one power action for one flavour. */
export function power(flavour: GuestFlavour, action: PowerAction) {
  return (ctx: RequestContext): HandlerResult => {
    // Perl checks `if $param && $authuser ne 'root@pam'`: a false value (`skiplock=0`) passes.
    for (const name of ROOT_ONLY_POWER) {
      if (flag(ctx, name)) throw new ParamError({ [name]: 'Only root may use this option.' });
    }
    const node = param(ctx, 'node');
    const vmid = Number(param(ctx, 'vmid'));
    if (flavour.powerChecksRunningFirst) {
      // `check_running` asks the node, before any config is loaded: a guest that does not
      // exist here is simply not running.
      const running = guestHere(ctx, flavour.type, node, vmid)?.running === true;
      if (action === 'start' && running) throw new DieError(`${flavour.label} ${vmid} already running\n`);
      if (action !== 'start' && !running) throw new DieError(`${flavour.label} ${vmid} not running\n`);
    }
    const ha = haPower(ctx, flavour, action, node, vmid);
    if (ha) return ha;
    return guestTask(ctx, flavour, node, vmid, `${flavour.taskPrefix}${action}`, powerWorker(ctx, flavour, action, node, vmid));
  };
}

/** A start task as the API's `vm_start` forks it when a create task calls it, as the same user. */
export function startTaskOf(ctx: RequestContext, flavour: GuestFlavour, node: string, vmid: number): void {
  const worker = underConfigLock(ctx.sim.configLocks, flavour.type, vmid, whenElapsed(powerWorker(ctx, flavour, 'start', node, vmid)));
  ctx.sim.tasks.start(node, `${flavour.taskPrefix}start`, String(vmid), ctx.principal.token.id, worker, { atStart: true });
}

/**
 * qemu-server `config_to_command`: a VM cannot start with more vCPUs (sockets × cores) than its
 * node has (docs/proxmox-behaviour.md RHS-4).
 */
function checkVcpus(config: ReadonlyMap<string, string>, cpus: number): void {
  const sockets = Number(config.get('sockets') ?? config.get('smp') ?? 1) || 1;
  const cores = Number(config.get('cores') ?? 1) || 1;
  if (cpus < sockets * cores) throw new TaskFailure(`MAX ${cpus} vcpus allowed per VM on this node`);
}

/**
 * qemu-server `print_netdevice_full`: a VirtIO NIC on a bridge reads the bridge's MTU, and a
 * bridge the node lacks fails the start (pve-common `Network.pm`, `read_bridge_mtu`;
 * docs/proxmox-behaviour.md RHS-5).
 */
function checkBridges(config: ReadonlyMap<string, string>, exists: (bridge: string) => boolean): void {
  for (const [key, value] of [...config].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))) {
    if (!/^net\d+$/.test(key)) continue;
    const net = parseOption('qemu', key, value);
    if (net?.model === 'virtio' && net.bridge && !exists(net.bridge)) throw new TaskFailure(`bridge '${net.bridge}' does not exist`);
  }
}

/** The worker of a power task: what runs under the config lock once the task is forked. */
function powerWorker(
  ctx: RequestContext,
  flavour: GuestFlavour,
  action: PowerAction,
  node: string,
  vmid: number,
): (log: TaskContext) => void {
  const { label, type } = flavour;
  return (log) => {
    // The worker loads the config: a missing guest fails in the task.
    const guest = guestHere(ctx, type, node, vmid);
    if (!guest) throw missingConfig(flavour, node, vmid);
    if (action === 'start') {
      // Template first, then the lock (a suspended VM or a mounted CT may start), then running.
      if (perlTrue(guest.main.get('template'))) throw new TaskFailure(`you can't start a ${flavour.templateWord} if it's a template`);
      if (flavour.startResumesBackup && guest.lock === 'backup' && guest.running) return;
      if (guest.lock && guest.lock !== flavour.startExemptLock) throw new TaskFailure(`${label} is locked (${guest.lock})`);
      if (guest.running) throw new TaskFailure(`${label} ${vmid} already running`);
      applyAllPending(ctx.sim, guest);
      // `vm_start` generates the cloud-init drive again (docs/proxmox-behaviour.md, CIN- rows).
      if (type === 'qemu') regenerateCloudinit(guest);
      if (type === 'qemu') {
        checkVcpus(guest.main, ctx.sim.nodeCpus(node));
        checkBridges(guest.main, (bridge) => ctx.sim.hasBridge(node, bridge));
      }
      if (flavour.startWarnsIgnoredMtu) warnIgnoredMtu(guest, log);
      guest.setRunning(true);
      return;
    }
    if (guest.lock) throw new TaskFailure(`${label} is locked (${guest.lock})`);
    if (!guest.running) return; // stopping a stopped guest is fine
    if (flavour.shutdownLogs && action === 'shutdown') log.log(`VM ${vmid} shutting down`);
    if (action === 'shutdown' && ctx.sim.ignoresShutdown.has(vmid)) shutdownIgnored(flavour, ctx.params.forceStop, log);
    if (flavour.stopAppliesPending) applyAllPending(ctx.sim, guest);
    guest.setRunning(false);
  };
}
