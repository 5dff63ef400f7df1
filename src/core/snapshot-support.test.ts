import { describe, expect, it } from 'vitest';
import { snapshotVolumes, storageCanSnapshot } from './snapshot-support.js';

// pve-storage `volume_has_feature(…, 'snapshot', …)` per plugin (docs/proxmox-behaviour.md "Container snapshots").
describe('storageCanSnapshot', () => {
  it.each([
    ['lvmthin', 'vm-100-disk-0', true],
    ['lvmthin', 'base-100-disk-0', false],
    ['zfspool', 'subvol-200-disk-0', true],
    ['zfspool', 'base-100-disk-0/vm-101-disk-0', true],
    ['zfs', 'vm-100-disk-0', true],
    ['rbd', 'vm-100-disk-0', true],
    ['dir', '100/vm-100-disk-0.qcow2', true],
    ['dir', '100/vm-100-disk-0.raw', false],
    ['dir', '100/vm-100-disk-0.vmdk', false],
    ['dir', '100/base-100-disk-0.qcow2', false],
    ['nfs', '100/vm-100-disk-0.qcow2', true],
    ['cifs', '200/vm-200-disk-0.raw', false],
    ['lvm', 'vm-100-disk-0', false],
    ['lvm', 'vm-100-disk-0.qcow2', true],
    ['btrfs', '100/vm-100-disk-0.raw', true],
    ['btrfs', '200/subvol-200-disk-0.subvol', true],
    ['btrfs', '100/vm-100-disk-0.vmdk', false],
    ['iscsi', '0.0.0.scsi-36001405', false],
    ['pbs', 'backup/vm/100/2026-01-01T00:00:00Z', false],
    ['some-vendor-plugin', 'vm-100-disk-0', undefined],
  ] as const)('%s %s → %s', (type, volname, expected) => {
    expect(storageCanSnapshot(type, volname)).toBe(expected);
  });
});

describe('snapshotVolumes', () => {
  it("a VM's drives but CD-ROMs, efidisk and tpmstate included", () => {
    const config = {
      scsi0: 'local-lvm:vm-100-disk-0,size=8G',
      ide2: 'local:iso/debian.iso,media=cdrom',
      ide0: 'cdrom,media=cdrom',
      efidisk0: 'local-lvm:vm-100-disk-1,size=4M',
      tpmstate0: 'local-lvm:vm-100-disk-2,size=4M',
      net0: 'virtio,bridge=vmbr0',
      unused0: 'local-lvm:vm-100-disk-9',
    };
    expect(snapshotVolumes('qemu', config).map((v) => `${v.key}=${v.storage}:${v.volname}`)).toEqual([
      'efidisk0=local-lvm:vm-100-disk-1',
      'scsi0=local-lvm:vm-100-disk-0',
      'tpmstate0=local-lvm:vm-100-disk-2',
    ]);
  });

  it("a container's root file system and every mount point, bind and device mount points as host paths", () => {
    const config = {
      rootfs: 'local-lvm:vm-200-disk-0,size=8G',
      mp0: 'local:200/vm-200-disk-1.raw,mp=/data,backup=0',
      mp1: '/srv/share,mp=/share',
      mp2: '/dev/sdb1,mp=/disk',
    };
    expect(snapshotVolumes('lxc', config)).toEqual([
      { key: 'mp0', volume: 'local:200/vm-200-disk-1.raw', storage: 'local', volname: '200/vm-200-disk-1.raw' },
      { key: 'mp1', volume: '/srv/share' },
      { key: 'mp2', volume: '/dev/sdb1' },
      { key: 'rootfs', volume: 'local-lvm:vm-200-disk-0', storage: 'local-lvm', volname: 'vm-200-disk-0' },
    ]);
  });
});
