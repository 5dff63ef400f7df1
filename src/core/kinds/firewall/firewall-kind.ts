/**
 * The firewall kind: a guest's own firewall file (pve-firewall, `/etc/pve/firewall/<vmid>.fw`),
 * written as a top-level `firewall:` on VM and Container documents (no document of its own), the
 * same shape as a guest's `ha:`. Absent: the firewall is not managed by the spec. Its syntax and
 * what a section left out means are in `spec.ts`; the README shows it.
 *
 * Planned per guest in the phase after guests (each item follows its guest's item), only for
 * guests that declare `firewall:`. Observe reads the file's four sections of each such guest; the
 * plan compares them with the spec as a reviewer reads rules (`plan.ts`, `rules-diff.ts`); apply
 * reads first, refuses (`conflict`) what moved since the review, and writes with the digests
 * Proxmox checks (`execute.ts`). Proxmox's side: docs/proxmox-behaviour.md, FW-1….
 */
import { z } from 'zod';
import type { GuestPlan, GuestSpec, ObjectOperation, ObjectPlan, SpecSet } from '../../model.js';
import { PermissionDeniedError } from '../../port-errors.js';
import { type KindError, type KindObserveInput, type KindPlanInput, type ObjectKind, SAMPLE_CLUSTER } from '../kind.js';
import { declaresGuestKey, planGuestParts } from '../guest-part.js';
import { item } from '../object-item.js';
import { guestKeyText, keyText, resourceKey } from '../resource-key.js';
import { executeFirewall, readManaged } from './execute.js';
import { driftOf, firewallChanges } from './plan.js';
import type { FirewallPort } from './port.js';
import { FirewallKey, missingReferences, wantedState } from './spec.js';
import { aliasText, type FirewallState, ipsetText, managedPart, ruleText, SECTIONS } from './state.js';

/** The registry name, also the kind part of its keys (`lab/firewall/100`). */
export const FIREWALL_KIND = 'firewall';

export const FIREWALL_OPERATIONS = [
  'set-fw-options',
  'add-fw-alias',
  'change-fw-alias',
  'remove-fw-alias',
  'add-fw-ipset',
  'change-fw-ipset',
  'remove-fw-ipset',
  'add-fw-rule',
  'change-fw-rule',
  'move-fw-rule',
  'remove-fw-rule',
] as const;

/** One guest as observe found it. */
export interface FirewallGuestObserved {
  node: string;
  type: 'qemu' | 'lxc';
  /** Every section as read; absent with `error`. */
  live?: FirewallState;
  error?: string;
}

/** What observe read for one cluster: the guests that declare `firewall:`, by VMID. */
export interface FirewallObserved {
  guests: Record<string, FirewallGuestObserved>;
  /** Why the guests could not be located. */
  error?: string;
}

/** The key of a guest's firewall item (`lab/firewall/100`). */
export function firewallKey(cluster: string, vmid: number): string {
  return keyText(resourceKey(cluster, FIREWALL_KIND, vmid));
}

const managed = declaresGuestKey('firewall');

function onCluster(guests: readonly GuestSpec[], cluster: string): GuestSpec[] {
  return guests.filter((g) => g.cluster === cluster && managed(g) && g.state === 'present');
}

function validate(specs: SpecSet): KindError[] {
  // A value its schema refused was reported by the loader already.
  return specs.guests
    .filter((guest) => managed(guest) && FirewallKey.safeParse(guest.refs?.firewall).success)
    .flatMap((guest) => missingReferences(wantedState(guest.refs?.firewall)).map((message) => ({ at: guest.source, message })));
}

const ALL_SECTIONS: FirewallState = { options: {}, aliases: {}, ipsets: {}, rules: [] };

function readError(vmid: number, err: unknown): string {
  if (err instanceof PermissionDeniedError)
    return `cannot read the firewall of guest ${vmid}: the token lacks VM.Audit on /vms/${vmid} (${err.message})`;
  return `cannot read the firewall of guest ${vmid}: ${err instanceof Error ? err.message : String(err)}`;
}

async function observe(port: FirewallPort, input: KindObserveInput): Promise<FirewallObserved> {
  const vmids = [
    ...new Set([...onCluster(input.headGuests, input.cluster), ...onCluster(input.baseGuests, input.cluster)].map((g) => g.vmid)),
  ];
  if (vmids.length === 0) return { guests: {} };
  let locations: Awaited<ReturnType<FirewallPort['guestLocations']>>;
  try {
    locations = await port.guestLocations();
  } catch (err) {
    return { guests: {}, error: `cannot list the guests of the cluster: ${err instanceof Error ? err.message : String(err)}` };
  }
  const guests: Record<string, FirewallGuestObserved> = {};
  await Promise.all(
    vmids.map(async (vmid) => {
      const where = locations.get(vmid);
      if (!where) return;
      try {
        guests[vmid] = { ...where, live: await readManaged(port, { ...where, vmid }, ALL_SECTIONS) };
      } catch (err) {
        guests[vmid] = { ...where, error: readError(vmid, err) };
      }
    }),
  );
  return { guests };
}

