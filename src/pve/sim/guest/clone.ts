/**
 * What the clone endpoints of both flavours share (qemu-server `API2/Qemu.pm` and pve-container
 * `API2/LXC.pm`, `clone_vm`; docs/proxmox-behaviour.md, QCL- and LCL- rows): the permission
 * expression checked before the handler, the checks of the target node and storage, the keys a
 * clone never copies, the new MAC of every NIC, the volume copy, and the one place where the guest
 * firewall file follows the clone. The order of the checks and what runs before or inside the
 * fork is each flavour's own.
 */
import { hasPrivilege, type Principal } from '../auth.js';
import type { RequestContext } from '../context.js';
import { DieError, ParamError, PermissionError } from '../errors.js';
import { optionFormat, parseOption, parseVolumeId, printPropertyString, randomMac } from '../property-format.js';
import { flavourOf, type GuestType } from '../../../core/guest-flavours.js';
import type { Guest } from './guest.js';
import { copyFirewall, dropFirewall } from '../kinds/firewall/state.js';

/**
 * `['and', ['perm', '/vms/{vmid}', ['VM.Clone']], ['or', ['perm', '/vms/{newid}', ['VM.Allocate']],
 * ['perm', '/pool/{pool}', ['VM.Allocate'], require_param => 'pool']]]`: the first part names what
 * failed, the `or` fails without details (pve-access-control `RPCEnvironment.pm`, `exec_api2_perm_check`).
 */
export function clonePermission(principal: Principal, params: Record<string, unknown>): void {
  const vmid = String(params.vmid);
  if (!hasPrivilege(principal, `/vms/${vmid}`, 'VM.Clone')) throw new PermissionError(`/vms/${vmid}, VM.Clone`);
  const pool = params.pool === undefined ? undefined : String(params.pool);
  if (hasPrivilege(principal, `/vms/${String(params.newid)}`, 'VM.Allocate')) return;
  if (pool !== undefined && hasPrivilege(principal, `/pool/${pool}`, 'VM.Allocate')) return;
  throw new PermissionError();
}

/** `target`, unless it is the node asked (`$target eq $localnode`): then no migration follows. */
export function cloneTarget(ctx: RequestContext, node: string): string | undefined {
  const target = ctx.params.target;
  if (target === undefined || target === node || target === 'localhost') return undefined;
  // `PVE::Cluster::check_node_exists`.
  if (!ctx.sim.nodes.includes(target)) throw new DieError(`no such cluster node '${target}'\n`);
  return target;
}

/**
 * The `storage` parameter's checks: configured and enabled on the node answering, holding guest
 * images (VMs only ask), and enabled on and shared with the node the clone goes to
 * (docs/proxmox-behaviour.md RHS-2).
 */
export function checkCloneStorage(
  ctx: RequestContext,
  storage: string | undefined,
  node: string,
  target: string | undefined,
  images: boolean,
): void {
  if (storage === undefined) return;
  const scfg = ctx.sim.volumes.storage(storage);
  if (!scfg) throw new DieError(`storage '${storage}' does not exist\n`);
  ctx.sim.volumes.checkOnNode(storage, node);
  if (images && !scfg.content.has('images')) throw new ParamError({ storage: `storage '${storage}' does not support vm images` });
  if (target !== undefined) ctx.sim.volumes.checkOnNode(storage, target);
  if (target !== undefined && !scfg.shared) throw new DieError(`can't clone to non-shared storage '${storage}'\n`);
}

/** Whether a volume id lives on a shared storage. */
export function onSharedStorage(ctx: RequestContext, volid: string): boolean {
  const id = parseVolumeId(volid);
  return id !== undefined && ctx.sim.volumes.storage(id.storage)?.shared === true;
}

/** A volume a template's conversion made a base image (`base-<vmid>-…`): the only kind a linked clone can use. */
export function isBaseVolume(volid: string): boolean {
  return /^(?:\d+\/)?base-\d+-/.test(parseVolumeId(volid)?.volname ?? '');
}

/**
 * A copy of `volid` for the clone `newid` on `storage` (default: the source's), the same size:
 * `clone_disk` / `copy_volume` for a full clone, `vdisk_clone` of the base image for a linked one.
 */
export function copyVolume(ctx: RequestContext, volid: string, newid: number, storage: string | undefined): string {
  const source = parseVolumeId(volid);
  const bytes = ctx.sim.volumes.size(volid) ?? 0;
  return ctx.sim.volumes.allocate(storage ?? source?.storage ?? 'local', newid, bytes);
}

/** A NIC with a fresh MAC (`random_ether_addr`): qemu's `macaddr` (printed as `model=MAC`), a container's `hwaddr`. */
export function withNewMac(type: GuestType, key: string, value: string): string {
  const format = optionFormat(type, key);
  const net = parseOption(type, key, value);
  if (!format || !net) return value;
  net[flavourOf(type).nic.macKey] = randomMac();
  return printPropertyString(format, net);
}

/**
 * `PVE::Firewall::clone_vmfw_conf($vmid, $newid)`: the guest's firewall file is copied to the
 * clone (docs/proxmox-behaviour.md, QCL and FW rows); `removeClonedFirewall` undoes it when the
 * clone fails.
 */
export function copyClonedFirewall(ctx: RequestContext, from: Guest, newid: number): void {
  copyFirewall(ctx.sim, from.vmid, newid);
}

/** `PVE::Firewall::remove_vmfw_conf($newid)`: a failed clone leaves no firewall file behind. */
export function removeClonedFirewall(ctx: RequestContext, newid: number): void {
  dropFirewall(ctx.sim, newid);
}
