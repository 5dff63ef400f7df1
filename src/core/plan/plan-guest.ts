/**
 * Plans one guest: its spec (head and base), its listing entry and its read, in; its action, key
 * changes, operations, drift and pending values out (docs/design.md#the-plan). Pure. The guest
 * kind's planner; other kinds plan through their modules in `core/kinds/`.
 */
import { compareText } from '../compare-text.js';
import { GUEST_KIND, guestKeyText } from '../kinds/resource-key.js';
import { flavourOf } from '../guest-flavours.js';
import { hostAccessOf, isDiskKey, isNicKey } from '../key-rules.js';
import type {
  DriftItem,
  GuestPlan,
  HostAccessItem,
  GuestSpec,
  Impact,
  KeyChange,
  ListedGuest,
  ObservedGuest,
  Operation,
  PendingItem,
  Severity,
} from '../model.js';
import type { GuestType } from '../guest-flavours.js';
import { desiredConfig, effectiveConfig, hasOwnerTag, isOwnedKey, observedValue } from './desired-config.js';
import { noteCloudinitChanges } from './cloudinit-changes.js';
import { cloneInFlight, cloneOperation, cloneOwns, configAfterClone, resolveCloneSource, type CloneSourceSeen } from './plan-clone.js';
import { keyImpact, maxImpact, maxSeverity, type ImpactContext } from './impact.js';
import { diffDisk, formatDiskUpdate, formatNicUpdate, formatSize, parseDisk, sameValue, sizeIsServerChosen } from './values.js';

/** Everything the planner knows about one guest. */
export interface GuestPlanInput {
  cluster: string;
  vmid: number;
  /** The head spec; absent for orphans and guests whose spec was removed. */
  spec?: GuestSpec;
  /** The base branch's spec, for drift. */
  baseSpec?: GuestSpec;
  ownerTag: string;
  prune: boolean;
  /** The guest's line in the cluster listing; absent when it does not exist. */
  listed?: ListedGuest;
  /** The guest read in full; needed whenever it is listed. */
  observed?: ObservedGuest;
  /** Why the guest could not be read, when it is listed but `observed` is missing. */
  readError?: string;
  /**
   * For a guest the listing does not show: Proxmox's cluster-wide answer whether the VMID exists
   * (true: a guest holds it, but the token cannot see it). Undefined when nobody asked.
   */
  existsUnlisted?: boolean;
  /** For a guest created by `create.clone`: the cluster's listing and the templates read (plan-clone.ts). */
  cloneSource?: CloneSourceSeen;
}

/** The error for a guest that exists but that the plan's token may not see. */
function hiddenGuestMessage(vmid: number): string {
  return `guest ${vmid} exists on the cluster, but this token cannot see it: it lacks VM.Audit on /vms/${vmid} (Proxmox leaves guests a token may not audit out of every listing and read); grant it, or the plan cannot tell what this guest needs`;
}

interface Draft {
  plan: GuestPlan;
  /** The comparison drift made, for the update plan to reuse when it compares the same. */
  compared?: Comparison;
}

/** A key on which a guest's effective config and a spec differ; `want` or `have` absent: only one side has it. */
interface KeyDifference {
  key: string;
  want: string | undefined;
  have: string | undefined;
}

/** One comparison of a spec with a guest's read: what it was made from, and the keys that differ, sorted. */
interface Comparison {
  spec: GuestSpec;
  observed: ObservedGuest;
  effective: Record<string, string>;
  differences: KeyDifference[];
}

/**
 * Compares `spec` with `observed`, every key once: the keys the spec sets and the keys it owns on
 * the guest. A drift report compares each guest's spec twice — for drift against the base, which
 * is the spec itself, and for the update plan — and reuses this (see {@link comparisonFor}).
 */
function compareGuest(spec: GuestSpec, ownerTag: string, observed: ObservedGuest, previous: GuestSpec | undefined): Comparison {
  const effective = effectiveConfig(observed.current, observed.pending, observed.pendingDelete);
  const desired = desiredConfig(spec, ownerTag);
  // A clone's keys from its template are not the spec's (plan-clone.ts, `cloneOwns`).
  const owns = (k: string): boolean => isOwnedKey(spec, k) && (!spec.clone || cloneOwns(spec, previous, k));
  const keys = new Set([...Object.keys(desired), ...Object.keys(effective).filter(owns)]);
  const differences: KeyDifference[] = [];
  for (const key of [...keys].sort()) {
    const want = desired[key];
    const have = observedValue(spec.type, key, effective);
    if (want !== undefined && have !== undefined && sameValue(spec.type, key, want, have)) continue;
    if (want === undefined && have === undefined) continue;
    differences.push({ key, want, have });
  }
  return { spec, observed, effective, differences };
}

