/**
 * Builders for the core's data in tests: sensible defaults, overridden per test, so a test says
 * only what matters to it.
 */
import { guestKeyText } from '../../src/core/kinds/resource-key.js';
import type { ClusterSpec, GuestPlan, GuestSpec, ObservedGuest, Plan } from '../../src/core/model.js';
import { summarise } from '../../src/core/plan/plan-specs.js';

/** The `lab` cluster: VMIDs 100000–200000, owner tag `pve-gitops`, one node `pve-01`, no pruning. */
export function makeClusterSpec(overrides: Partial<ClusterSpec> = {}): ClusterSpec {
  return {
    name: 'lab',
    vmids: { lower: 100000, upper: 200000 },
    ownerTag: 'pve-gitops',
    nodes: ['pve-01'],
    prune: false,
    source: { file: 'clusters.yaml', line: 1, col: 1 },
    ...overrides,
  };
}

/** A VM spec named `name` at `vmid` in `lab`, declared in `<name>.yaml`. */
export function makeVmSpec(name: string, vmid: number, config: Record<string, string> = {}, overrides: Partial<GuestSpec> = {}): GuestSpec {
  return makeGuestSpec({ name, vmid, config, source: { file: `${name}.yaml`, line: 1, col: 1 }, ...overrides });
}

/** A VM spec `app-01` (100101) on `lab`/`pve-01`; `type: 'lxc'` makes it a Container. */
export function makeGuestSpec(overrides: Partial<GuestSpec> = {}): GuestSpec {
  const type = overrides.type ?? 'qemu';
  return {
    kind: type === 'qemu' ? 'VM' : 'Container',
    type,
    name: 'app-01',
    cluster: 'lab',
    node: 'pve-01',
    vmid: 100101,
    vmidDerived: false,
    power: 'ignore',
    state: 'present',
    adopt: false,
    ignore: [],
    config: {},
    source: { file: 'lab/app.yaml', line: 1, col: 1 },
    ...overrides,
  };
}

/**
 * A guest as read from the cluster: stopped, owned (`pve-gitops` tag), named `app-01` unless
 * `current` says otherwise.
 */
export function makeObserved(current: Record<string, string> = {}, overrides: Partial<ObservedGuest> = {}): ObservedGuest {
  const type = overrides.type ?? 'qemu';
  return {
    vmid: 100101,
    type,
    node: 'pve-01',
    status: 'stopped',
    digest: 'a'.repeat(40),
    current: { [type === 'qemu' ? 'name' : 'hostname']: 'app-01', tags: 'pve-gitops', ...current },
    pending: {},
    pendingDelete: [],
    ...overrides,
  };
}

/** An owned VM `name` at `vmid` as read from the cluster: stopped, digest `d…d`, with `current` on top. */
export function makeObservedVm(
  name: string,
  vmid: number,
  current: Record<string, string> = {},
  overrides: Partial<ObservedGuest> = {},
): ObservedGuest {
  return makeObserved({ name, ...current }, { vmid, digest: 'd'.repeat(40), ...overrides });
}

/** A guest plan: an `update` of `lab/app-01` with nothing in it. */
export function makeGuestPlan(overrides: Partial<GuestPlan> = {}): GuestPlan {
  const cluster = overrides.cluster ?? 'lab';
  const vmid = overrides.vmid ?? 100101;
  return {
    kind: 'guest',
    key: guestKeyText(cluster, vmid),
    cluster: 'lab',
    name: 'app-01',
    vmid: 100101,
    vmidDerived: false,
    type: 'qemu',
    node: 'pve-01',
    action: 'update',
    changes: [],
    operations: [],
    drift: [],
    pending: [],
    errors: [],
    warnings: [],
    severity: 'configuration',
    target: { ownerTag: 'pve-gitops', prune: false },
    ...overrides,
  };
}

/** A plan of the given guests, with the summary the planner would compute. */
export function makePlan(guests: GuestPlan[], overrides: Partial<Plan> = {}): Plan {
  const summary = summarise(guests);
  return {
    version: 2,
    createdAt: '2025-01-01T00:00:00.000Z',
    clusters: guests.length > 0 ? [...new Set(guests.map((g) => g.cluster))].sort() : ['lab'],
    guests,
    objects: [],
    errors: [],
    warnings: [],
    summary,
    ...overrides,
  };
}

/**
 * The plan item of the guest `spec` declares, as the planner hands it to a kind of guest part
 * (pool membership, HA, firewall): nothing of its own to change unless `action` says so.
 */
export function makeSpecGuestPlan(spec: GuestSpec, action: GuestPlan['action'] = 'noop'): GuestPlan {
  return makeGuestPlan({
    key: guestKeyText(spec.cluster, spec.vmid),
    cluster: spec.cluster,
    name: spec.name,
    vmid: spec.vmid,
    type: spec.type,
    node: spec.node,
    action,
    severity: 'read-only',
    target: { spec, ownerTag: 'pve-gitops', prune: false },
  });
}
