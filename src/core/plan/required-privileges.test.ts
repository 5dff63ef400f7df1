/**
 * Effective privileges as pve-access-control computes them (`RPCEnvironment.pm`:
 * `get_effective_permissions` lists every ACL path and pool member; a path it does not list gets
 * what propagates from above), and what apply needs of them.
 */
import { describe, expect, it } from 'vitest';
import type { GuestSpec } from '../model.js';
import { describeMissing, missingPrivileges, privilegesOn, requiredPrivileges } from './required-privileges.js';

function spec(vmid: number, extra: Partial<GuestSpec> = {}): GuestSpec {
  return {
    kind: 'VM',
    type: 'qemu',
    name: `vm-${vmid}`,
    cluster: 'lab',
    node: 'pve-01',
    vmid,
    vmidDerived: false,
    power: 'running',
    state: 'present',
    adopt: false,
    ignore: [],
    config: { scsi0: 'local-lvm:32', ide2: 'local:iso/debian.iso,media=cdrom' },
    source: { file: 'x.yaml', line: 1, col: 1 },
    ...extra,
  };
}

const ALL_VM = [
  'VM.Allocate',
  'VM.Audit',
  'VM.Config.CPU',
  'VM.Config.Disk',
  'VM.Config.Memory',
  'VM.Config.Network',
  'VM.Config.Options',
  'VM.PowerMgmt',
];
const grant = (privs: string[], propagate = 1) => Object.fromEntries(privs.map((p) => [p, propagate]));

describe('privilegesOn', () => {
  it('takes a listed path as it is, and inherits only propagated privileges from above', () => {
    const tree = { '/': grant(['Sys.Audit']), '/vms': { 'VM.Audit': 1, 'VM.Allocate': 0 }, '/vms/100': grant(['VM.PowerMgmt']) };
    expect([...privilegesOn(tree, '/vms/100')]).toEqual(['VM.PowerMgmt']);
    expect([...privilegesOn(tree, '/vms/101')]).toEqual(['VM.Audit']);
    expect([...privilegesOn(tree, '/storage/local')]).toEqual(['Sys.Audit']);
    expect([...privilegesOn({}, '/vms/1')]).toEqual([]);
  });
});

describe('missingPrivileges', () => {
  it('finds nothing missing for a token with everything on /vms and the storage', () => {
    const tree = { '/vms': grant(ALL_VM), '/storage': grant(['Datastore.AllocateSpace']) };
    expect(missingPrivileges(tree, requiredPrivileges([spec(100), spec(101)], 'apply'))).toEqual([]);
  });

  it('needs SDN.Use on the bridge of every NIC, or on its VLAN', () => {
    const tree = {
      '/vms': grant(ALL_VM),
      '/storage': grant(['Datastore.AllocateSpace']),
      '/sdn/zones/localnetwork/vmbr1/20': grant(['SDN.Use']),
    };
    const nic = (net0: string) => spec(100, { config: { net0 } });
    expect(missingPrivileges(tree, requiredPrivileges([nic('virtio,bridge=vmbr1,tag=20')], 'apply'))).toEqual([]);
    expect(missingPrivileges(tree, requiredPrivileges([nic('virtio,bridge=vmbr0')], 'apply'))).toEqual([
      { privilege: 'SDN.Use', paths: ['/sdn/zones/localnetwork/vmbr0'], why: 'to connect NICs to bridges' },
    ]);
  });

  it('lists each missing privilege once with every path it lacks', () => {
    const tree = { '/vms': grant(ALL_VM.filter((p) => p !== 'VM.PowerMgmt')), '/vms/101': grant(ALL_VM) };
    const missing = missingPrivileges(tree, requiredPrivileges([spec(100), spec(101), spec(102)], 'apply'));
    expect(missing.map((m) => [m.privilege, m.paths])).toEqual([
      ['VM.PowerMgmt', ['/vms/100', '/vms/102']],
      ['Datastore.AllocateSpace', ['/storage/local-lvm']],
    ]);
    expect(describeMissing(missing[0]!)).toBe('VM.PowerMgmt on /vms/100, /vms/102 (to start and stop guests)');
  });

  it('accepts VM.Allocate on the pool a new guest is created in', () => {
    const tree = {
      '/vms': grant(ALL_VM.filter((p) => p !== 'VM.Allocate')),
      '/pool/web': grant(['VM.Allocate']),
      '/storage': grant(['Datastore.AllocateSpace']),
    };
    expect(missingPrivileges(tree, requiredPrivileges([spec(100, { createOptions: { pool: 'web' } })], 'apply'))).toEqual([]);
    expect(missingPrivileges(tree, requiredPrivileges([spec(100)], 'apply')).map((m) => m.privilege)).toEqual(['VM.Allocate']);
  });

  it('asks a plan token for VM.Audit only', () => {
    expect(requiredPrivileges([spec(100)], 'read')).toEqual([{ path: '/vms/100', privilege: 'VM.Audit', why: 'to read guests' }]);
  });
});