/**
 * The comparison of `spec` with `observed` under `previous`: the draft's own when it was made from
 * the same spec and read, else a new one. Drift compares the base spec without a base, so the
 * draft's is reused only when `spec` is the base spec, and `previous` is then that spec or none:
 * a clone owns the same keys without a base as with itself as the base (`cloneOwns`).
 */
function comparisonFor(
  draft: Draft,
  spec: GuestSpec,
  ownerTag: string,
  observed: ObservedGuest,
  previous: GuestSpec | undefined,
): Comparison {
  const compared = draft.compared;
  if (compared && compared.spec === spec && compared.observed === observed) return compared;
  return compareGuest(spec, ownerTag, observed, previous);
}

function emptyPlan(input: GuestPlanInput, type: GuestType, name: string, node: string): GuestPlan {
  const spec = input.spec;
  const plan: GuestPlan = {
    kind: GUEST_KIND,
    key: guestKeyText(input.cluster, input.vmid),
    cluster: input.cluster,
    name,
    vmid: input.vmid,
    vmidDerived: spec?.vmidDerived ?? false,
    type,
    node,
    action: 'noop',
    changes: [],
    operations: [],
    drift: [],
    pending: [],
    errors: [],
    warnings: [],
    severity: 'read-only',
    target: { ownerTag: input.ownerTag, prune: input.prune },
  };
  if (spec) {
    plan.target.spec = spec;
    plan.source = spec.source;
  }
  if (input.observed) plan.digest = input.observed.digest;
  return plan;
}

function observedName(observed: ObservedGuest | undefined, listed: ListedGuest | undefined): string | undefined {
  if (observed) return observed.current[flavourOf(observed.type).nameKey];
  return listed?.name;
}

/** Turns a guest's plan into an error: nothing of it will be carried out. */
export function toError(plan: GuestPlan, message: string): GuestPlan {
  plan.action = 'error';
  plan.errors.push(message);
  plan.changes = [];
  plan.operations = [];
  plan.severity = 'read-only';
  delete plan.impact;
  delete plan.hostAccess;
  return plan;
}

function fail(draft: Draft, message: string): GuestPlan {
  return toError(draft.plan, message);
}

function pendingItems(observed: ObservedGuest): PendingItem[] {
  const items: PendingItem[] = [];
  for (const [key, value] of Object.entries(observed.pending)) {
    const item: PendingItem = { key, pending: value };
    if (observed.current[key] !== undefined) item.current = observed.current[key];
    items.push(item);
  }
  for (const key of observed.pendingDelete) {
    const item: PendingItem = { key, delete: true };
    if (observed.current[key] !== undefined) item.current = observed.current[key];
    items.push(item);
  }
  return items.sort((a, b) => compareText(a.key, b.key));
}

/** Keys where the cluster differs from what a spec asks for (used for drift against base). */
function driftAgainst(comparison: Comparison): DriftItem[] {
  return comparison.differences.map(({ key, want, have }) => {
    const item: DriftItem = { key };
    if (want !== undefined) item.expected = want;
    if (have !== undefined) item.actual = have;
    return item;
  });
}

/**
 * Records a key change. A change whose new value — or, for a change or removal, old value —
 * reaches the host is labelled `host-access` (Proxmox checks the old value too before it lets a
 * token change or remove a raw device), and listed on the guest for the policy check.
 */
function addChange(plan: GuestPlan, change: KeyChange): void {
  const finding =
    (change.to !== undefined ? hostAccessOf(plan.type, change.key, change.to) : undefined) ??
    (change.from !== undefined ? hostAccessOf(plan.type, change.key, change.from) : undefined);
  if (finding) {
    change.severity = 'host-access';
    const item: HostAccessItem = { key: change.key, ...finding };
    (plan.hostAccess ??= []).push(item);
  }
  plan.changes.push(change);
  plan.impact = maxImpact(plan.impact, change.impact);
}

