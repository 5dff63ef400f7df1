/**
 * Plans a whole spec set against what was observed: the scope of a pull request (what changed
 * between base and head), every guest of that scope through `plan-guest.ts`, the items of other
 * kinds through `plan-objects.ts`, and the checks across guests (identities, insecure connections).
 * Pure: the reads happened in `engine/observe-clusters.ts`.
 */
import { compareText } from '../compare-text.js';
import { envPrefix } from '../cluster-name.js';
import { guestKeyText, parseKeyText } from '../kinds/resource-key.js';
import { planObjectWindows, planOrderAndRestarts } from './plan-order.js';
import { planSnapshots } from './plan-snapshot.js';
import { flavourOf } from '../guest-flavours.js';
import type { HostAccessRule } from '../key-rules.js';
import type {
  ClusterAccess,
  ClusterSpec,
  GuestPlan,
  GuestSpec,
  ObjectPlan,
  ObservedCluster,
  ObservedState,
  Plan,
  PlanSummary,
  SpecSet,
} from '../model.js';
import { baseClusterMap, withholdUnowned } from './base-ownership.js';
import { hasOwnerTag } from './desired-config.js';
import { severityRank } from './impact.js';
import { type GuestPlanInput, planGuest, toError } from './plan-guest.js';
import type { ListedGuest, ObservedGuest } from '../model.js';
import { clustersWithChangedObjects, planObjects } from './plan-objects.js';
import { sameLoadedCopies } from '../spec/loaded-copies.js';

/**
 * Which guests a plan covers. A pull request plans what it adds, changes or removes — every guest
 * of a cluster whose Cluster document changed — so cost grows with the change, not the estate.
 * Without a base (a CLI run, a drift report) everything is in scope, orphans included.
 */
export interface PlanScope {
  /** `cluster/vmid` keys of guests in scope. */
  guests: Set<string>;
  /** Clusters planned in full (listing orphans too). */
  fullClusters: Set<string>;
  /** Clusters touched at all. */
  clusters: Set<string>;
}

const NO_VMIDS: ReadonlySet<number> = new Set();

/** Per scope, the VMIDs of its guests by cluster (see {@link scopedVmids}). */
const vmidsOfScope = new WeakMap<PlanScope, Map<string, Set<number>>>();

/**
 * The VMIDs of `cluster`'s guests in `scope`, read from its keys once per scope: the passes over
 * an estate's guests and listing test a number instead of building a `cluster/vmid` text for each
 * of thousands of guests a change leaves alone. For a scope as {@link planScope} returns it.
 */
export function scopedVmids(scope: PlanScope, cluster: string): ReadonlySet<number> {
  let byCluster = vmidsOfScope.get(scope);
  if (!byCluster) {
    byCluster = new Map();
    for (const text of scope.guests) {
      const key = parseKeyText(text);
      if (key === undefined) continue;
      let vmids = byCluster.get(key.cluster);
      if (!vmids) {
        vmids = new Set();
        byCluster.set(key.cluster, vmids);
      }
      vmids.add(Number(key.id));
    }
    vmidsOfScope.set(scope, byCluster);
  }
  return byCluster.get(cluster) ?? NO_VMIDS;
}

/** Fields that say where a spec was written, not what it says. */
const POSITION_FIELDS = new Set(['source', 'keySources']);

/**
 * Deep equality of two specs, ignoring where they were written and the order of keys: a moved or
 * reformatted document is no change. Allocation-free, so comparing 10,000 guests stays cheap.
 */
