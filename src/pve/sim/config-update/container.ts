/**
 * A container's config update with pve-container's semantics (docs/proxmox-api.md#config-updates):
 * the synchronous checks of `update_vm`, then `update_pct_config` with its hotplug or apply step
 * under the config lock; and the mount point allocation, NIC and list normalisation a create
 * shares with it.
 */
import { LIVE, LXC_FASTPLUG, lxcHotplugDelete, lxcHotplugSet } from '../../../core/hotplug.js';
import { normaliseTags } from '../../../core/property-string.js';
import { splitList } from '../../../core/proxmox-params.js';
import { DieError, ParamError } from '../errors.js';
import { perlTrue, type Guest } from '../guest/guest.js';
import {
  formatSize,
  isLxcMount,
  optionFormat,
  parseAllocation,
  parseOption,
  parseVolumeId,
  printPropertyString,
  randomMac,
} from '../property-format.js';
import { checkLxcOptionPermissions } from '../permissions.js';
import {
  addToPendingDelete,
  addUnusedVolume,
  checkProtection,
  cleanupPending,
  optionExists,
  pendingDeletes,
  removeFromPendingDelete,
  writeIfChanged,
  type ConfigUpdate,
  type PreparedUpdate,
  type UpdateActor,
  type UpdateEnv,
  type UpdateOutcome,
} from './common.js';

/** `parse_lxc_network` + `print_lxc_network`: `type=veth` and a MAC address are always set. */
export function printLxcNet(value: string): string {
  const format = optionFormat('lxc', 'net0');
  const net = parseOption('lxc', 'net0', value);
  if (!format || !net) return value;
  net.type = 'veth';
  net.hwaddr ??= randomMac();
  return printPropertyString(format, net);
}

/** `check_lock` then `assert_if_modified` for containers (docs/proxmox-api.md#order-of-checks). */
export function checkLxcConfig(guest: Guest, digest: string | undefined): void {
  if (guest.lock) throw new DieError(`CT is locked (${guest.lock})\n`);
  if (digest && digest !== guest.digest) {
    throw new DieError('detected modified configuration - file changed by other user? Try again.\n');
  }
}

/**
 * `write_pct_config` refuses a line feed in any value but the description, in every section
 * (pve-container `LXC/Config.pm`, `write_pct_config`).
 */
export function assertLxcWritable(sections: Iterable<Map<string, string>>): void {
  for (const values of sections) {
    for (const key of [...values.keys()].sort()) {
      if (key !== 'description' && (values.get(key) as string).includes('\n')) {
        throw new DieError(`detected invalid newline inside property '${key}'\n`);
      }
    }
  }
}

/** `verify_nameserver_list` / `verify_searchdomain_list`: a container stores the list space-separated. */
export function normaliseLxcList(value: string): string {
  return splitList(value).join(' ');
}

/** The synchronous part of lxc's `update_vm` before the config lock. */
export function prepareLxcUpdate(update: ConfigUpdate, actor: UpdateActor = {}): PreparedUpdate {
  const set = new Map<string, string>();
  for (const key of Object.keys(update.set).sort()) set.set(key, update.set[key] as string);
  if (set.size === 0 && update.delete === undefined && update.revert === undefined) {
    throw new DieError('no options specified\n');
  }
  const logParts: string[] = [];
  for (const [k, v] of set) logParts.push(`-${k}`, v);
  if (update.delete !== undefined) logParts.push('-delete', update.delete);
  return {
    type: 'lxc',
    set,
    deletes: splitList(update.delete ?? ''),
    revert: splitList(update.revert ?? ''),
    force: false,
    ...(update.digest ? { digest: update.digest } : {}),
    skiplock: false,
    logLine: logParts.join(' '),
    ...(actor.principal ? { principal: actor.principal } : {}),
  };
}

/**
 * What lxc's `update_vm` checks inside the lock, after the lock and digest checks: permissions
 * for the deletions and reverts (`check_ct_modify_config_perm`), the revert/delete lists, then
 * permissions for the options set.
 */
export function checkLxcUpdateLists(update: PreparedUpdate, guest: Guest): void {
  const principal = update.principal;
  const unprivileged = perlTrue(guest.main.get('unprivileged'));
  const none = new Map<string, string>();
  if (principal) {
    checkLxcOptionPermissions(principal, guest.vmid, guest.main, none, update.deletes, unprivileged);
    checkLxcOptionPermissions(principal, guest.vmid, guest.main, none, update.revert, unprivileged);
  }
  for (const opt of update.revert) {
    if (!optionExists('lxc', opt)) throw new ParamError({ revert: `unknown option '${opt}'` });
    if (update.set.has(opt)) throw new ParamError({ revert: `you can't use '-${opt}' and '-revert ${opt}' at the same time` });
  }
  for (const opt of update.deletes) {
    if (!optionExists('lxc', opt)) throw new ParamError({ delete: `unknown option '${opt}'` });
    if (update.set.has(opt)) throw new ParamError({ delete: `you can't use '-${opt}' and -delete ${opt}' at the same time` });
    if (update.revert.includes(opt)) {
      throw new ParamError({ delete: `you can't use '-delete ${opt}' and '-revert ${opt}' at the same time` });
    }
  }
  if (principal) checkLxcOptionPermissions(principal, guest.vmid, guest.main, update.set, [], unprivileged);
}