function bump(plan: GuestPlan, severity: Severity): void {
  plan.severity = maxSeverity(plan.severity, severity);
}

function severityOfImpact(impact: Impact): Severity {
  if (impact === 'data-loss') return 'data-loss';
  if (impact === 'needs-stop') return 'service-impact';
  return 'configuration';
}

function planCreate(draft: Draft, spec: GuestSpec, cloneSource?: CloneSourceSeen): GuestPlan {
  const plan = draft.plan;
  const flavour = flavourOf(spec.type);
  if (spec.clone) return planCloneCreate(draft, spec, cloneSource);
  const missing = flavour.requiredCreateOptions.find((option) => !spec.createOptions?.[option]);
  if (missing !== undefined) return fail(draft, `the ${flavour.noun} does not exist and cannot be created without create.${missing}`);
  const desired = desiredConfig(spec, plan.target.ownerTag);
  plan.action = 'create';
  plan.node = spec.node;
  for (const key of Object.keys(desired).sort()) addChange(plan, { key, to: desired[key], impact: 'live' });
  plan.operations.push({ op: 'create', node: spec.node, params: { ...desired, ...(spec.createOptions ?? {}) } });
  if (spec.template === true) {
    plan.operations.push({ op: 'template' });
  } else if (spec.power === 'running') {
    plan.operations.push({ op: 'start' });
    bump(plan, 'service-impact');
  }
  bump(plan, 'configuration');
  if (plan.hostAccess) bump(plan, 'host-access');
  return plan;
}

/**
 * A create by `create.clone` (plan-clone.ts): the clone step, then the changes the spec makes to
 * the config the clone has — planned as an update of a stopped guest — then the start or the
 * conversion to a template.
 */
function planCloneCreate(draft: Draft, spec: GuestSpec, seen: CloneSourceSeen | undefined): GuestPlan {
  const plan = draft.plan;
  const source = resolveCloneSource(spec, seen);
  if ('error' in source) return fail(draft, source.error);
  const after: ObservedGuest = {
    vmid: plan.vmid,
    type: spec.type,
    node: spec.node,
    status: 'stopped',
    digest: '',
    current: configAfterClone(spec, source),
    pending: {},
    pendingDelete: [],
  };
  planUpdate(draft, spec, after);
  if (plan.action === 'error') return plan;
  plan.operations.unshift(cloneOperation(spec, source));
  plan.action = 'create';
  plan.node = spec.node;
  plan.impact ??= 'live';
  bump(plan, 'configuration');
  return plan;
}

function planDestroy(draft: Draft, observed: ObservedGuest, why: string): GuestPlan {
  const plan = draft.plan;
  const effective = effectiveConfig(observed.current, observed.pending, observed.pendingDelete);
  if (effective.protection === '1' || observed.current.protection === '1') {
    return fail(
      draft,
      `protection blocks destroy (${why}): protection is never lifted implicitly; apply \`protection: 0\` in a change of its own first`,
    );
  }
  plan.action = 'destroy';
  if (observed.status !== 'stopped') plan.operations.push({ op: 'stop' });
  plan.operations.push({ op: 'destroy' });
  plan.impact = 'data-loss';
  bump(plan, 'data-loss');
  plan.warnings.push(`destroys the guest and its disks (${why})`);
  return plan;
}

