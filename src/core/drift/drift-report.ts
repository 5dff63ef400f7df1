/**
 * The drift report: what a read of every owned guest against the default branch found, as data
 * the renderer turns into the "Drift report" issue. Pure: the reading happened before (the drift
 * plan and the listings it was made from), and what was seen before comes in as a map.
 *
 * Findings are per guest and key — a config key that differs, `power`, `missing` (a guest with a
 * spec that is gone), `orphan` (an owned guest without a spec), `unowned` (a guest without the
 * owner tag inside a Cluster document's VMID range) — each with the time it was first seen, kept
 * across runs by an id. An allow-list in the repository takes intended differences out; an entry
 * past its expiry date takes nothing out and is reported itself. A cluster that could not be read
 * is reported as such and keeps the first-seen times of its findings: it is never "no guests".
 */
import { compareText } from '../compare-text.js';
import type { ObservedState, PendingItem, Plan, SourceRef, SpecSet } from '../model.js';
import type { GuestType } from '../guest-flavours.js';
import { hasOwnerTag } from '../plan/desired-config.js';
import { guestKeyText } from '../kinds/resource-key.js';

/** One allow-list entry, as `.github/pve-gitops.yml` gives it (`drift.allow`). */
export interface DriftAllow {
  /** `cluster/name` or `cluster/vmid`. */
  guest: string;
  /** Config keys, or `power`, `missing`, `orphan`, `unowned`. */
  keys: string[];
  reason: string;
  /** Last day (UTC, inclusive) the entry holds: `YYYY-MM-DD`. */
  expires?: string;
}

/** What kind of difference a finding is. */
type FindingKind = 'config' | 'power' | 'missing' | 'orphan' | 'unowned';

/** One difference on one guest. */
export interface DriftFinding {
  /** Stable id across runs: `cluster/vmid#key`. */
  id: string;
  kind: FindingKind;
  /** The config key, or `power`, `missing`, `orphan`, `unowned`. */
  key: string;
  /** What the default branch's spec says (undefined: not set). */
  expected?: string;
  /** What the cluster has (undefined: not set). */
  actual?: string;
  /** ISO time this finding was first seen. */
  firstSeen: string;
  /** An expired allow-list entry that would have covered it. */
  expiredAllow?: DriftAllow;
}

/** A guest with findings. */
export interface DriftGuest {
  cluster: string;
  name: string;
  vmid: number;
  node: string;
  type: GuestType;
  /** The spec document (path relative to the spec root), when there is one. */
  source?: SourceRef;
  /** Where the spec sets each key, when known. */
  keySources?: Record<string, SourceRef>;
  findings: DriftFinding[];
}

/** A guest with values queued until its next restart. */
export interface PendingGuest {
  cluster: string;
  name: string;
  vmid: number;
  node: string;
  items: PendingItem[];
}

/** A guest that could not be read or planned, and why. */
export interface GuestProblem {
  cluster: string;
  name: string;
  vmid: number;
  node: string;
  messages: string[];
}

/**
 * An object of another kind (a pool, a guest's membership) that differs from the default branch:
 * its drift items as findings, with ids `cluster/kind/id#key`.
 */
export interface DriftObject {
  cluster: string;
  kind: string;
  /** The item's key (core/kinds/resource-key.ts). */
  key: string;
  name: string;
  source?: SourceRef;
  findings: DriftFinding[];
}

/** Per cluster: whether it was read, and what was found there. */
interface ClusterStatus {
  name: string;
  /** Why the cluster could not be read; undefined when it was. */
  unreadable?: string;
  /** VMID range of its Cluster document. */
  range?: { lower: number; upper: number };
  /** Guests read (owned, or with a spec). */
  checked: number;
  drifted: number;
  orphans: number;
  unowned: number;
  pending: number;
  errors: number;
  /** Differences taken out by the allow-list. */
  allowed: number;
}

/** An allow-list entry past its expiry date. */
export interface ExpiredAllow extends DriftAllow {
  /** Findings it would cover, now reported as drift again. */
  covers: number;
}

