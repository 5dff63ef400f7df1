import { describe, expect, it } from 'vitest';
import { makeClusterSpec, makeGuestSpec, makeObserved } from '../../../test/helpers/factories.js';
import type { GuestSpec, ListedGuest, ObservedGuest, ObservedState, SpecSet } from '../model.js';
import { planScope, planSpecs } from '../plan/plan-specs.js';
import {
  buildDriftReport,
  type DriftAllow,
  type DriftReport,
  driftedGuestsByCluster,
  driftReportContent,
  driftReportHasFindings,
  problemReport,
} from './drift-report.js';

const NOW = new Date('2030-06-15T12:00:00.000Z');
const EARLIER = '2030-06-01T08:00:00.000Z';

const lab = makeClusterSpec({ source: { file: 'cluster.yaml', line: 1, col: 1 } });

const app01 = makeGuestSpec({ config: { memory: '2048', cores: '2' } });

function listed(guest: ObservedGuest): ListedGuest {
  return {
    vmid: guest.vmid,
    type: guest.type,
    node: guest.node,
    name: guest.current.name ?? guest.current.hostname ?? '',
    status: guest.status,
    ...(guest.current.tags ? { tags: guest.current.tags } : {}),
  };
}

/** What a drift run of `guests` against `observed` finds (the planner itself makes the plan). */
function report(
  options: {
    guests?: GuestSpec[];
    observed?: ObservedGuest[];
    extraListing?: ListedGuest[];
    allow?: DriftAllow[];
    previous?: Record<string, string>;
    unreadable?: string;
    now?: Date;
    ref?: string;
  } = {},
): DriftReport {
  const specs: SpecSet = { clusters: [lab], guests: options.guests ?? [app01] };
  const guests = options.observed ?? [makeObserved({ memory: '2048', cores: '2' })];
  const observed: ObservedState =
    options.unreadable !== undefined
      ? { clusters: {}, errors: { lab: options.unreadable } }
      : {
          clusters: {
            lab: {
              name: 'lab',
              nodes: ['pve-01'],
              listing: [...guests.map(listed), ...(options.extraListing ?? [])],
              guests: Object.fromEntries(guests.map((g) => [g.vmid, g])),
              readErrors: {},
              unlisted: {},
            },
          },
        };
  const plan = planSpecs({ head: specs, base: specs, observed, scope: planScope(specs), now: options.now ?? NOW });
  return buildDriftReport({
    plan,
    observed,
    specs,
    allow: options.allow ?? [],
    previousFirstSeen: options.previous ?? {},
    now: options.now ?? NOW,
    ref: options.ref ?? 'a'.repeat(40),
  });
}

const drifted = [makeObserved({ memory: '4096', cores: '2' })];

