/**
 * One live guest as the spec document a person would write to adopt it: the values the planner
 * compares, in their canonical spec forms, with what was left out and why, what reaches the host,
 * pending values and locks said in notes. Pure: it is given what one read returned
 * (docs/proxmox-behaviour.md, IMP- rows).
 */
import { flavourOf, type GuestType } from '../guest-flavours.js';
import type { FirewallDocumentValue } from '../kinds/firewall/document.js';
import { hostAccessOf, isDiskKey, isNicKey, isOwnedOnlyWhenSet, isSensitiveKey } from '../key-rules.js';
import type { ListedGuest, ObservedGuest } from '../model.js';
import { effectiveConfig } from '../plan/desired-config.js';
import { DNS_NAME_RE, parsePropertyString, propertyValue } from '../property-string.js';
import { type DocumentValue, documentValue, specTags } from '../spec/live-forms.js';
import { classifyConfigKey } from '../spec/config-keys.js';
import { diskStorage } from '../spec/validate-specs.js';

export type { DocumentValue } from '../spec/live-forms.js';

export interface GuestDocument {
  kind: 'VM' | 'Container';
  name: string;
  cluster: string;
  node: string;
  vmid: number;
  adopt: true;
  /** A template: `template: true` on the document, never `config.template` (README "Templates in git"). */
  template?: true;
  /** The pool it is a member of (the pool-member kind's guest key). */
  pool?: string;
  /** Its HA resource's fields (the HA kind's guest key). */
  ha?: Record<string, string | number | boolean>;
  /** Its firewall file's sections that hold something (the firewall kind's guest key). */
  firewall?: Record<string, FirewallDocumentValue>;
  ignore?: string[];
  config: Record<string, DocumentValue>;
}

/** A guest turned into a document, with what a reader of the file must be told. */
export interface ImportedGuest {
  cluster: string;
  vmid: number;
  type: GuestType;
  document: GuestDocument;
  /** Comment lines, without the `# `. */
  notes: string[];
  /** What the notes say, in a few words each, for the command's report (`3 keys left out`). */
  remarks: string[];
  /** Storages of its disks and bridges of its NICs, for the cluster's naming contract. */
  storages: string[];
  bridges: string[];
}

/**
 * Keys Proxmox generates when it creates a guest (a new SMBIOS UUID, a new generation ID): owned
 * only when a spec pins them (`ownedWhenSet`), so leaving them out is no change.
 */
const GENERATED: Readonly<Record<GuestType, ReadonlySet<string>>> = {
  qemu: new Set(['smbios1', 'vmgenid']),
  lxc: new Set(),
};

/** What one guest read becomes: its document, or why it cannot be imported. */
export type GuestImport = { ok: true; guest: ImportedGuest } | { ok: false; reason: string };

/**
 * The document adopting a guest. Values are the effective configuration — the main section with
 * pending values on top and pending deletions removed — because that is what the planner compares
 * (`effectiveConfig`), so the plan shows no change; the notes say which values are still pending.
 */
