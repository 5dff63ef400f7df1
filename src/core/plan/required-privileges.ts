/**
 * Which Proxmox privileges the specs of one cluster need, and which of them a token lacks, from
 * its effective permissions (`GET /access/permissions`). Pure: `check` fetches, this decides.
 *
 * Sources (see docs/identity-and-privileges.md): qemu-server `API2/Qemu.pm` (`create_vm`:
 * VM.Allocate on /vms/N or the pool; `$check_vm_modify_config_perm`; `destroy_vm`: VM.Allocate;
 * `vm_start`/`vm_shutdown`: VM.PowerMgmt; `QemuServer.pm` `check_bridge_access`: SDN.Use),
 * pve-container `API2/LXC.pm` and `LXC.pm` (`check_ct_modify_config_perm`), pve-guest-common
 * `GuestHelpers.pm` (`check_vnet_access`), pve-storage (Datastore.AllocateSpace), and
 * pve-access-control `RPCEnvironment.pm` (`get_effective_permissions`, `compile_acl_path`).
 */
import { snapshotPolicy } from './plan-snapshot.js';
import { effectiveRestart } from '../spec/restart-policy.js';
import { flavourOf } from '../guest-flavours.js';
import { isDiskKey, isNicKey } from '../key-rules.js';
import type { ClusterSpec, GuestSpec } from '../model.js';
import { parsePropertyString, propertyValue } from '../property-string.js';

/** `GET /access/permissions`: path → privilege → propagate (1: also below the path). */
export type PermissionTree = Readonly<Record<string, Readonly<Record<string, number | boolean>>>>;

/** One privilege needed on one ACL path, and why. */
interface RequiredPrivilege {
  path: string;
  privilege: string;
  why: string;
  /** Other paths that grant the same (a pool for VM.Allocate). */
  orOn?: string[];
}

/** What a token lacks: one privilege, the paths it is missing on, and what needs it. */
interface MissingPrivilege {
  privilege: string;
  paths: string[];
  why: string;
}

const VM_CONFIG: Record<string, string> = {
  'VM.Config.Disk': 'to change disks',
  'VM.Config.CPU': 'to change CPU options',
  'VM.Config.Memory': 'to change memory',
  'VM.Config.Network': 'to change network devices',
  'VM.Config.Options': 'to change other options: name, tags, onboot, …',
};

/** `STORAGE:…` of a disk value that allocates or names a volume on a storage. */
function diskStorage(spec: GuestSpec, value: string): string | undefined {
  const parsed = parsePropertyString(value);
  if (propertyValue(parsed, 'media') === 'cdrom') return undefined;
  const volume = parsed.head ?? propertyValue(parsed, flavourOf(spec.type).volumeKey);
  const match = volume === undefined ? null : /^([a-z][a-z0-9._-]*[a-z0-9]):/i.exec(volume);
  return match?.[1];
}

/** A cluster's defaults that change what a guest's apply needs (its Cluster document). */
export type ClusterPolicies = Partial<Pick<ClusterSpec, 'restart' | 'snapshot'>>;

/**
 * The privileges apply needs for these guests (one cluster's specs): reading, configuring,
 * creating and destroying each guest on `/vms/N`, power management where power is managed, and
 * space on every storage a disk is allocated on. `read` asks only what a plan needs (VM.Audit).
 */