export function sameSpec(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameSpec(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let count = 0;
  for (const key in x) {
    if (POSITION_FIELDS.has(key) || x[key] === undefined) continue;
    count += 1;
    if (!sameSpec(x[key], y[key])) return false;
  }
  for (const key in y) if (!POSITION_FIELDS.has(key) && y[key] !== undefined) count -= 1;
  return count === 0;
}

/** The scope of a plan of `head` against `base` (undefined: everything). */
export function planScope(head: SpecSet, base?: SpecSet): PlanScope {
  const scope: PlanScope = { guests: new Set(), fullClusters: new Set(), clusters: new Set() };
  if (!base) {
    for (const c of head.clusters) {
      scope.fullClusters.add(c.name);
      scope.clusters.add(c.name);
    }
    for (const g of head.guests) {
      scope.guests.add(guestKeyText(g.cluster, g.vmid));
      scope.clusters.add(g.cluster);
    }
    return scope;
  }
  const baseClusters = new Map(base.clusters.map((c) => [c.name, c]));
  const headClusters = new Map(head.clusters.map((c) => [c.name, c]));
  const changedClusters = new Set<string>();
  for (const [name, c] of headClusters) if (!sameSpec(baseClusters.get(name), c)) changedClusters.add(name);
  for (const name of baseClusters.keys()) if (!headClusters.has(name)) changedClusters.add(name);
  // A changed document of another kind (a pool) brings its cluster into the plan.
  for (const name of clustersWithChangedObjects(head, base, sameSpec)) scope.clusters.add(name);

  // By cluster, then VMID: no `cluster/vmid` text is built for the thousands of guests a change
  // leaves alone, and the copies' origins are looked up once per set (`sameLoadedCopies`).
  const baseGuests = guestsByClusterVmid(base.guests);
  const headGuests = guestsByClusterVmid(head.guests);
  const copies = sameLoadedCopies(base, head);
  const add = (cluster: string, vmid: number): void => {
    scope.guests.add(guestKeyText(cluster, vmid));
    scope.clusters.add(cluster);
  };
  for (const [cluster, guests] of headGuests) {
    const changed = changedClusters.has(cluster);
    const before = baseGuests.get(cluster);
    for (const [vmid, g] of guests) {
      const b = before?.get(vmid);
      // A guest of a file the change left as it was is the same spec by construction: no deep look.
      if (changed || !((b !== undefined && copies(b, g)) || sameSpec(b, g))) add(cluster, vmid);
    }
  }
  for (const [cluster, guests] of baseGuests) {
    const changed = changedClusters.has(cluster);
    const after = headGuests.get(cluster);
    for (const vmid of guests.keys()) if (changed || !after?.has(vmid)) add(cluster, vmid);
  }
  for (const name of changedClusters) {
    scope.clusters.add(name);
    if (headClusters.has(name)) scope.fullClusters.add(name);
  }
  return scope;
}

/** `guests` by cluster, then VMID (a later guest with the same key in place of an earlier one). */
function guestsByClusterVmid(guests: readonly GuestSpec[]): Map<string, Map<number, GuestSpec>> {
  const byCluster = new Map<string, Map<number, GuestSpec>>();
  for (const g of guests) {
    let ofCluster = byCluster.get(g.cluster);
    if (!ofCluster) {
      ofCluster = new Map();
      byCluster.set(g.cluster, ofCluster);
    }
    ofCluster.set(g.vmid, g);
  }
  return byCluster;
}

/** Inputs of a whole plan. */
export interface PlanInput {
  head: SpecSet;
  /** The base branch's specs: drives scope, drift and removed guests. */
  base?: SpecSet;
  observed: ObservedState;
  /** Override the computed scope (e.g. the drift report plans everything against base = head). */
  scope?: PlanScope;
  ref?: string;
  now?: Date;
  /**
   * What the server's connection configuration says per cluster: the host-access policy and
   * whether the connection is insecure. A cluster missing here allows no host access.
   */
  access?: Readonly<Record<string, ClusterAccess>>;
  /**
   * For a plan shown on a pull request: existing guests the base branch does not own are marked
   * `liveWithheld` and their messages name no live value (`withholdUnowned`). Ownership is judged
   * by the base's Cluster documents, whatever the head says.
   */
  withholdUnowned?: boolean;
  /**
   * Guests already planned while the reads were still under way ({@link GuestPrePlans}): each is
   * used when its inputs are exactly those this plan gives it, else the guest is planned again.
   */
  prePlanned?: GuestPrePlans;
  /**
   * A drift report, which applies nothing: no snapshot is announced or checked
   * (`plan-snapshot.ts`), so a storage without snapshots makes no guest an error there.
   */
  driftReport?: boolean;
}

/** The Cluster documents of a plan by name: the base's, with the head's in their place. */
function clusterSpecMap(head: SpecSet, base: SpecSet | undefined): Map<string, ClusterSpec> {
  const clusterSpecs = new Map<string, ClusterSpec>();
  for (const c of base?.clusters ?? []) clusterSpecs.set(c.name, c);
  for (const c of head.clusters) clusterSpecs.set(c.name, c);
  return clusterSpecs;
}

/** What {@link planSpecs} asks of one guest's plan: its spec, base spec and cluster document. */
function guestInput(
  head: SpecSet,
  clusterSpec: ClusterSpec,
  vmid: number,
  spec: GuestSpec | undefined,
  baseSpec: GuestSpec | undefined,
  seen: {
    listed: ListedGuest | undefined;
    observed: ObservedGuest | undefined;
    readError: string | undefined;
    existsUnlisted: boolean | undefined;
  },
): GuestPlanInput {
  const { lower, upper } = clusterSpec.vmids;
  return {
    cluster: clusterSpec.name,
    vmid,
    spec,
    baseSpec,
    ownerTag: clusterSpec.ownerTag,
    // A Cluster document that left the head cannot authorise destroys with its old prune,
    // and no document destroys outside its own range.
    prune: clusterSpec.prune && vmid >= lower && vmid < upper && head.clusters.some((c) => c.name === clusterSpec.name),
    listed: seen.listed,
    observed: seen.observed,
    readError: seen.readError,
    existsUnlisted: seen.existsUnlisted,
  };
}

function sameInput(a: GuestPlanInput, b: GuestPlanInput): boolean {
  for (const key of Object.keys(a) as (keyof GuestPlanInput)[]) if (a[key] !== b[key]) return false;
  return Object.keys(a).length === Object.keys(b).length;
}

/**
 * Guests planned as their reads arrive, so the planning of a whole estate overlaps its reads
 * instead of following the last answer. {@link planSpecs} takes each plan whose inputs are
 * exactly the ones it would give {@link planGuest} (the same spec, listing entry and read; a
 * guest that moved or was read again is planned anew), so the plan is the same either way.
 */
export class GuestPrePlans {
  readonly #head: SpecSet;
  readonly #base: SpecSet | undefined;
  readonly #clusterSpecs: Map<string, ClusterSpec>;
  readonly #byCluster = new Map<string, { head: Map<number, GuestSpec>; base: Map<number, GuestSpec> }>();
  readonly #plans = new Map<string, { input: GuestPlanInput; plan: GuestPlan }>();

  constructor(head: SpecSet, base: SpecSet | undefined) {
    this.#head = head;
    this.#base = base;
    this.#clusterSpecs = clusterSpecMap(head, base);
  }

  /** Plans a guest just read, as {@link planSpecs} will plan it. */
  add(cluster: string, listed: ListedGuest, observed: ObservedGuest): void {
    const clusterSpec = this.#clusterSpecs.get(cluster);
    if (!clusterSpec) return;
    let specs = this.#byCluster.get(cluster);
    if (!specs) {
      const ofCluster = (set: SpecSet | undefined): Map<number, GuestSpec> =>
        new Map((set?.guests ?? []).filter((g) => g.cluster === cluster).map((g) => [g.vmid, g]));
      specs = { head: ofCluster(this.#head), base: ofCluster(this.#base) };
      this.#byCluster.set(cluster, specs);
    }
    const input = guestInput(this.#head, clusterSpec, listed.vmid, specs.head.get(listed.vmid), specs.base.get(listed.vmid), {
      listed,
      observed,
      readError: undefined,
      existsUnlisted: undefined,
    });
    try {
      this.#plans.set(guestKeyText(cluster, listed.vmid), { input, plan: planGuest(input) });
    } catch {
      // Planned again by planSpecs, which reports what went wrong.
    }
  }

  /** The plan made for exactly `input`, once; undefined when there is none. */
  take(input: GuestPlanInput): GuestPlan | undefined {
    const key = guestKeyText(input.cluster, input.vmid);
    const entry = this.#plans.get(key);
    if (!entry) return undefined;
    this.#plans.delete(key);
    return sameInput(entry.input, input) ? entry.plan : undefined;
  }
}

/**
 * The one definition of a pending guest, for the summary, every table and every verdict: values
 * are queued until a restart now, or the plan's own changes will be.
 */
export function guestIsPending(g: GuestPlan): boolean {
  return g.pending.length > 0 || g.changes.some((c) => c.impact === 'pending-restart');
}

/** The summary of a plan's guests; renderers count with {@link guestIsPending} too. */
export function summarise(guests: readonly GuestPlan[], objects: readonly ObjectPlan[] = []): PlanSummary {
  const summary: PlanSummary = { create: 0, update: 0, destroy: 0, noop: 0, orphan: 0, error: 0, drifted: 0, pending: 0 };
  for (const g of guests) {
    summary[g.action] += 1;
    if (g.drift.length > 0) summary.drifted += 1;
    if (guestIsPending(g)) summary.pending += 1;
  }
  // Items of other kinds count like guests: a pool created is a create.
  for (const item of objects) {
    summary[item.action] += 1;
    if (item.drift.length > 0) summary.drifted += 1;
  }
  return summary;
}

/** Orders guests most severe first, then by cluster and name, for stable output. */
function sortGuestPlans(guests: GuestPlan[]): GuestPlan[] {
  const actionRank = (g: GuestPlan): number => (g.action === 'error' ? 0 : 1);
  return guests.sort(
    (a, b) =>
      actionRank(a) - actionRank(b) ||
      severityRank(b.severity) - severityRank(a.severity) ||
      compareText(a.cluster, b.cluster) ||
      compareText(a.name, b.name) ||
      a.vmid - b.vmid,
  );
}

/**
 * Plans `head` against the observed clusters (docs/design.md#the-plan). Pure: all reading happened before.
 * An empty listing where the base says guests exist is an error, never "create everything".
 */
export function planSpecs(input: PlanInput): Plan {
  const { head, base, observed } = input;
  const scope = input.scope ?? planScope(head, base);
  const plan: Plan = {
    version: 2,
    createdAt: (input.now ?? new Date()).toISOString(),
    clusters: [...scope.clusters].sort(),
    guests: [],
    objects: [],
    errors: [],
    warnings: [],
    summary: summarise([]),
  };
  if (input.ref !== undefined) plan.ref = input.ref;
  // Stored with the plan so apply can validate the specs it carries (`validateStoredPlan`).
  const planned = head.clusters.filter((c) => scope.clusters.has(c.name));
  if (planned.length > 0) plan.clusterSpecs = planned;

  const baseClusters = baseClusterMap(base);
  const clusterSpecs = clusterSpecMap(head, base);

  for (const clusterName of plan.clusters) {
    const clusterSpec = clusterSpecs.get(clusterName);
    if (!clusterSpec) {
      plan.errors.push({ cluster: clusterName, message: `no Cluster document named '${clusterName}'` });
      continue;
    }
    const seen = observed.clusters[clusterName];
    if (!seen) {
      const why = observed.errors?.[clusterName] ?? 'no connection is configured for it';
      plan.errors.push({ cluster: clusterName, message: `cluster '${clusterName}' could not be read: ${why}` });
      continue;
    }
    const headGuests = head.guests.filter((g) => g.cluster === clusterName);
    const baseGuests = (base?.guests ?? []).filter((g) => g.cluster === clusterName);
    const expected = baseGuests.filter((g) => g.state === 'present');
    if (seen.listing.length === 0 && expected.length > 0) {
      plan.errors.push({
        cluster: clusterName,
        // A drift report plans the specs against themselves: there is no base branch to speak of.
        message: `the cluster listing is empty, but ${base === head ? 'the specs have' : 'the base branch has'} ${expected.length} guest(s) there: missing privileges (VM.Audit) look like missing data; refusing to plan creates`,
      });
      continue;
    }
    if (seen.listing.length === 0 && headGuests.length > 0) {
      plan.warnings.push({
        cluster: clusterName,
        message:
          'the cluster listing is empty: every guest would be created; if this cluster is not new, check that the token has VM.Audit on /vms',
      });
    }

    const listed = new Map(seen.listing.map((l) => [l.vmid, l]));
    const headByVmid = new Map(headGuests.map((g) => [g.vmid, g]));
    const baseByVmid = new Map(baseGuests.map((g) => [g.vmid, g]));
    // A Cluster document speaks only for its own VMID range: another document (or another
    // repository) may own guests with the same tag elsewhere on the same Proxmox cluster.
    const { lower, upper } = clusterSpec.vmids;
    const inRange = (vmid: number): boolean => vmid >= lower && vmid < upper;
    const vmids = new Set<number>();
    const inScope = scopedVmids(scope, clusterName);
    for (const g of headGuests) if (inScope.has(g.vmid)) vmids.add(g.vmid);
    for (const g of baseGuests) if (inScope.has(g.vmid)) vmids.add(g.vmid);
    if (scope.fullClusters.has(clusterName)) {
      for (const l of seen.listing) if (inRange(l.vmid) && hasOwnerTag(l.tags, clusterSpec.ownerTag)) vmids.add(l.vmid);
    }
    const clashes = identityClashes(headGuests, baseByVmid, vmids, seen, listed, clusterSpec.ownerTag);
    const allowed = new Set(input.access?.[clusterName]?.allowHostAccess ?? []);

    for (const vmid of [...vmids].sort((a, b) => a - b)) {
      const guestInputs = guestInput(head, clusterSpec, vmid, headByVmid.get(vmid), baseByVmid.get(vmid), {
        listed: listed.get(vmid),
        observed: seen.guests[vmid],
        readError: seen.readErrors?.[vmid],
        existsUnlisted: seen.unlisted?.[vmid],
      });
      // A clone to be created (or still being made) is planned against its template.
      if (guestInputs.spec?.clone) guestInputs.cloneSource = { listing: seen.listing, guests: seen.guests };
      const guestPlan = input.prePlanned?.take(guestInputs) ?? planGuest(guestInputs);
      const clash = clashes.get(vmid);
      if (clash !== undefined) toError(guestPlan, clash);
      if (guestPlan.action === 'create' && seen.nodes.length > 0 && !seen.nodes.includes(guestPlan.node)) {
        toError(
          guestPlan,
          `node '${guestPlan.node}' is not a node of cluster '${clusterName}' (${seen.nodes.join(', ')}): the guest cannot be created there`,
        );
      }
      // Before the policy: a refusal quotes the host-access reason, which may name a live value.
      if (input.withholdUnowned) withholdUnowned(guestPlan, baseClusters, { listed: listed.get(vmid), observed: seen.guests[vmid] });
      applyHostAccessPolicy(guestPlan, allowed);
      plan.guests.push(guestPlan);
    }
  }
  refuseMovedIdentities(plan.guests);
  // Before the order: a guest whose snapshot would be refused is an error, which holds its dependents.
  if (!input.driftReport) planSnapshots(plan.guests, clusterSpecs, observed);
  planOrderAndRestarts(plan.guests, head.guests, clusterSpecs);
  const insecure = Object.entries(input.access ?? {})
    .filter(([name, access]) => access.insecure !== undefined && plan.clusters.includes(name))
    .map(([cluster, access]) => ({ cluster, transport: access.insecure! }))
    .sort((a, b) => compareText(a.cluster, b.cluster));
  if (insecure.length > 0) plan.insecureConnections = insecure;
  sortGuestPlans(plan.guests);
  const objects = planObjects({
    head,
    base,
    observed,
    clusters: plan.clusters.filter((name) => clusterSpecs.has(name) && observed.clusters[name]),
    fullClusters: scope.fullClusters,
    guestPlans: plan.guests,
  });
  plan.objects = objects.items;
  planObjectWindows(plan.objects, clusterSpecs);
  if (input.withholdUnowned) {
    // An item that follows a guest whose live values are withheld (its pool membership) is withheld too.
    const withheld = new Set(plan.guests.filter((g) => g.liveWithheld === true).map((g) => g.key));
    for (const item of plan.objects) if (item.after?.some((key) => withheld.has(key))) item.liveWithheld = true;
  }
  for (const error of objects.errors) plan.errors.push(error);
  plan.summary = summarise(plan.guests, plan.objects);
  return plan;
}

/** `'lab/web-01' (lab/web.yaml:3)`: a spec as an error names it. */
function specLabel(spec: GuestSpec): string {
  return `'${spec.cluster}/${spec.name}' (${spec.source.file}:${spec.source.line})`;
}

/** The name a spec gives its guest on the cluster. */
function guestName(spec: GuestSpec): string {
  return spec.config[flavourOf(spec.type).nameKey] ?? spec.name;
}

/**
 * A VMID names one guest (docs/identity-and-privileges.md). A head spec claims a VMID that
 * another spec still claims when the base branch gave that VMID to a spec that now has another
 * one, or when the owned guest holding it carries the name of another head spec: then the new
 * claim would take the other spec's guest over (rename it, reshape it) while that spec gets a
 * twin. Both VMIDs become errors that name both specs. Returns the error per VMID.
 */
function identityClashes(
  headGuests: readonly GuestSpec[],
  baseByVmid: ReadonlyMap<number, GuestSpec>,
  vmids: ReadonlySet<number>,
  seen: ObservedCluster,
  listed: ReadonlyMap<number, ListedGuest>,
  ownerTag: string,
): Map<number, string> {
  const clashes = new Map<number, string>();
  // Built when a name is first looked up: most plans look none up, and it holds the whole estate.
  let byName: Map<string, GuestSpec> | undefined;
  const headByName = (name: string): GuestSpec | undefined => {
    if (!byName) {
      byName = new Map();
      for (const g of headGuests) {
        byName.set(g.name, g);
        byName.set(guestName(g), g);
      }
    }
    return byName.get(name);
  };
  for (const spec of headGuests) {
    if (!vmids.has(spec.vmid)) continue;
    const nameKey = flavourOf(spec.type).nameKey;
    let other: GuestSpec | undefined;
    let why = '';
    const before = baseByVmid.get(spec.vmid);
    if (before && before.name !== spec.name) {
      const moved = headByName(before.name);
      if (moved && moved !== spec && moved.vmid !== spec.vmid) {
        other = moved;
        why = `the base branch gives VMID ${spec.vmid} to '${before.name}'`;
      }
    }
    const observed = seen.guests[spec.vmid];
    const liveName = observed ? observed.current[nameKey] : listed.get(spec.vmid)?.name;
    const owned = hasOwnerTag(observed?.current.tags ?? listed.get(spec.vmid)?.tags, ownerTag);
    if (!other && owned && liveName !== undefined && liveName !== guestName(spec) && !spec.ignore.includes(nameKey)) {
      const holder = headByName(liveName);
      if (holder && holder !== spec && holder.vmid !== spec.vmid) {
        other = holder;
        why = `guest ${spec.vmid} on the cluster is '${liveName}'`;
      }
    }
    if (!other) continue;
    const message = `VMID ${spec.vmid} is claimed by two specs: ${specLabel(spec)} ${spec.vmidDerived ? 'derives' : 'pins'} it, and ${why}, which ${specLabel(other)} now places at ${other.vmid}; a VMID names one guest — pin \`vmid: ${spec.vmid}\` in ${specLabel(other)} and give ${specLabel(spec)} a free VMID`;
    clashes.set(spec.vmid, message);
    if (vmids.has(other.vmid) && !clashes.has(other.vmid)) clashes.set(other.vmid, message);
  }
  return clashes;
}

/**
 * Host-access changes need the server's permission for their cluster: without it the guest is an
 * error naming the key, the reason and the setting, at plan time rather than as a failed apply.
 * Allowed ones stay labelled, with a warning where Proxmox itself lets only root@pam write them.
 */
function applyHostAccessPolicy(guest: GuestPlan, allowed: ReadonlySet<HostAccessRule>): void {
  const items = guest.hostAccess;
  if (!items || items.length === 0 || guest.action === 'error') return;
  for (const item of items) item.allowed = allowed.has(item.rule);
  for (const item of items) {
    if (!allowed.has(item.rule) || !item.requires.startsWith('root@pam')) continue;
    guest.warnings.push(
      `${item.key}: host access allowed by the server's policy (${item.rule}), but Proxmox lets only root@pam write it: an apply with an API token will be refused`,
    );
  }
  const messages = hostAccessRefusals(guest, allowed);
  if (messages.length === 0) return;
  toError(guest, messages[0]!);
  guest.errors.push(...messages.slice(1));
  // Still shown as host access: the reviewer sees which keys reach the host and why.
  guest.hostAccess = items;
  guest.severity = 'host-access';
}

/**
 * Why a guest's host-reaching changes are not allowed by the server's policy, one message per
 * key (empty when all are allowed). The plan uses it to make such a guest an error, and apply
 * asks again with the policy in force when it writes, so a plan made under another policy — or
 * edited by hand — cannot carry one through.
 */
export function hostAccessRefusals(guest: Pick<GuestPlan, 'cluster' | 'hostAccess'>, allowed: ReadonlySet<HostAccessRule>): string[] {
  const prefix = envPrefix(guest.cluster);
  return (guest.hostAccess ?? [])
    .filter((item) => !allowed.has(item.rule))
    .map(
      (item) =>
        `${item.key} reaches the host: it ${item.reason} (Proxmox requires ${item.requires}). Not allowed on cluster '${guest.cluster}': the server's policy must allow '${item.rule}' (${prefix}ALLOW_HOST_ACCESS=${item.rule}, or allowHostAccess: [${item.rule}] in the connections file; never in the spec repository)${item.alternative ? `. Instead: ${item.alternative}` : ''}`,
    );
}

/**
 * A guest planned for creation under a name that another planned guest — one losing its spec —
 * carries on the cluster means its identity moved (a derived VMID that shifted when another guest
 * was added or pinned). Creating a twin and destroying or orphaning the original would be wrong
 * either way: both become errors asking for a pinned VMID.
 */
function refuseMovedIdentities(guests: GuestPlan[]): void {
  const leaving = new Map<string, GuestPlan>();
  for (const g of guests) if (!g.target.spec && (g.action === 'destroy' || g.action === 'orphan')) leaving.set(`${g.cluster}/${g.name}`, g);
  for (const g of guests) {
    if (g.action !== 'create') continue;
    const old = leaving.get(`${g.cluster}/${g.name}`);
    if (!old) continue;
    const message = `identity moved: ${g.cluster}/${g.name} is guest ${old.vmid} on the cluster, but the specs now give it VMID ${g.vmid}; pin \`vmid: ${old.vmid}\` in its spec`;
    toError(g, message);
    toError(old, message);
  }
}

/** True when the plan would change something. */
export function planHasChanges(plan: Plan): boolean {
  const s = plan.summary;
  return s.create + s.update + s.destroy > 0;
}

/** True when the plan has errors (plan-level or per guest). */
export function planHasErrors(plan: Plan): boolean {
  return plan.errors.length > 0 || plan.summary.error > 0;
}

/** True when an owned guest or another managed object (a pool, an HA resource, a firewall…) differs from its spec outside git, or an orphan exists. */
export function planHasDrift(plan: Plan): boolean {
  return plan.guests.some((g) => g.drift.length > 0 || g.action === 'orphan') || plan.objects.some((o) => o.drift.length > 0);
}

/** Every error of a plan as one line each: plan-level first, then per guest. */
export function planErrorLines(plan: Plan): string[] {
  return [
    ...plan.errors.map((e) => `${e.cluster ? `${e.cluster}: ` : ''}${e.message}`),
    ...plan.guests.filter((g) => g.action === 'error').map((g) => `${g.cluster}/${g.name} (${g.vmid}): ${g.errors.join('; ')}`),
  ];
}