function plan(input: KindPlanInput<FirewallObserved>): ObjectPlan[] {
  const same = (before: GuestSpec, head: GuestSpec): boolean =>
    JSON.stringify(wantedState(before.refs?.firewall)) === JSON.stringify(wantedState(head.refs?.firewall));
  return planGuestParts(input, { declares: managed, same }, (guest, guestPlan, unchanged) =>
    planGuest(guest, guestPlan, input.observed, unchanged),
  );
}

function planGuest(guest: GuestSpec, guestPlan: GuestPlan | undefined, observed: FirewallObserved, unchanged: boolean): ObjectPlan {
  const { cluster, vmid } = guest;
  const want = wantedState(guest.refs?.firewall);
  const creating = guestPlan?.action === 'create';
  const seen = observed.guests[vmid];
  const where = creating || !seen ? { node: guest.node, type: guest.type } : { node: seen.node, type: seen.type };
  const make = (parts: Omit<Parameters<typeof item>[4], 'payload' | 'source' | 'after'>, from?: FirewallState) =>
    item(FIREWALL_KIND, firewallKey(cluster, vmid), cluster, guest.name, {
      ...parts,
      source: guest.source,
      after: [guestKeyText(cluster, vmid)],
      payload: { vmid, guest: guest.name, ...where, ...(from ? { from, to: want } : {}) },
    });
  let live: FirewallState = ALL_SECTIONS;
  if (!creating) {
    if (observed.error !== undefined) return make({ action: 'error', errors: [observed.error] });
    if (!seen)
      return make({
        action: 'error',
        errors: [`guest ${vmid} is not on the cluster or the token lacks VM.Audit on /vms/${vmid}, so its firewall cannot be planned`],
      });
    if (seen.error !== undefined || !seen.live)
      return make({ action: 'error', errors: [seen.error ?? `the firewall of guest ${vmid} was not read`] });
    live = seen.live;
  }
  const from = managedPart(live, want);
  const diff = firewallChanges(from, want);
  const warnings =
    guestPlan?.action === 'error'
      ? [`the plan of guest ${vmid} has an error: its firewall applies only once the guest's own changes do`]
      : [];
  const unprotected = unprotectedWarning(guest, want);
  if (unprotected) warnings.push(unprotected);
  if (diff.operations.length === 0) return make({ action: 'noop' }, from);
  const made = make(
    {
      action: 'update',
      changes: diff.changes,
      operations: diff.operations,
      drift: unchanged && !creating ? driftOf(diff.changes) : [],
      warnings,
    },
    from,
  );
  if (diff.reachesTraffic) made.severity = 'service-impact';
  return made;
}

/**
 * Proxmox filters only the network devices whose `net<n>` has `firewall=1` (qemu-server
 * `QemuServer/Network.pm`, pve-container `LXC/Config.pm`, the `firewall` flag of a NIC): a spec
 * that enables the firewall and writes NICs, none with the flag, protects nothing.
 */
function unprotectedWarning(guest: GuestSpec, want: FirewallState): string | undefined {
  if (want.options?.enable !== true) return undefined;
  const nics = Object.entries(guest.config).filter(([key]) => /^net\d+$/.test(key));
  if (nics.length === 0 || nics.some(([, value]) => /(^|,)firewall=(1|on|yes|true)(,|$)/.test(value))) return undefined;
  return `the firewall of ${guest.name} is enabled, but none of its network devices (${nics.map(([k]) => k).join(', ')}) has firewall=1: Proxmox filters only those that do`;
}

/** A stored state: what `wantedState` and a read produce, checked field by field. */
const StoredRule = z.strictObject({
  type: z.string(),
  action: z.string(),
  enable: z.boolean(),
  ...Object.fromEntries(
    ['macro', 'iface', 'source', 'dest', 'proto', 'dport', 'sport', 'log', 'icmp-type', 'comment'].map((f) => [f, z.string().optional()]),
  ),
});
const StoredEntry = z.strictObject({ cidr: z.string(), nomatch: z.boolean().optional(), comment: z.string().optional() });
const StoredState = z.strictObject({
  options: z.record(z.string(), z.union([z.boolean(), z.string()])).optional(),
  aliases: z.record(z.string(), z.strictObject({ name: z.string(), cidr: z.string(), comment: z.string().optional() })).optional(),
  ipsets: z.record(z.string(), z.strictObject({ comment: z.string().optional(), entries: z.array(StoredEntry) })).optional(),
  rules: z.array(StoredRule).optional(),
});