/** Everything the report says. */
export interface DriftReport {
  /** What was compared: the default branch's commit. */
  ref: string;
  /** ISO time of the read. */
  checkedAt: string;
  clusters: ClusterStatus[];
  /** Problems that stop the report or are not tied to one cluster (invalid specs, an invalid allow-list…). */
  problems: { path?: string; line?: number; message: string }[];
  /** Headline of `problems` when they stopped the report. */
  problemHeadline?: string;
  /** Guests whose config, power or existence differs (orphans and unowned guests included). */
  guests: DriftGuest[];
  /** Objects of other kinds that drifted. Absent in reports stored before kinds existed. */
  objects?: DriftObject[];
  pending: PendingGuest[];
  guestErrors: GuestProblem[];
  expiredAllows: ExpiredAllow[];
  /** Findings taken out by the allow-list. */
  allowed: number;
  /** First-seen times to keep for the next run, by finding id. */
  firstSeen: Record<string, string>;
}

/** Inputs of {@link buildDriftReport}. */
interface DriftReportInput {
  /** The drift plan: every owned guest of every cluster planned with the specs as their own base. */
  plan: Plan;
  /** What the plan was made from (the listings hold the unowned guests). */
  observed: ObservedState;
  specs: SpecSet;
  allow?: readonly DriftAllow[];
  /** First-seen times from the previous run, by finding id. */
  previousFirstSeen?: Readonly<Record<string, string>>;
  now: Date;
  ref: string;
}

/** The id of a finding: stable across runs for the same guest and key. */
function findingId(cluster: string, vmid: number, key: string): string {
  return `${guestKeyText(cluster, vmid)}#${key}`;
}