describe('restart: allowed', () => {
  it("needs VM.PowerMgmt even where power is ignored, by the guest's own policy or its cluster's", () => {
    const allowed = { policy: 'allowed' as const, force: false, timeout: 60 };
    const why = (needed: ReturnType<typeof requiredPrivileges>): string[] =>
      needed.filter((n) => n.privilege === 'VM.PowerMgmt').map((n) => `${n.path} ${n.why}`);
    expect(why(requiredPrivileges([spec(100, { power: 'ignore' })], 'apply'))).toEqual([]);
    expect(why(requiredPrivileges([spec(100, { power: 'ignore', restart: allowed })], 'apply'))).toEqual([
      '/vms/100 to restart guests whose changes are pending (restart: allowed)',
    ]);
    expect(why(requiredPrivileges([spec(101, { power: 'ignore' })], 'apply', new Map([['lab', { restart: allowed }]])))).toEqual([
      '/vms/101 to restart guests whose changes are pending (restart: allowed)',
    ]);
  });
});

describe('what a clone needs', () => {
  it('VM.Clone on a template named by VMID, and space on a full clone’s storage', () => {
    const needed = requiredPrivileges([spec(100101, { config: {}, clone: { template: '9000', full: true, storage: 'ceph' } })], 'apply');
    expect(needed).toContainEqual({ path: '/vms/9000', privilege: 'VM.Clone', why: 'to clone guests from templates' });
    expect(needed).toContainEqual({ path: '/storage/ceph', privilege: 'Datastore.AllocateSpace', why: 'to allocate disks' });
  });
});

describe('snapshot before apply', () => {
  it("needs VM.Snapshot on a guest whose policy, its own or its cluster's, is not never — a container too", () => {
    const why = (needed: ReturnType<typeof requiredPrivileges>): string[] =>
      needed.filter((n) => n.privilege === 'VM.Snapshot').map((n) => `${n.path} ${n.why}`);
    expect(why(requiredPrivileges([spec(100)], 'apply'))).toEqual([]);
    expect(why(requiredPrivileges([spec(100, { snapshot: 'risky' })], 'apply'))).toEqual([
      '/vms/100 to snapshot guests before their apply (snapshot: risky)',
    ]);
    expect(why(requiredPrivileges([spec(101)], 'apply', new Map([['lab', { snapshot: 'always' as const }]])))).toEqual([
      '/vms/101 to snapshot guests before their apply (snapshot: always)',
    ]);
    expect(
      why(requiredPrivileges([spec(102, { snapshot: 'never' })], 'apply', new Map([['lab', { snapshot: 'always' as const }]]))),
    ).toEqual([]);
    expect(why(requiredPrivileges([spec(100, { snapshot: 'risky' })], 'read'))).toEqual([]);
    expect(why(requiredPrivileges([spec(200, { type: 'lxc', kind: 'Container', snapshot: 'always' })], 'apply'))).toEqual([
      '/vms/200 to snapshot guests before their apply (snapshot: always)',
    ]);
  });
});
