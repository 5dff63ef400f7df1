/**
 * What a VM and a container differ in, as the planner, the value comparison, the privilege check
 * and the comment show it: one case per flavour, so a wrong or swapped row of the flavour table
 * (`core/guest-flavours.ts`) changes a plan here.
 */
import { describe, expect, it } from 'vitest';
import { makeGuestPlan, makeGuestSpec, makeObserved, makePlan } from '../../../test/helpers/factories.js';
import type { GuestSpec, ObservedGuest } from '../model.js';
import type { GuestType } from '../guest-flavours.js';
import { renderPlanMarkdown } from '../render/render-markdown.js';
import { planGuest } from './plan-guest.js';
import { requiredPrivileges } from './required-privileges.js';
import { formatNicUpdate, sameNic, sameValue } from './values.js';

const OWNER = 'pve-gitops';
const MAC = 'BC:24:11:AA:BB:CC';

function plan(spec: GuestSpec, observed?: ObservedGuest) {
  return planGuest({
    cluster: 'lab',
    vmid: spec.vmid,
    spec,
    ownerTag: OWNER,
    prune: false,
    ...(observed ? { observed, listed: { vmid: observed.vmid, type: observed.type, node: observed.node, tags: OWNER } } : {}),
  });
}

describe('planning per flavour', () => {
  it.each<[GuestType, string, string | undefined]>([
    ['qemu', 'scsi0', undefined],
    [
      'lxc',
      'rootfs',
      "rootfs: a container's volume moves only while it is stopped (move_volume refuses a running container); stop it first",
    ],
  ])("%s: moving a running guest's %s to another storage", (type, disk, error) => {
    const spec = makeGuestSpec({ type, config: { [disk]: 'fast:8' } });
    const result = plan(spec, makeObserved({ [disk]: 'slow:vm-100101-disk-0,size=8G' }, { type, status: 'running' }));
    if (error === undefined) {
      expect(result.errors).toEqual([]);
      expect(result.operations).toContainEqual({ op: 'move-disk', disk, storage: 'fast', from: 'slow' });
    } else {
      expect(result.errors).toEqual([error]);
    }
  });

  it.each<[GuestType, string[]]>([
    ['qemu', []],
    ['lxc', ["unprivileged is fixed when a container is created (Proxmox: unable to modify read-only option: 'unprivileged')"]],
  ])('%s: changing unprivileged after creation', (type, errors) => {
    const result = plan(makeGuestSpec({ type, config: { unprivileged: '0' } }), makeObserved({ unprivileged: '1' }, { type }));
    // A VM has no such option (the spec loader refuses it): only a container's is fixed at creation.
    expect(result.errors).toEqual(errors);
  });

  it.each<[GuestType, GuestType, string]>([
    ['qemu', 'lxc', 'VMID 100101 is taken by a container on pve-01; the spec describes a VM'],
    ['lxc', 'qemu', 'VMID 100101 is taken by a VM on pve-01; the spec describes a Container'],
  ])('a %s spec on a VMID that holds a %s', (specType, liveType, error) => {
    const result = plan(makeGuestSpec({ type: specType }), makeObserved({}, { type: liveType }));
    expect(result.errors).toEqual([error]);
  });

  it.each<[GuestType, Record<string, string> | undefined, string[]]>([
    ['qemu', undefined, []],
    ['lxc', undefined, ['the container does not exist and cannot be created without create.ostemplate']],
    ['lxc', { ostemplate: 'local:vztmpl/debian-12.tar.zst' }, []],
  ])('%s: creating with create options %o', (type, createOptions, errors) => {
    const result = plan(makeGuestSpec({ type, ...(createOptions ? { createOptions } : {}) }));
    expect(result.errors).toEqual(errors);
    expect(result.action).toBe(errors.length > 0 ? 'error' : 'create');
  });

  it.each<[GuestType, string, string]>([
    ['qemu', 'name', 'web-01'],
    ['lxc', 'hostname', 'web-01'],
  ])('%s: the guest is named in %s', (type, key, name) => {
    const result = plan(makeGuestSpec({ type, name, createOptions: { ostemplate: 'local:vztmpl/t.tar.zst' } }));
    expect(result.changes).toContainEqual({ key, to: name, impact: 'live' });
  });
});

describe('values per flavour', () => {
  it.each<[GuestType, string, string, string]>([
    ['qemu', 'virtio,bridge=vmbr1', `virtio=${MAC},bridge=vmbr0`, `virtio=${MAC},bridge=vmbr1`],
    ['qemu', 'bridge=vmbr1', `virtio=${MAC},bridge=vmbr0`, `bridge=vmbr1,macaddr=${MAC}`],
    ['lxc', 'name=eth0,bridge=vmbr1', `name=eth0,bridge=vmbr0,hwaddr=${MAC},type=veth`, `name=eth0,bridge=vmbr1,hwaddr=${MAC}`],
    ['lxc', 'bridge=vmbr1,ip=dhcp', `name=eth0,bridge=vmbr0,hwaddr=${MAC}`, `bridge=vmbr1,ip=dhcp,hwaddr=${MAC}`],
  ])('%s: the NIC %s written over %s keeps the MAC', (type, desired, actual, written) => {
    expect(formatNicUpdate(type, 'net0', desired, actual)).toBe(written);
  });

  it.each<[GuestType, boolean]>([
    ['qemu', false],
    ['lxc', true],
  ])('%s: a NIC Proxmox gave type=veth is the same NIC (%s)', (type, same) => {
    expect(sameNic(type, 'net0', 'name=eth0,bridge=vmbr0', 'name=eth0,bridge=vmbr0,type=veth')).toBe(same);
  });

  it.each<[GuestType, boolean]>([
    ['qemu', false],
    ['lxc', true],
  ])('%s: nameserver lists that differ only in separators are the same (%s)', (type, same) => {
    expect(sameValue(type, 'nameserver', '1.1.1.1,8.8.8.8', '1.1.1.1 8.8.8.8')).toBe(same);
  });
});

describe('privileges per flavour', () => {
  it.each<[GuestType, string, string, boolean]>([
    ['qemu', 'ipconfig0', 'ip=dhcp', true],
    ['qemu', 'cores', '2', false],
    ['lxc', 'nameserver', '1.1.1.1', false],
  ])('%s: setting %s needs VM.Config.Cloudinit: %s', (type, key, value, needed) => {
    const privileges = requiredPrivileges([makeGuestSpec({ type, config: { [key]: value } })], 'apply').map((p) => p.privilege);
    expect(privileges.includes('VM.Config.Cloudinit')).toBe(needed);
  });

  it.each<[GuestType, string, string]>([
    ['qemu', 'scsi0', 'file=tank:32,ssd=1'],
    ['lxc', 'mp0', 'volume=tank:8,mp=/srv'],
  ])("%s: a disk's storage is read from its volume sub-key (%s)", (type, key, value) => {
    const needed = requiredPrivileges([makeGuestSpec({ type, config: { [key]: value } })], 'apply');
    expect(needed).toContainEqual({ path: '/storage/tank', privilege: 'Datastore.AllocateSpace', why: 'to allocate disks' });
  });
});

describe('the comment per flavour', () => {
  it.each<[GuestType, string]>([
    ['qemu', 'VM on pve-01'],
    ['lxc', 'container on pve-01'],
  ])('%s: the details name the guest a %s', (type, words) => {
    const guest = makeGuestPlan({ type, changes: [{ key: 'memory', from: '2048', to: '4096', impact: 'live' }] });
    expect(renderPlanMarkdown(makePlan([guest]))).toContain(words);
  });
});