export function requiredPrivileges(
  guests: readonly GuestSpec[],
  mode: 'apply' | 'read',
  clusters?: ReadonlyMap<string, ClusterPolicies>,
): RequiredPrivilege[] {
  const needed: RequiredPrivilege[] = [];
  const storages = new Set<string>();
  for (const spec of guests) {
    const path = `/vms/${spec.vmid}`;
    needed.push({ path, privilege: 'VM.Audit', why: 'to read guests' });
    if (mode === 'read') continue;
    const pool = spec.createOptions?.pool;
    needed.push({
      path,
      privilege: 'VM.Allocate',
      why: spec.state === 'absent' ? 'to destroy guests' : 'to create and destroy guests',
      ...(pool ? { orOn: [`/pool/${pool}`] } : {}),
    });
    if (spec.state === 'absent') {
      needed.push({ path, privilege: 'VM.PowerMgmt', why: 'to stop guests before destroying them' });
      continue;
    }
    for (const [privilege, why] of Object.entries(VM_CONFIG)) needed.push({ path, privilege, why });
    for (const extra of flavourOf(spec.type).extraConfigPrivileges) {
      if (Object.keys(spec.config).some((k) => extra.keys.test(k))) needed.push({ path, privilege: extra.privilege, why: extra.why });
    }
    if (spec.power !== 'ignore') needed.push({ path, privilege: 'VM.PowerMgmt', why: 'to start and stop guests' });
    const restart = effectiveRestart(spec.restart, clusters?.get(spec.cluster)?.restart).policy;
    if (restart !== 'never')
      needed.push({ path, privilege: 'VM.PowerMgmt', why: `to restart guests whose changes are pending (restart: ${restart})` });
    const snapshot = snapshotPolicy(spec, clusters?.get(spec.cluster));
    if (snapshot !== 'never')
      needed.push({ path, privilege: 'VM.Snapshot', why: `to snapshot guests before their apply (snapshot: ${snapshot})` });
    // `clone_vm`: VM.Clone on the template (named by VMID here; a name is resolved by the plan).
    const template = spec.clone?.template;
    if (template !== undefined && /^\d+$/.test(template)) {
      needed.push({ path: `/vms/${template}`, privilege: 'VM.Clone', why: 'to clone guests from templates' });
    }
    if (spec.clone?.storage) storages.add(spec.clone.storage);
    if (spec.config.startup !== undefined)
      needed.push({ path: '/', privilege: 'Sys.Modify', why: 'to set a startup order, which changes host behaviour' });
    for (const [key, value] of Object.entries(spec.config)) {
      if (isNicKey(key)) {
        // check_bridge_access → check_vnet_access: SDN.Use on the bridge's zone path, or the VLAN below it.
        const ps = parsePropertyString(value);
        const bridge = propertyValue(ps, 'bridge');
        if (bridge === undefined) continue;
        const zone = `/sdn/zones/localnetwork/${bridge}`;
        const tag = propertyValue(ps, 'tag');
        needed.push({ path: zone, privilege: 'SDN.Use', why: 'to connect NICs to bridges', ...(tag ? { orOn: [`${zone}/${tag}`] } : {}) });
        continue;
      }
      if (!isDiskKey(spec.type, key)) continue;
      const storage = diskStorage(spec, value);
      if (storage !== undefined) storages.add(storage);
    }
  }
  for (const storage of [...storages].sort()) {
    needed.push({ path: `/storage/${storage}`, privilege: 'Datastore.AllocateSpace', why: 'to allocate disks' });
  }
  return needed;
}

/**
 * The privileges a token holds on `path`: the path's own entry when the tree lists it (every ACL
 * path and every pool member is listed), else what propagates from the nearest listed ancestor.
 */
export function privilegesOn(tree: PermissionTree, path: string): Set<string> {
  const own = tree[path];
  if (own) return new Set(Object.keys(own));
  for (let parent = parentPath(path); parent !== undefined; parent = parentPath(parent)) {
    const entry = tree[parent];
    if (entry)
      return new Set(
        Object.entries(entry)
          .filter(([, propagate]) => Number(propagate) === 1)
          .map(([p]) => p),
      );
  }
  return new Set();
}

function parentPath(path: string): string | undefined {
  if (path === '/') return undefined;
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

/** What a token lacks of `needed`, one entry per privilege, paths sorted. */
export function missingPrivileges(tree: PermissionTree, needed: readonly RequiredPrivilege[]): MissingPrivilege[] {
  const missing = new Map<string, MissingPrivilege>();
  const cache = new Map<string, Set<string>>();
  const holds = (path: string, privilege: string): boolean => {
    let privileges = cache.get(path);
    if (!privileges) {
      privileges = privilegesOn(tree, path);
      cache.set(path, privileges);
    }
    return privileges.has(privilege);
  };
  for (const need of needed) {
    if (holds(need.path, need.privilege) || need.orOn?.some((p) => holds(p, need.privilege))) continue;
    const entry = missing.get(need.privilege) ?? { privilege: need.privilege, paths: [], why: need.why };
    if (!entry.paths.includes(need.path)) entry.paths.push(need.path);
    missing.set(need.privilege, entry);
  }
  return [...missing.values()].map((m) => ({ ...m, paths: m.paths.sort() }));
}

/** `VM.PowerMgmt on /vms/100101, /vms/100102 and 3 more (to start and stop guests)`. */
export function describeMissing(m: MissingPrivilege, shown = 3): string {
  const paths = m.paths.slice(0, shown).join(', ');
  const more = m.paths.length > shown ? ` and ${m.paths.length - shown} more` : '';
  return `${m.privilege} on ${paths}${more} (${m.why})`;
}