/** `YYYY-MM-DD` of `now` in UTC. */
function day(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** True when the entry's last day is before today (UTC). */
function allowExpired(entry: DriftAllow, now: Date): boolean {
  return entry.expires !== undefined && entry.expires < day(now);
}

/** Whether an allow-list entry names this guest (by name or by VMID). */
function namesGuest(entry: DriftAllow, cluster: string, name: string, vmid: number): boolean {
  const slash = entry.guest.indexOf('/');
  if (entry.guest.slice(0, slash) !== cluster) return false;
  const who = entry.guest.slice(slash + 1);
  return /^\d+$/.test(who) ? Number(who) === vmid : who === name;
}

/** The allow-list split into entries in force and expired ones, with a matcher. */
class AllowList {
  private readonly active: DriftAllow[];
  readonly expired: ExpiredAllow[];

  constructor(entries: readonly DriftAllow[], now: Date) {
    this.active = entries.filter((e) => !allowExpired(e, now));
    this.expired = entries.filter((e) => allowExpired(e, now)).map((e) => ({ ...e, covers: 0 }));
  }

  /** `allowed` when an entry in force covers the finding; else the expired entry that would have. */
  match(cluster: string, name: string, vmid: number, key: string): { allowed: boolean; expired?: ExpiredAllow } {
    const covers = (e: DriftAllow): boolean => e.keys.includes(key) && namesGuest(e, cluster, name, vmid);
    if (this.active.some(covers)) return { allowed: true };
    const expired = this.expired.find(covers);
    if (expired) expired.covers += 1;
    return expired ? { allowed: false, expired } : { allowed: false };
  }
}

function emptyStatus(name: string): ClusterStatus {
  return { name, checked: 0, drifted: 0, orphans: 0, unowned: 0, pending: 0, errors: 0, allowed: 0 };
}

/** The key a planner drift item gets in the report (`(guest)` means the guest is missing). */
function reportKey(key: string): { kind: FindingKind; key: string } {
  return key === '(guest)' ? { kind: 'missing', key: 'missing' } : { kind: 'config', key };
}

/**
 * Builds the report from a drift plan and its reads. Findings covered by an allow-list entry in
 * force are counted, not listed; every finding (allowed or not) keeps its first-seen time.
 */
export function buildDriftReport(input: DriftReportInput): DriftReport {
  const { plan, observed, specs, now } = input;
  const previous = input.previousFirstSeen ?? {};
  const checkedAt = now.toISOString();
  const allow = new AllowList(input.allow ?? [], now);
  const firstSeen: Record<string, string> = {};
  const seen = (id: string): string => {
    firstSeen[id] ??= previous[id] ?? checkedAt;
    return firstSeen[id];
  };
  const clusterSpecs = new Map(specs.clusters.map((c) => [c.name, c]));
  const statuses = new Map<string, ClusterStatus>();
  const status = (name: string): ClusterStatus => {
    let s = statuses.get(name);
    if (!s) {
      s = emptyStatus(name);
      const spec = clusterSpecs.get(name);
      if (spec) s.range = { ...spec.vmids };
      statuses.set(name, s);
    }
    return s;
  };
  for (const name of plan.clusters) status(name);

  const problems: DriftReport['problems'] = [];
  for (const error of plan.errors) {
    if (error.cluster === undefined) problems.push({ message: error.message });
    else {
      const s = status(error.cluster);
      s.unreadable = s.unreadable === undefined ? error.message : `${s.unreadable}; ${error.message}`;
    }
  }
  const unreadable = (cluster: string): boolean => statuses.get(cluster)?.unreadable !== undefined;

  const guests: DriftGuest[] = [];
  const pending: PendingGuest[] = [];
  const guestErrors: GuestProblem[] = [];
  const unreadGuests = new Set<string>();

  for (const g of plan.guests) {
    const s = status(g.cluster);
    const spec = g.target.spec;
    const where = { cluster: g.cluster, name: g.name, vmid: g.vmid, node: g.node };
    if (g.action === 'error') {
      s.errors += 1;
      guestErrors.push({ ...where, messages: [...g.errors] });
      unreadGuests.add(guestKeyText(g.cluster, g.vmid));
    }
    if (g.action !== 'create' && g.action !== 'error') s.checked += 1;
    if (g.pending.length > 0) {
      s.pending += 1;
      pending.push({ ...where, items: g.pending });
    }

    const raw: Omit<DriftFinding, 'id' | 'firstSeen'>[] = [];
    for (const item of g.drift) {
      const { kind, key } = reportKey(item.key);
      const finding: Omit<DriftFinding, 'id' | 'firstSeen'> = { kind, key };
      if (item.expected !== undefined) finding.expected = item.expected;
      if (item.actual !== undefined) finding.actual = item.actual;
      raw.push(finding);
    }
    // A power change the plan would make is a difference too: someone started or stopped the guest.
    if (g.action === 'update' && spec && spec.power !== 'ignore') {
      const power = g.operations.find((op) => op.op === 'start' || op.op === 'shutdown' || op.op === 'stop');
      if (power) {
        const live = observed.clusters[g.cluster]?.guests[g.vmid]?.status;
        raw.push({ kind: 'power', key: 'power', expected: spec.power, actual: live ?? (power.op === 'start' ? 'stopped' : 'running') });
      }
    }
    if (g.action === 'orphan') raw.push({ kind: 'orphan', key: 'orphan', actual: 'owned, no spec' });

    const findings: DriftFinding[] = [];
    for (const finding of raw) {
      const id = findingId(g.cluster, g.vmid, finding.key);
      const firstSeenAt = seen(id);
      const verdict = allow.match(g.cluster, g.name, g.vmid, finding.key);
      if (verdict.allowed) {
        s.allowed += 1;
        continue;
      }
      findings.push({ id, ...finding, firstSeen: firstSeenAt, ...(verdict.expired ? { expiredAllow: stripCovers(verdict.expired) } : {}) });
    }
    if (findings.length === 0) continue;
    if (findings.some((f) => f.kind === 'orphan')) s.orphans += 1;
    else s.drifted += 1;
    const guest: DriftGuest = { ...where, type: g.type, findings };
    if (spec) {
      guest.source = spec.source;
      if (spec.keySources) guest.keySources = spec.keySources;
    }
    guests.push(guest);
  }

  // Guests without the owner tag inside a Cluster document's range are in no plan: from the listing.
  for (const [name, cluster] of Object.entries(observed.clusters)) {
    const spec = clusterSpecs.get(name);
    if (!spec || unreadable(name)) continue;
    const s = status(name);
    const specced = new Set(specs.guests.filter((g) => g.cluster === name).map((g) => g.vmid));
    for (const listed of cluster.listing) {
      if (listed.vmid < spec.vmids.lower || listed.vmid >= spec.vmids.upper) continue;
      if (specced.has(listed.vmid) || hasOwnerTag(listed.tags, spec.ownerTag)) continue;
      const guestName = listed.name ?? String(listed.vmid);
      const id = findingId(name, listed.vmid, 'unowned');
      const firstSeenAt = seen(id);
      const verdict = allow.match(name, guestName, listed.vmid, 'unowned');
      if (verdict.allowed) {
        s.allowed += 1;
        continue;
      }
      s.unowned += 1;
      guests.push({
        cluster: name,
        name: guestName,
        vmid: listed.vmid,
        node: listed.node,
        type: listed.type,
        findings: [
          {
            id,
            kind: 'unowned',
            key: 'unowned',
            actual: `no '${spec.ownerTag}' tag`,
            firstSeen: firstSeenAt,
            ...(verdict.expired ? { expiredAllow: stripCovers(verdict.expired) } : {}),
          },
        ],
      });
    }
  }

  // What could not be looked at keeps its history: a finding there is not gone, only unseen.
  for (const [id, at] of Object.entries(previous)) {
    if (firstSeen[id] !== undefined) continue;
    const cluster = id.slice(0, id.indexOf('/'));
    const guest = id.slice(0, id.indexOf('#'));
    if (unreadable(cluster) || unreadGuests.has(guest)) firstSeen[id] = at;
  }

  // Objects of other kinds: their drift items are the findings; their errors are problems of the cluster.
  const objects: DriftObject[] = [];
  for (const item of plan.objects) {
    if (unreadable(item.cluster)) continue;
    const s = status(item.cluster);
    if (item.action === 'error') {
      s.errors += 1;
      problems.push({ message: `${item.cluster}: ${item.kind} ${item.name}: ${item.errors.join('; ')}` });
      continue;
    }
    const findings: DriftFinding[] = [];
    for (const d of item.drift) {
      const id = `${item.key}#${d.key}`;
      const firstSeenAt = seen(id);
      const finding: DriftFinding = { id, kind: 'config', key: d.key, firstSeen: firstSeenAt };
      if (d.expected !== undefined) finding.expected = d.expected;
      if (d.actual !== undefined) finding.actual = d.actual;
      findings.push(finding);
    }
    if (findings.length === 0) continue;
    s.drifted += 1;
    objects.push({
      cluster: item.cluster,
      kind: item.kind,
      key: item.key,
      name: item.name,
      ...(item.source ? { source: item.source } : {}),
      findings,
    });
  }

  const byPlace = <T extends { cluster: string; name: string; vmid: number }>(a: T, b: T): number =>
    compareText(a.cluster, b.cluster) || compareText(a.name, b.name) || a.vmid - b.vmid;
  return {
    ref: input.ref,
    checkedAt,
    clusters: [...statuses.values()].sort((a, b) => compareText(a.name, b.name)),
    problems,
    guests: guests.sort(byPlace),
    ...(objects.length > 0 ? { objects: objects.sort((a, b) => compareText(a.key, b.key)) } : {}),
    pending: pending.sort(byPlace),
    guestErrors: guestErrors.sort(byPlace),
    expiredAllows: allow.expired,
    allowed: [...statuses.values()].reduce((sum, s) => sum + s.allowed, 0),
    firstSeen,
  };
}

function stripCovers(entry: ExpiredAllow): DriftAllow {
  const { covers: _covers, ...rest } = entry;
  return rest;
}

/**
 * A report that could not read anything: the specs or the App config of the default branch are
 * unusable. It keeps every first-seen time (nothing was looked at) and lists the problems.
 */
export function problemReport(input: {
  ref: string;
  now: Date;
  headline: string;
  problems: DriftReport['problems'];
  previousFirstSeen?: Readonly<Record<string, string>>;
}): DriftReport {
  return {
    ref: input.ref,
    checkedAt: input.now.toISOString(),
    clusters: [],
    problems: input.problems,
    problemHeadline: input.headline,
    guests: [],
    pending: [],
    guestErrors: [],
    expiredAllows: [],
    allowed: 0,
    firstSeen: { ...(input.previousFirstSeen ?? {}) },
  };
}

/** True when the report has anything to say: the issue is open exactly while this holds. */
export function driftReportHasFindings(report: DriftReport): boolean {
  return (
    report.problems.length > 0 ||
    report.clusters.some((c) => c.unreadable !== undefined) ||
    report.guests.length > 0 ||
    (report.objects ?? []).length > 0 ||
    report.pending.length > 0 ||
    report.guestErrors.length > 0 ||
    report.expiredAllows.length > 0
  );
}

/**
 * The report without what changes from run to run when nothing else does (the time of the read,
 * the commit): two reports with equal content say the same, and the issue is not edited.
 */
export function driftReportContent(report: DriftReport): unknown {
  const { checkedAt: _checkedAt, ref: _ref, firstSeen: _firstSeen, ...content } = report;
  return content;
}

/** Drifted guests (orphans and unowned guests not counted) per readable cluster, for the metric. */
export function driftedGuestsByCluster(report: DriftReport): Record<string, number> {
  return Object.fromEntries(report.clusters.filter((c) => c.unreadable === undefined).map((c) => [c.name, c.drifted]));
}
