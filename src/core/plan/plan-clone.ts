/**
 * The parts of a guest's plan that come from `create.clone` (docs/design.md#creating-guests-by-cloning):
 * which template on the cluster the spec names, the refusals Proxmox would answer the clone with,
 * the config the new guest has right after the clone as Proxmox copies it (qemu-server and
 * pve-container `clone_vm`; docs/proxmox-behaviour.md, QCL- and LCL- rows), and the clone step
 * itself. The changes the spec makes on top are planned like any update, against that config.
 * Pure.
 */
import { flavourOf, type GuestType } from '../guest-flavours.js';
import type { GuestSpec, ListedGuest, ObservedGuest, Operation } from '../model.js';
import { parsePropertyString, propertyValue } from '../property-string.js';

/** What the plan saw of the cluster for a clone: its listing, and the templates read in full. */
export interface CloneSourceSeen {
  listing: readonly ListedGuest[];
  guests: Readonly<Record<number, ObservedGuest>>;
}

/** A template resolved from the spec's `create.clone.template`. */
export interface CloneSource {
  vmid: number;
  node: string;
  name: string;
  config: Record<string, string>;
  status: string;
}

/** Keys `clone_vm` never copies (snapshot state, the running machine, unused volumes) or that Proxmox sets anew. */
const NOT_COPIED = /^(?:unused\d+|parent|snaptime|vmstate|snapstate|runningcpu|runningmachine|running-nets-host-mtu|template|lock|digest)$/;

/** Storages that are node-local on every default install: a template on them cannot be cloned to another node. */
function isLocalStorage(storage: string): boolean {
  return /^local(?:-lvm|-zfs|-btrfs)?$/.test(storage);
}

/** The volume ids of a config's disks and mount points, by key. */
function volumesOf(type: GuestType, config: Record<string, string>): [string, string][] {
  const flavour = flavourOf(type);
  const out: [string, string][] = [];
  for (const [key, value] of Object.entries(config)) {
    if (!flavour.diskKey.test(key)) continue;
    const parsed = parsePropertyString(value);
    const volume = parsed.head ?? propertyValue(parsed, type === 'qemu' ? 'file' : 'volume') ?? '';
    if (type === 'qemu' && propertyValue(parsed, 'media') === 'cdrom') continue;
    out.push([key, volume]);
  }
  return out;
}

/**
 * The template `create.clone.template` names on the cluster — by VMID when written as digits,
 * else by name — read in full, or why the clone cannot be planned.
 */
export function resolveCloneSource(spec: GuestSpec, seen: CloneSourceSeen | undefined): CloneSource | { error: string } {
  const wanted = spec.clone?.template ?? '';
  const noun = flavourOf(spec.type).noun;
  if (!seen) return { error: `create.clone: the template '${wanted}' was not looked up (re-run the plan)` };
  const nameKey = flavourOf(spec.type).nameKey;
  const byVmid = /^\d+$/.test(wanted);
  // A guest the listing shows without a name (published before it had one: the listing lags) is
  // matched by the name its config holds, when the observation read it.
  const named = (l: ListedGuest): boolean =>
    l.name === wanted || (l.name === undefined && seen.guests[l.vmid]?.current[nameKey] === wanted);
  const matches = seen.listing.filter((l) => (byVmid ? l.vmid === Number(wanted) : named(l)));
  const ofType = matches.filter((l) => l.type === spec.type);
  if (ofType.length === 0) {
    if (matches.length > 0)
      return { error: `create.clone: '${wanted}' is not a ${noun} template (VMID ${matches[0]?.vmid} is of another type)` };
    return { error: `create.clone: there is no template '${wanted}' on cluster '${spec.cluster}'` };
  }
  const templates = ofType.filter((l) => l.template === true);
  if (templates.length > 1) {
    return {
      error: `create.clone: ${templates.length} templates are named '${wanted}' (VMIDs ${templates.map((t) => t.vmid).join(', ')}); name it by VMID`,
    };
  }
  const listed = templates[0] ?? ofType[0];
  if (!listed) return { error: `create.clone: there is no template '${wanted}' on cluster '${spec.cluster}'` };
  const observed = seen.guests[listed.vmid];
  if (!observed) return { error: `create.clone: the template '${wanted}' (VMID ${listed.vmid}) could not be read` };
  const config: Record<string, string> = { ...observed.current };
  const full = spec.clone?.full === true;
  if (spec.type === 'lxc' && full && observed.status === 'running') {
    return {
      error: `create.clone: '${wanted}' is running, and Proxmox refuses a full clone of a running container ("Full clone of a running container is only possible from a snapshot")`,
    };
  }
  if (config.template !== '1') {
    return {
      error: `create.clone: '${wanted}' (VMID ${listed.vmid}) is not a template; convert it first (template: true in its spec) — a clone of a normal guest is always a full copy of a live system`,
    };
  }
  const volumes = volumesOf(spec.type, config);
  if (spec.type === 'lxc') {
    const bind = volumes.find(([, volume]) => volume.startsWith('/'));
    if (bind)
      return {
        error: `create.clone: '${wanted}' has a ${bind[1].startsWith('/dev/') ? 'device' : 'bind'} mount (${bind[0]}), which Proxmox cannot clone ("unable to clone mountpoint '${bind[0]}'")`,
      };
  }
  if (listed.node !== spec.node) {
    const local = volumes.find(([, volume]) => isLocalStorage(volume.split(':')[0] ?? ''));
    if (local) {
      const label = flavourOf(spec.type).proxmoxLabel;
      return {
        error: `create.clone: the template '${wanted}' is on ${listed.node} and its ${local[0]} is on local storage; Proxmox refuses the clone ("can't clone ${label} to node '${spec.node}' (${label} uses local storage)"): set node: ${listed.node}, or keep the template on shared storage`,
      };
    }
  }
  return { vmid: listed.vmid, node: listed.node, name: config[nameKey] ?? listed.name ?? wanted, config, status: observed.status };
}