describe('drift findings', () => {
  it('a clean estate has no findings', () => {
    const r = report();
    expect(driftReportHasFindings(r)).toBe(false);
    expect(r.clusters).toEqual([
      {
        name: 'lab',
        range: { lower: 100000, upper: 200000 },
        checked: 1,
        drifted: 0,
        orphans: 0,
        unowned: 0,
        pending: 0,
        errors: 0,
        allowed: 0,
      },
    ]);
    expect(driftedGuestsByCluster(r)).toEqual({ lab: 0 });
  });

  it('a key changed outside git is a finding with the spec value, the live value and the time it was first seen', () => {
    const r = report({ observed: drifted });
    expect(r.guests).toHaveLength(1);
    expect(r.guests[0]?.findings).toEqual([
      { id: 'lab/100101#memory', kind: 'config', key: 'memory', expected: '2048', actual: '4096', firstSeen: NOW.toISOString() },
    ]);
    expect(driftReportHasFindings(r)).toBe(true);
    expect(driftedGuestsByCluster(r)).toEqual({ lab: 1 });
  });

  it.each([
    [
      'power: the spec wants it running, it is stopped',
      { power: 'running' as const },
      { status: 'stopped' },
      'power',
      'running',
      'stopped',
    ],
    ['power: the spec wants it stopped, it runs', { power: 'stopped' as const }, { status: 'running' }, 'power', 'stopped', 'running'],
  ])('%s', (_name, spec, live, key, expected, actual) => {
    const r = report({
      guests: [makeGuestSpec({ config: { memory: '2048', cores: '2' }, ...spec })],
      observed: [makeObserved({ memory: '2048', cores: '2' }, live)],
    });
    expect(r.guests[0]?.findings).toMatchObject([{ kind: 'power', key, expected, actual }]);
  });

  it('a guest with a spec that is gone from the cluster (Proxmox confirms the VMID is free) is missing', () => {
    const specs: SpecSet = { clusters: [lab], guests: [app01] };
    const observed: ObservedState = {
      clusters: { lab: { name: 'lab', nodes: ['pve-01'], listing: [], guests: {}, readErrors: {}, unlisted: { 100101: false } } },
    };
    const plan = planSpecs({ head: specs, base: specs, observed, scope: planScope(specs), now: NOW });
    const r = buildDriftReport({ plan, observed, specs, now: NOW, ref: 'x' });
    // An empty listing where the specs expect a guest is refused as unreadable, never "missing".
    expect(r.clusters[0]?.unreadable).toMatch(/the cluster listing is empty/);
    expect(r.guests).toEqual([]);

    const other = makeObserved({ name: 'other-01' }, { vmid: 100150 });
    const withOther: ObservedState = {
      clusters: {
        lab: {
          name: 'lab',
          nodes: ['pve-01'],
          listing: [listed(other)],
          guests: { 100150: other },
          readErrors: {},
          unlisted: { 100101: false },
        },
      },
    };
    const plan2 = planSpecs({ head: specs, base: specs, observed: withOther, scope: planScope(specs), now: NOW });
    const r2 = buildDriftReport({ plan: plan2, observed: withOther, specs, now: NOW, ref: 'x' });
    expect(r2.guests.find((g) => g.vmid === 100101)?.findings).toMatchObject([{ kind: 'missing', key: 'missing', expected: 'present' }]);
    // The owned guest without a spec is an orphan.
    expect(r2.guests.find((g) => g.vmid === 100150)?.findings).toMatchObject([{ kind: 'orphan', key: 'orphan' }]);
    expect(r2.clusters[0]).toMatchObject({ drifted: 1, orphans: 1 });
  });

  it("guests without the owner tag inside the cluster's range are unowned; outside it, or with a spec, they are not", () => {
    const r = report({
      extraListing: [
        { vmid: 100160, type: 'qemu', node: 'pve-01', name: 'manual-01' },
        { vmid: 100170, type: 'lxc', node: 'pve-01', name: 'other-tags', tags: 'web;prod' },
        { vmid: 250000, type: 'qemu', node: 'pve-01', name: 'elsewhere' },
      ],
    });
    expect(r.guests.map((g) => [g.vmid, g.name, g.findings[0]?.kind])).toEqual([
      [100160, 'manual-01', 'unowned'],
      [100170, 'other-tags', 'unowned'],
    ]);
    expect(r.clusters[0]?.unowned).toBe(2);
    expect(driftedGuestsByCluster(r)).toEqual({ lab: 0 });
  });

  it('pending values are reported apart from drift, and count as findings', () => {
    const r = report({ observed: [makeObserved({ memory: '2048', cores: '2' }, { pending: { memory: '4096' }, status: 'running' })] });
    expect(r.pending).toMatchObject([{ vmid: 100101, items: [{ key: 'memory', current: '2048', pending: '4096' }] }]);
    expect(driftReportHasFindings(r)).toBe(true);
  });
});