/** Allocates a new container volume (`storage:8` → `storage:vm-<id>-disk-<n>,size=8G`). */
function applyPendingMountpoint(env: UpdateEnv, guest: Guest, opt: string, value: string): string {
  const format = optionFormat('lxc', opt);
  const mp = parseOption('lxc', opt, value);
  if (!format || !mp) return value;
  const alloc = parseAllocation(mp.volume ?? '');
  if (alloc) {
    const bytes = Math.round(alloc.gib * 1024 ** 3);
    env.volumes.checkStorage(alloc.storage);
    // pve-container `alloc_disk` (docs/proxmox-behaviour.md RHS-3).
    if (!env.volumes.storage(alloc.storage)?.content.has('rootdir')) {
      throw new DieError(`content type 'rootdir' is not available or configured on storage '${alloc.storage}'\n`);
    }
    mp.volume = env.volumes.allocate(alloc.storage, guest.vmid, bytes, guest.node);
    mp.size = formatSize(bytes);
  }
  const old = guest.main.get(opt);
  if (old !== undefined) {
    const oldVolume = parseOption('lxc', opt, old)?.volume;
    if (oldVolume && oldVolume !== mp.volume && parseVolumeId(oldVolume)) addUnusedVolume(guest, oldVolume);
  }
  return printPropertyString(format, mp);
}

/** LXC `vmconfig_hotplug_pending`. */
function lxcHotplugPending(env: UpdateEnv, guest: Guest, selection: Set<string>): void {
  for (const [key, value] of [...guest.pending]) {
    if (key !== 'delete' && LXC_FASTPLUG.has(key)) {
      guest.main.set(key, value);
      guest.pending.delete(key);
    }
  }
  const deletes = pendingDeletes(guest);
  for (const opt of [...deletes.keys()].sort()) {
    if (!selection.has(opt)) continue;
    if (lxcHotplugDelete(opt) !== LIVE) continue;
    if (/^unused\d+$/.test(opt)) env.volumes.free(guest.main.get(opt) ?? '');
    guest.main.delete(opt);
    removeFromPendingDelete(guest, opt);
  }
  for (const opt of [...guest.pending.keys()].sort()) {
    if (opt === 'delete' || !selection.has(opt)) continue;
    let value = guest.pending.get(opt) as string;
    if (lxcHotplugSet(opt, guest.main.get(opt)) !== LIVE) continue;
    if (/^mp\d+$/.test(opt)) value = applyPendingMountpoint(env, guest, opt, value);
    guest.main.set(opt, value);
    guest.pending.delete(opt);
  }
}

/** LXC `vmconfig_apply_pending`; `selection` undefined applies everything (start). */
export function lxcApplyPending(env: UpdateEnv, guest: Guest, selection?: Set<string>): void {
  const deletes = pendingDeletes(guest);
  for (const opt of [...deletes.keys()].sort()) {
    if (selection && !selection.has(opt)) continue;
    const current = guest.main.get(opt);
    if (/^mp\d+$/.test(opt) && current !== undefined) {
      const volume = parseOption('lxc', opt, current)?.volume;
      if (volume && parseVolumeId(volume)) addUnusedVolume(guest, volume);
    } else if (/^unused\d+$/.test(opt) && current !== undefined) {
      env.volumes.free(current);
    }
    guest.main.delete(opt);
    removeFromPendingDelete(guest, opt);
  }
  cleanupPending(guest);
  for (const opt of [...guest.pending.keys()].sort()) {
    if (opt === 'delete' || (selection && !selection.has(opt))) continue;
    let value = guest.pending.get(opt) as string;
    if (isLxcMount(opt)) value = applyPendingMountpoint(env, guest, opt, value);
    guest.main.set(opt, value);
    guest.pending.delete(opt);
  }
}

/** LXC `update_pct_config` + hotplug/apply, under the config lock. */
export function applyLxcUpdate(env: UpdateEnv, guest: Guest, update: PreparedUpdate): UpdateOutcome {
  const warnings: string[] = [];
  writeIfChanged(
    guest,
    () => {
      for (const opt of update.revert) {
        guest.pending.delete(opt);
        removeFromPendingDelete(guest, opt);
      }
      const modified = new Set<string>();
      for (const opt of update.deletes) {
        if (!guest.main.has(opt) && !guest.pending.has(opt)) {
          warnings.push(`cannot delete '${opt}' - not set in current configuration!`);
          continue;
        }
        modified.add(opt);
        if (opt === 'memory' || opt === 'rootfs' || opt === 'ostype') throw new DieError(`unable to delete required option '${opt}'\n`);
        if (/^(unused|mp)\d+$/.test(opt)) checkProtection(guest, `can't remove CT ${guest.vmid} drive '${opt}'`);
        if (opt === 'unprivileged') throw new DieError(`unable to delete read-only option: '${opt}'\n`);
        addToPendingDelete(guest, opt, false);
      }
      for (const [opt, raw] of update.set) {
        modified.add(opt);
        let value = raw;
        if (isLxcMount(opt)) checkProtection(guest, `can't update CT ${guest.vmid} drive '${opt}'`);
        else if (opt === 'unprivileged') throw new DieError(`unable to modify read-only option: '${opt}'\n`);
        else if (opt === 'tags') value = normaliseTags(value);
        else if (opt === 'nameserver' || opt === 'searchdomain') value = normaliseLxcList(value);
        else if (/^net\d+$/.test(opt)) value = printLxcNet(value);
        guest.pending.set(opt, value);
        removeFromPendingDelete(guest, opt);
      }
      cleanupPending(guest);
      if (guest.running) lxcHotplugPending(env, guest, modified);
      else lxcApplyPending(env, guest, modified);
      assertLxcWritable([guest.main, guest.pending, ...[...guest.config.snapshots.values()].map((s) => s.values)]);
    },
    'atomic',
  );
  return { errors: {}, warnings };
}