export function importGuest(
  cluster: string,
  listed: ListedGuest,
  observed: ObservedGuest,
  ownerTag: string,
  /** Who imports it, for the file's first note. */
  by = '`pve-gitops import`',
): GuestImport {
  const type = observed.type;
  const flavour = flavourOf(type);
  const effective = effectiveConfig(observed.current, observed.pending, observed.pendingDelete);
  if (Object.keys(effective).length === 0) return { ok: false, reason: 'was read with an empty configuration' };
  const liveName = effective[flavour.nameKey] ?? listed.name;
  const ignore: string[] = [];
  let name = liveName;
  if (name === undefined || name === '') {
    // No name on the guest: the spec needs one, and must not write it onto the guest.
    name = `${flavour.resourcePrefix}-${observed.vmid}`;
    ignore.push(flavour.nameKey);
  } else if (!DNS_NAME_RE.test(name)) {
    return { ok: false, reason: `its name '${name}' is not a DNS name, which a spec's name must be; rename the guest first` };
  }

  const config: Record<string, DocumentValue> = {};
  const leftOut: { key: string; why: string }[] = [];
  const host: string[] = [];
  const storages = new Set<string>();
  const bridges = new Set<string>();
  let isTemplate = false;
  for (const key of orderedKeys(type, Object.keys(effective))) {
    const value = effective[key] ?? '';
    if (key === 'digest' || key === flavour.nameKey) continue;
    if (key === 'tags') {
      const tags = specTags(value, ownerTag);
      if (tags.length > 0) config.tags = tags;
      continue;
    }
    if (key === 'template') {
      // The document's `template: true`; as a config key, validate refuses it (Proxmox would set
      // the flag without converting the disks to base images).
      if (value === '1') isTemplate = true;
      continue;
    }
    if (GENERATED[type].has(key)) {
      leftOut.push({ key, why: 'Proxmox generates it when the guest is created; a spec owns it only when it pins it' });
      continue;
    }
    if (isSensitiveKey(key) && key !== 'sshkeys') {
      leftOut.push({ key, why: 'a secret: it never goes into git (Proxmox does not even return it)' });
      if (!isOwnedOnlyWhenSet(type, key)) ignore.push(key);
      continue;
    }
    const verdict = classifyConfigKey(type, key);
    if (verdict.kind !== 'option') {
      const finding = hostAccessOf(type, key, value);
      if (finding) host.push(`${key}: ${finding.reason} (only ${finding.requires} may set it)`);
      leftOut.push({ key, why: verdict.kind === 'server-managed' ? 'managed by Proxmox, not a setting' : 'not an option a spec may set' });
      continue;
    }
    const finding = hostAccessOf(type, key, value);
    if (finding) host.push(`${key}: ${finding.reason} (setting or changing it needs ${finding.requires})`);
    config[key] = documentValue(type, key, value);
    if (isDiskKey(type, key)) {
      const storage = diskStorage(type, value);
      if (storage !== undefined) storages.add(storage);
    }
    if (isNicKey(key)) {
      const bridge = propertyValue(parsePropertyString(value), 'bridge');
      if (bridge !== undefined) bridges.add(bridge);
    }
  }
  if (type === 'lxc' && effective.unprivileged === undefined) {
    const finding = hostAccessOf(type, 'unprivileged', '0');
    if (finding) host.push(`unprivileged is not set: ${finding.reason}`);
  }

  const notes = [`Imported by ${by} from cluster ${cluster}, ${flavour.proxmoxLabel} ${observed.vmid} on ${listed.node}.`];
  if (ignore.includes(flavour.nameKey))
    notes.push(`The guest has no ${flavour.nameKey}: this spec names it ${name} and leaves ${flavour.nameKey} alone (ignore).`);
  if (leftOut.length > 0) {
    notes.push('Left out:');
    for (const item of leftOut) notes.push(`  ${item.key}: ${item.why}.`);
  }
  if (host.length > 0) {
    notes.push("Reaches the host (a plan that changes these needs the server's allowHostAccess for the cluster):");
    for (const line of host) notes.push(`  ${line}`);
  }
  const pendingKeys = [...Object.keys(observed.pending).filter((k) => k !== 'digest'), ...observed.pendingDelete].sort();
  if (pendingKeys.length > 0) {
    notes.push(
      `Pending: ${pendingKeys.join(', ')} ${pendingKeys.length === 1 ? 'has a value' : 'have values'} queued for the next restart; this spec holds the values after it, as the plan compares them.`,
    );
  }
  const lock = observed.current.lock ?? listed.lock;
  if (lock !== undefined) {
    notes.push(
      `Locked (${lock}) when it was read: the values are those of that moment; import it again once the lock is gone if in doubt.`,
    );
  }
  const remarks = [
    ...(leftOut.length > 0 ? [`${leftOut.length} ${leftOut.length === 1 ? 'key' : 'keys'} left out`] : []),
    ...(host.length > 0 ? ['reaches the host'] : []),
    ...(pendingKeys.length > 0 ? ['pending values'] : []),
    ...(lock !== undefined ? [`locked (${lock})`] : []),
  ];
  const document: GuestDocument = {
    kind: flavour.documentKind,
    name,
    cluster,
    node: listed.node,
    vmid: observed.vmid,
    adopt: true,
    ...(isTemplate ? { template: true as const } : {}),
    ...(ignore.length > 0 ? { ignore: ignore.sort() } : {}),
    config,
  };
  return {
    ok: true,
    guest: { cluster, vmid: observed.vmid, type, document, notes, remarks, storages: [...storages].sort(), bridges: [...bridges].sort() },
  };
}

/** Where a key is written: what the guest is, then its disks, then its NICs, then the rest. */
function keyGroup(type: GuestType, key: string): number {
  if (FIRST.includes(key)) return 0;
  if (isDiskKey(type, key)) return 1;
  if (isNicKey(key)) return 2;
  return 3;
}

const FIRST = ['ostype', 'arch', 'template', 'unprivileged', 'machine', 'bios', 'cpu', 'sockets', 'cores', 'memory', 'balloon', 'swap'];

/** Keys in a fixed order, whatever order the read returned them in: the same guest, the same bytes. */
function orderedKeys(type: GuestType, keys: string[]): string[] {
  return [...keys].sort((a, b) => {
    const ga = keyGroup(type, a);
    const gb = keyGroup(type, b);
    if (ga !== gb) return ga - gb;
    if (ga === 0) return FIRST.indexOf(a) - FIRST.indexOf(b);
    return naturalCompare(a, b);
  });
}

/** `scsi2` before `scsi10`; plain code-unit order otherwise, the same on every machine. */
export function naturalCompare(a: string, b: string): number {
  const pa = /^(.*?)(\d+)$/.exec(a);
  const pb = /^(.*?)(\d+)$/.exec(b);
  if (pa && pb && pa[1] === pb[1]) return Number(pa[2]) - Number(pb[2]);
  return a < b ? -1 : a > b ? 1 : 0;
}