function checkStored(stored: ObjectPlan): void {
  const { vmid, node, type } = stored.payload;
  if (typeof vmid !== 'number' || !Number.isInteger(vmid)) throw new Error('stored item: payload.vmid is not a VMID');
  if (typeof node !== 'string' || node === '') throw new Error('stored item: payload.node is not a node');
  if (type !== 'qemu' && type !== 'lxc') throw new Error('stored item: payload.type is neither qemu nor lxc');
  for (const op of stored.operations)
    if (!(FIREWALL_OPERATIONS as readonly string[]).includes(op.op)) throw new Error(`stored item: unknown firewall operation '${op.op}'`);
  if (stored.operations.length === 0) return;
  for (const side of ['from', 'to'] as const)
    if (!StoredState.safeParse(stored.payload[side]).success) throw new Error(`stored item: payload.${side} is not a firewall state`);
  const from = stored.payload.from as FirewallState;
  const to = stored.payload.to as FirewallState;
  if (SECTIONS.some((s) => (from[s] === undefined) !== (to[s] === undefined)))
    throw new Error('stored item: payload.from and payload.to manage different sections');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function describe(op: ObjectOperation): string | undefined {
  const rule = isRecord(op.rule) ? (op.rule as unknown as Parameters<typeof ruleText>[0]) : undefined;
  switch (op.op) {
    case 'set-fw-options': {
      const set = Object.entries((op.set ?? {}) as Record<string, unknown>).map(
        ([k, v]) => `${k}=${typeof v === 'boolean' ? (v ? 1 : 0) : String(v)}`,
      );
      const remove = Array.isArray(op.delete) ? op.delete.map(String) : [];
      return `set firewall options ${[...set, ...remove.map((k) => `${k} back to default`)].join(', ')}`;
    }
    case 'add-fw-rule':
      return `add firewall rule #${String(op.at)}: ${rule ? ruleText(rule) : ''}`;
    case 'change-fw-rule':
      return `change firewall rule #${String(op.at)}${op.was !== op.at ? ` (was #${String(op.was)})` : ''} to ${rule ? ruleText(rule) : ''}`;
    case 'move-fw-rule':
      return `move firewall rule #${String(op.was)} to #${String(op.at)}: ${rule ? ruleText(rule) : ''}`;
    case 'remove-fw-rule':
      return `remove firewall rule #${String(op.was)}: ${rule ? ruleText(rule) : ''}`;
    case 'add-fw-ipset':
    case 'change-fw-ipset':
      return `${op.op === 'add-fw-ipset' ? 'add' : 'change'} IPset ${String(op.name)}${isRecord(op.value) && Array.isArray(op.value.entries) ? ` ${ipsetText(op.value as unknown as Parameters<typeof ipsetText>[0])}` : ''}`;
    case 'remove-fw-ipset':
      return `remove IPset ${String(op.name)}`;
    case 'add-fw-alias':
    case 'change-fw-alias': {
      const alias = isRecord(op.value) ? (op.value as unknown as Parameters<typeof aliasText>[0]) : undefined;
      return `${op.op === 'add-fw-alias' ? 'add' : 'change'} alias ${alias ? `${alias.name} ${aliasText(alias)}` : String(op.name)}`;
    }
    case 'remove-fw-alias':
      return `remove alias ${String((op.from as { name?: string } | undefined)?.name ?? op.name)}`;
    default:
      return undefined;
  }
}

export const firewallKind: ObjectKind<FirewallPort, FirewallObserved> = {
  name: FIREWALL_KIND,
  documents: [],
  guestKeys: [
    {
      key: 'firewall',
      schema: FirewallKey,
      description:
        "the guest's own firewall: options, rules (in order), ipsets, aliases; a section left out is not managed, a section written is exact; left out, the firewall is not managed",
    },
  ],
  phase: 'guest-parts',
  hasNode: false,
  operations: FIREWALL_OPERATIONS,
  simRoutes: ['firewall'],
  testFactory: () => ({
    yaml: [
      ...SAMPLE_CLUSTER,
      'kind: VM',
      'name: web-fw',
      'cluster: lab',
      'node: pve-01',
      'config: { memory: 1024, cores: 1 }',
      'firewall:',
      '  options: { enable: true, policy_in: DROP }',
      '  aliases: { bastion: { cidr: 10.1.0.5, comment: jump host } }',
      '  ipsets: { admins: [10.0.0.0/24, { cidr: 10.1.0.5, comment: bastion }] }',
      '  rules:',
      '    - { type: in, action: ACCEPT, proto: tcp, dport: 22, source: +admins, comment: ssh }',
      '    - { type: in, macro: HTTPS, action: ACCEPT }',
      '',
    ].join('\n'),
  }),
  load() {
    throw new Error('the firewall kind has no document: a guest writes its firewall as firewall:');
  },
  validate,
  observe,
  plan,
  checkStored,
  label: (stored) => `firewall of ${stored.name} (${String(stored.payload.vmid)})`,
  // `rules_audit_permissions` / `rules_modify_permissions` for the `vm` and `ct` environments, and `get_options`/`set_options`.
  requiredPrivileges: ({ guests }, mode) =>
    guests
      .filter(managed)
      .map((g) =>
        mode === 'read'
          ? { path: `/vms/${g.vmid}`, privilege: 'VM.Audit', why: `to read the firewall of ${g.name}` }
          : { path: `/vms/${g.vmid}`, privilege: 'VM.Config.Network', why: `to change the firewall of ${g.name}` },
      ),
  describe,
  execute: (stored, port) => executeFirewall(stored, port),
};