/** The config write, resizes and moves that turn `effective` into `desired`. */
function planUpdate(draft: Draft, spec: GuestSpec, observed: ObservedGuest, previous?: GuestSpec): GuestPlan {
  const plan = draft.plan;
  const type = spec.type;
  const flavour = flavourOf(type);
  const { effective, differences } = comparisonFor(draft, spec, plan.target.ownerTag, observed, previous);
  // Anything but a clear `stopped` (a paused VM, an `unknown` listing) may be running: changes are
  // labelled as a running guest would take them.
  const ctx: ImpactContext = { type, running: observed.status !== 'stopped', current: observed.current };
  const refusals: string[] = [];
  const impactOf = (key: string, to: string | undefined): Impact => {
    const result = keyImpact(ctx, key, to);
    if (result.refusal) refusals.push(`${key}: a running guest refuses this change (${result.refusal}); stop it first`);
    return result.impact;
  };
  const template = observed.current.template === '1';
  const config: Extract<Operation, { op: 'config' }> = { op: 'config', set: {}, delete: [], from: {} };
  const resizes: Operation[] = [];
  const moves: Operation[] = [];
  const protectedGuest = effective.protection === '1';

  for (const { key, want, have } of differences) {
    if (want === undefined && have !== undefined) {
      // Removed from the spec: `delete`, never an empty value. A dropped disk is detached
      // (it becomes unusedN), never destroyed.
      if (isDiskKey(type, key)) {
        if (protectedGuest) {
          fail(draft, `cannot detach ${key}: protection is enabled on the guest and is never lifted implicitly`);
          return plan;
        }
        plan.warnings.push(`${key} is detached and kept as an unused volume; its data is not destroyed`);
        bump(plan, 'service-impact');
      }
      config.delete.push(key);
      config.from[key] = have;
      const change: KeyChange = { key, from: have, impact: impactOf(key, undefined) };
      addChange(plan, change);
      continue;
    }

    if (want !== undefined && have !== undefined && isDiskKey(type, key)) {
      const d = parseDisk(type, key, want);
      const a = parseDisk(type, key, have);
      const diff = diffDisk(d, a, !sizeIsServerChosen(key));
      // Swapping one CD-ROM image for another is an edit; anything touching a real disk's
      // volume is a replacement, which would leave the data disk behind as unusedN.
      if (diff.mediumChanged && !(d.medium && a.medium)) {
        fail(
          draft,
          `${key} names a different volume than the guest has (${have}): replacing a disk is not supported; detach it and attach a new key`,
        );
        return plan;
      }
      if (diff.shrink !== undefined) {
        fail(
          draft,
          `refusing to shrink ${key} from ${a.sizeBytes === undefined ? '?' : formatSize(a.sizeBytes)} to ${formatSize(diff.shrink)}: Proxmox cannot shrink disks and data would be lost`,
        );
        return plan;
      }
      let impact: Impact | undefined;
      if (diff.mediumChanged || diff.optionsChanged) {
        const value = diff.mediumChanged ? want : formatDiskUpdate(type, key, d, have);
        config.set[key] = value;
        config.from[key] = have;
        impact = impactOf(key, value);
      }
      if (diff.grow !== undefined) {
        const from = a.sizeBytes === undefined ? '' : formatSize(a.sizeBytes);
        resizes.push({ op: 'resize', disk: key, size: formatSize(diff.grow), from });
        impact = maxImpact(impact, 'live');
      }
      if (diff.storageChanged && d.storage !== undefined) {
        if (!flavour.move.whileRunning && ctx.running) {
          fail(
            draft,
            `${key}: a ${flavour.noun}'s volume moves only while it is stopped (${flavour.move.endpoint} refuses a running ${flavour.noun}); stop it first`,
          );
          return plan;
        }
        moves.push({ op: 'move-disk', disk: key, storage: d.storage, from: a.storage ?? '' });
        impact = maxImpact(impact, 'live');
      }
      addChange(plan, { key, from: have, to: want, impact: impact ?? 'live' });
      continue;
    }

    if (want !== undefined) {
      // A NIC keeps its MAC: the new value carries the one Proxmox assigned.
      const value = have !== undefined && isNicKey(key) ? formatNicUpdate(type, key, want, have) : want;
      config.set[key] = value;
      if (have !== undefined) config.from[key] = have;
      if (flavour.fixedAtCreation.includes(key) && have !== undefined) {
        fail(draft, `${key} is fixed when a ${flavour.noun} is created (Proxmox: unable to modify read-only option: '${key}')`);
        return plan;
      }
      const change: KeyChange = { key, to: want, impact: impactOf(key, value) };
      if (have !== undefined) change.from = have;
      addChange(plan, change);
    }
  }

  if (refusals.length > 0) return fail(draft, refusals.join('; '));
  if (Object.keys(config.set).length > 0 || config.delete.length > 0) plan.operations.push(config);
  noteCloudinitChanges(plan, type, ctx.running, spec.regenerateCloudinit === true);
  plan.operations.push(...resizes, ...moves);
  if (template && resizes.length + moves.length > 0) {
    return fail(draft, 'the guest is a template: its disks cannot be resized or moved');
  }

  if (spec.template === true && !template) {
    if (observed.status !== 'stopped')
      return fail(draft, 'template: true, but the guest is running: Proxmox converts only a stopped guest; stop it first');
    plan.operations.push({ op: 'template' });
  }
  const power = spec.template === true ? undefined : powerOperation(spec, observed.status);
  if (power && template)
    return fail(draft, `the guest is a template and cannot be ${power.op === 'start' ? 'started' : 'stopped'}; set power: ignore`);
  if (spec.power !== 'ignore' && observed.status !== 'running' && observed.status !== 'stopped') {
    plan.warnings.push(`power state is '${observed.status}': power is not changed by this plan`);
  } else if (power) {
    plan.operations.push(power);
    plan.impact = maxImpact(plan.impact, power.op === 'start' ? 'live' : 'needs-stop');
    bump(plan, 'service-impact');
  }
  for (const change of plan.changes) bump(plan, change.severity ?? severityOfImpact(change.impact));
  plan.action = plan.operations.length > 0 ? 'update' : 'noop';
  if (plan.action === 'noop') {
    delete plan.impact;
    plan.severity = 'read-only';
  }
  return plan;
}