describe('the allow-list', () => {
  const entry = (e: Partial<DriftAllow>): DriftAllow => ({ guest: 'lab/app-01', keys: ['memory'], reason: 'load test', ...e });
  it.each<[string, DriftAllow, 'allowed' | 'reported' | 'expired']>([
    ['by name and key', entry({}), 'allowed'],
    ['by VMID', entry({ guest: 'lab/100101' }), 'allowed'],
    ['until today (inclusive)', entry({ expires: '2030-06-15' }), 'allowed'],
    ['another guest', entry({ guest: 'lab/app-02' }), 'reported'],
    ['another cluster', entry({ guest: 'prod/app-01' }), 'reported'],
    ['another key', entry({ keys: ['cores'] }), 'reported'],
    ['expired yesterday', entry({ expires: '2030-06-14' }), 'expired'],
  ])('%s', (_name, allow, outcome) => {
    const r = report({ observed: drifted, allow: [allow] });
    if (outcome === 'allowed') {
      expect(r.guests).toEqual([]);
      expect(r.allowed).toBe(1);
      expect(driftReportHasFindings(r)).toBe(false);
      // Still remembered: when the entry expires, the finding is as old as it really is.
      expect(r.firstSeen).toEqual({ 'lab/100101#memory': NOW.toISOString() });
    } else {
      expect(r.guests[0]?.findings[0]?.key).toBe('memory');
      expect(r.allowed).toBe(0);
    }
    if (outcome === 'expired') {
      expect(r.guests[0]?.findings[0]?.expiredAllow).toEqual(allow);
      expect(r.expiredAllows).toEqual([{ ...allow, covers: 1 }]);
    } else {
      expect(r.expiredAllows).toEqual([]);
    }
  });

  it('an expired entry is reported even when it covers nothing any more', () => {
    const r = report({ allow: [entry({ expires: '2020-01-01' })] });
    expect(r.expiredAllows).toEqual([{ ...entry({ expires: '2020-01-01' }), covers: 0 }]);
    expect(driftReportHasFindings(r)).toBe(true);
  });

  it('orphans and unowned guests are allowed by the keys `orphan` and `unowned`', () => {
    const r = report({
      extraListing: [{ vmid: 100160, type: 'qemu', node: 'pve-01', name: 'manual-01' }],
      allow: [{ guest: 'lab/100160', keys: ['unowned'], reason: 'managed by hand' }],
    });
    expect(r.guests).toEqual([]);
    expect(r.allowed).toBe(1);
  });
});

describe('first-seen times', () => {
  it('keep the earlier time of a finding still there and drop findings that are gone', () => {
    const r = report({ observed: drifted, previous: { 'lab/100101#memory': EARLIER, 'lab/100101#cores': EARLIER } });
    expect(r.guests[0]?.findings[0]?.firstSeen).toBe(EARLIER);
    expect(r.firstSeen).toEqual({ 'lab/100101#memory': EARLIER });
  });

  it('are kept for a cluster that could not be read, which is reported as such and has no figure', () => {
    const r = report({ unreadable: 'connect ECONNREFUSED', previous: { 'lab/100101#memory': EARLIER } });
    expect(r.clusters[0]?.unreadable).toBe("cluster 'lab' could not be read: connect ECONNREFUSED");
    expect(r.guests).toEqual([]);
    expect(r.firstSeen).toEqual({ 'lab/100101#memory': EARLIER });
    expect(driftReportHasFindings(r)).toBe(true);
    expect(driftedGuestsByCluster(r)).toEqual({});
  });

  it('are kept for a guest that could not be read', () => {
    const specs: SpecSet = { clusters: [lab], guests: [app01] };
    const guest = makeObserved({ memory: '4096' });
    const observed: ObservedState = {
      clusters: {
        lab: {
          name: 'lab',
          nodes: ['pve-01'],
          listing: [listed(guest)],
          guests: {},
          readErrors: { 100101: 'HTTP 500: got timeout' },
          unlisted: {},
        },
      },
    };
    const plan = planSpecs({ head: specs, base: specs, observed, scope: planScope(specs), now: NOW });
    const r = buildDriftReport({ plan, observed, specs, now: NOW, ref: 'x', previousFirstSeen: { 'lab/100101#memory': EARLIER } });
    expect(r.guestErrors).toMatchObject([{ vmid: 100101, messages: [expect.stringContaining('got timeout')] }]);
    expect(r.firstSeen).toEqual({ 'lab/100101#memory': EARLIER });
  });
});

describe('report content', () => {
  it('does not change with the time of the read or the commit; it changes with a finding', () => {
    const previous = { 'lab/100101#memory': EARLIER };
    const a = report({ observed: drifted, previous, now: NOW, ref: 'a'.repeat(40) });
    const b = report({ observed: drifted, previous, now: new Date('2030-06-15T13:00:00Z'), ref: 'b'.repeat(40) });
    expect(driftReportContent(a)).toEqual(driftReportContent(b));
    const c = report({ observed: [makeObserved({ memory: '8192', cores: '2' })], previous, now: NOW });
    expect(driftReportContent(c)).not.toEqual(driftReportContent(a));
  });

  it('a problem report keeps every first-seen time and has findings', () => {
    const r = problemReport({
      ref: 'x',
      now: NOW,
      headline: 'The specs are invalid',
      problems: [{ path: 'a.yaml', line: 3, message: 'bad' }],
      previousFirstSeen: { 'lab/1#memory': EARLIER },
    });
    expect(r.firstSeen).toEqual({ 'lab/1#memory': EARLIER });
    expect(driftReportHasFindings(r)).toBe(true);
  });
});