/**
 * The config of the new guest right after the clone, as Proxmox copies it: every key but snapshot
 * state, unused volumes and `template`; each NIC with a new MAC (shown without one); the name
 * the clone call passes. The disks keep the template's volume names here; the clone's own ones
 * are Proxmox's choice and not compared.
 */
export function configAfterClone(spec: GuestSpec, source: CloneSource): Record<string, string> {
  const after: Record<string, string> = {};
  const nameKey = flavourOf(spec.type).nameKey;
  for (const [key, value] of Object.entries(source.config)) {
    if (NOT_COPIED.test(key)) continue;
    after[key] = /^net\d+$/.test(key) ? withoutMac(spec.type, value) : value;
  }
  after[nameKey] = spec.config[nameKey] ?? spec.name;
  // A full clone copies every disk, to `storage` when given, as a volume of the new guest
  // (docs/design.md, "Creating guests by cloning"): the plan must not move it again.
  if (spec.clone?.full === true) {
    for (const [key, volume] of volumesOf(spec.type, after)) {
      const colon = volume.indexOf(':');
      if (colon <= 0 || volume.startsWith('/')) continue;
      const storage = spec.clone.storage ?? volume.slice(0, colon);
      const volname = volume.slice(colon + 1).replace(/^((?:\d+\/)?)(?:base|vm)-\d+-/, `$1vm-${spec.vmid}-`);
      after[key] = (after[key] ?? '').replace(volume, `${storage}:${volname}`);
    }
  }
  return after;
}

/** A NIC value without its MAC (`virtio=BC:…` becomes `virtio`, `hwaddr=…` goes). */
export function withoutMac(type: GuestType, value: string): string {
  if (type === 'lxc')
    return value
      .split(',')
      .filter((part) => !part.startsWith('hwaddr='))
      .join(',');
  return value
    .split(',')
    .map((part) => part.replace(/^([a-z0-9-]+)=(?:[0-9A-F]{2}:){5}[0-9A-F]{2}$/i, '$1'))
    .filter((part) => !part.startsWith('macaddr='))
    .join(',');
}

/** The clone step: to the spec's node, the name, pool and full-clone options of the spec. */
export function cloneOperation(spec: GuestSpec, source: CloneSource): Extract<Operation, { op: 'clone' }> {
  const clone = spec.clone;
  const params: Record<string, string> = {
    [flavourOf(spec.type).nameKey]: spec.config[flavourOf(spec.type).nameKey] ?? spec.name,
  };
  if (spec.createOptions?.pool) params.pool = spec.createOptions.pool;
  if (clone?.full !== undefined) params.full = clone.full ? '1' : '0';
  if (clone?.storage) params.storage = clone.storage;
  if (clone?.format) params.format = clone.format;
  if (source.node !== spec.node) params.target = spec.node;
  return {
    op: 'clone',
    node: spec.node,
    source: { vmid: source.vmid, node: source.node, name: source.name },
    full: clone?.full === true,
    config: source.config,
    params,
  };
}

/** The template a recorded clone step saw, for recomputing that step at apply time (the template need not be read again). */
export function sourceSeenFromClone(type: GuestType, op: Extract<Operation, { op: 'clone' }>): CloneSourceSeen {
  const listed: ListedGuest = { vmid: op.source.vmid, type, node: op.source.node, name: op.source.name, template: true, status: 'stopped' };
  const observed: ObservedGuest = {
    vmid: op.source.vmid,
    type,
    node: op.source.node,
    status: 'stopped',
    digest: '',
    current: { ...op.config },
    pending: {},
    pendingDelete: [],
  };
  return { listing: [listed], guests: { [op.source.vmid]: observed } };
}

/**
 * Keys a clone owns (docs/design.md#keys-after-a-clone): those its spec sets, its name and tags,
 * and those the base branch's spec set (so a key the spec stops setting is deleted, as on any
 * guest). Everything else came from the template and stays as the clone got it: a template that
 * changes later changes no clone.
 */
export function cloneOwns(spec: GuestSpec, previous: GuestSpec | undefined, key: string): boolean {
  if (key in spec.config || key === flavourOf(spec.type).nameKey || key === 'tags') return true;
  return previous?.clone !== undefined && key in previous.config;
}

/**
 * Whether a guest's config is a clone still being made: a VM's temporary file (`lock: clone` and
 * nothing but the comment `clone_vm` writes), or a container holding `lock: create` under the
 * hostname the clone call gave it.
 */
export function cloneInFlight(current: Readonly<Record<string, string>>, nameKey: string, name: string): boolean {
  if (current.lock === 'clone') return Object.keys(current).every((key) => key === 'lock' || key === 'description');
  return current.lock === 'create' && current[nameKey] === name;
}