function powerOperation(spec: GuestSpec, status: string): Operation | undefined {
  if (spec.power === 'running' && status === 'stopped') return { op: 'start' };
  if (spec.power === 'stopped' && status === 'running') return { op: 'shutdown' };
  return undefined;
}

/**
 * Plans one guest (docs/design.md#per-guest-outcomes): create, update, destroy, no-op, orphan or error. Pure.
 * A guest is found where it lives (`listed.node`), never moved back to its spec's node.
 */
export function planGuest(input: GuestPlanInput): GuestPlan {
  const { spec, listed, observed } = input;
  const type: GuestType = spec?.type ?? observed?.type ?? listed?.type ?? 'qemu';
  const name = spec?.name ?? observedName(observed, listed) ?? input.baseSpec?.name ?? `${input.vmid}`;
  const node = listed?.node ?? observed?.node ?? spec?.node ?? '';
  const draft: Draft = { plan: emptyPlan(input, type, name, node) };
  const plan = draft.plan;
  const exists = listed !== undefined || observed !== undefined;

  if (observed) plan.pending = pendingItems(observed);
  const liveTags = observed?.current.tags ?? listed?.tags;
  const owned = hasOwnerTag(liveTags, input.ownerTag);
  const lock = observed?.current.lock ?? listed?.lock;

  if (exists && !observed) {
    return fail(draft, `guest ${input.vmid} is listed on ${node} but could not be read: ${input.readError ?? 'not read'}`);
  }
  // Missing privileges must never look like a missing guest.
  if (!exists && input.readError !== undefined) return fail(draft, input.readError);
  if (!exists && input.existsUnlisted === true) return fail(draft, hiddenGuestMessage(input.vmid));
  if (lock && exists) plan.warnings.push(`locked (${lock}) at plan time; apply waits for the lock to clear and never clears it`);

  // An absent spec asks for nothing but absence: its config is no baseline for drift.
  if (observed && input.baseSpec?.state === 'present' && owned) {
    draft.compared = compareGuest(input.baseSpec, input.ownerTag, observed, undefined);
    plan.drift = driftAgainst(draft.compared);
  }

  // No spec at head: the guest is an orphan, or its spec was removed.
  if (!spec) {
    if (!exists) return plan;
    if (!owned) {
      plan.warnings.push(`does not carry the owner tag '${input.ownerTag}': not managed by this repository`);
      return plan;
    }
    if (!input.baseSpec && (listed?.template === true || observed?.current.template === '1')) {
      // A template's clones carry its tags; it is this repository's only through a spec of its own.
      plan.warnings.push('a template without a spec: never an orphan, never pruned (give it a spec to manage it)');
      return plan;
    }
    if (input.prune && observed) return planDestroy(draft, observed, 'no spec and the cluster has prune: true');
    plan.action = 'orphan';
    plan.warnings.push(
      `carries the owner tag '${input.ownerTag}' but has no spec: reported only (set prune: true on the cluster to destroy orphans)`,
    );
    return plan;
  }

  const nameKey = flavourOf(spec.type).nameKey;
  const nameIgnored = spec.ignore.includes(nameKey);
  const liveName = observedName(observed, listed);
  if (spec.state === 'absent') {
    if (!exists) return plan;
    if (!owned)
      return fail(
        draft,
        `state: absent, but guest ${input.vmid} does not carry the owner tag '${input.ownerTag}': refusing to destroy a guest this repository does not own`,
      );
    if (!nameIgnored && liveName !== undefined && liveName !== (spec.config[nameKey] ?? spec.name)) {
      return fail(draft, `state: absent names '${spec.name}', but guest ${input.vmid} is '${liveName}': refusing to destroy another guest`);
    }
    return planDestroy(draft, observed!, 'state: absent');
  }

  if (!exists) {
    if (input.baseSpec?.state === 'present') {
      if (input.existsUnlisted !== false) {
        return fail(
          draft,
          `guest ${input.vmid} was in the base branch but is not in the listing, and Proxmox was not asked whether the VMID is free; refusing to plan a second guest (re-run the plan)`,
        );
      }
      plan.drift.push({ key: '(guest)', expected: 'present' });
      plan.warnings.push(
        `was in the base branch but is missing from the cluster, and Proxmox confirms VMID ${input.vmid} is free: deleted outside git? it will be created again`,
      );
    }
    return planCreate(draft, spec, input.cloneSource);
  }

  const live = observed!;
  if (live.current.lock === 'create' && Object.keys(live.current).every((key) => key === 'lock')) {
    // Proxmox's create writes a config holding only `lock: create` and the guest's own config when
    // its task ends (docs/proxmox-behaviour.md, QCR-15, LCR-14): a create in flight — typically an
    // earlier apply's, killed before its task ended — not a guest someone else owns. Planned as the
    // create the spec asks for: the apply waits for the lock, then judges the guest the create made
    // (owner tag, reviewed values) and writes nothing to a guest that is not this repository's.
    plan.warnings.push(
      `VMID ${input.vmid} is being created right now (lock: create); apply waits for that create to finish and goes on only if the guest carries the owner tag '${input.ownerTag}'`,
    );
    return planCreate(draft, spec, input.cloneSource);
  }
  if (spec.clone && cloneInFlight(live.current, flavourOf(spec.type).nameKey, spec.config[flavourOf(spec.type).nameKey] ?? spec.name)) {
    // An earlier apply's clone still copying its disks (docs/proxmox-behaviour.md, QCL-9, LCL-7):
    // the apply waits for its lock and carries on with the guest it made.
    plan.warnings.push(`VMID ${input.vmid} is being cloned right now (lock: ${live.current.lock}); apply waits for the clone to finish`);
    return planCreate(draft, spec, input.cloneSource);
  }
  if (Object.keys(live.current).length === 0) {
    return fail(draft, `guest ${input.vmid} was read with an empty configuration; refusing to plan against it (re-run the plan)`);
  }
  if (live.type !== spec.type) {
    return fail(draft, `VMID ${input.vmid} is taken by a ${flavourOf(live.type).noun} on ${node}; the spec describes a ${spec.kind}`);
  }
  if (!owned) {
    if (!spec.adopt) {
      return fail(
        draft,
        `collision: VMID ${input.vmid} already exists on ${node} (${liveName ?? 'unnamed'}) without the owner tag '${input.ownerTag}'; choose another vmid, or set adopt: true to take it over`,
      );
    }
    if (!nameIgnored && liveName !== undefined && liveName !== (spec.config[nameKey] ?? spec.name)) {
      return fail(
        draft,
        `adopt: guest ${input.vmid} is named '${liveName}', the spec says '${spec.name}'; adoption needs the same VMID and name`,
      );
    }
    plan.adopt = true;
    plan.warnings.push(`adopts the existing guest: the owner tag '${input.ownerTag}' is added`);
  } else if (spec.vmidDerived && !nameIgnored && liveName !== undefined && liveName !== (spec.config[nameKey] ?? spec.name)) {
    return fail(draft, `derived VMID ${input.vmid} belongs to owned guest '${liveName}', not '${spec.name}'; pin a free vmid in the spec`);
  }
  if (listed && listed.node !== spec.node) {
    plan.warnings.push(`lives on ${listed.node} (the spec's node ${spec.node} is used only at creation); not moved`);
  }
  return planUpdate(draft, spec, live, input.baseSpec);
}
