import { describe, expect, it } from 'vitest';
import { classifyConfigKey, editDistance, isRealConfigKey, suggestKey, type KeyVerdict } from './config-keys.js';
import { defaultSubKey } from '../config-options.js';

describe('classifyConfigKey', () => {
  it.each<['qemu' | 'lxc', string, KeyVerdict['kind']]>([
    ['qemu', 'memory', 'option'],
    ['qemu', 'description', 'option'],
    ['lxc', 'description', 'option'],
    ['qemu', 'net0', 'option'],
    ['qemu', 'net31', 'option'],
    ['qemu', 'net32', 'index-out-of-range'],
    ['qemu', 'scsi30', 'option'],
    ['qemu', 'scsi31', 'index-out-of-range'],
    ['qemu', 'ide3', 'option'],
    ['qemu', 'ide4', 'index-out-of-range'],
    ['qemu', 'efidisk0', 'option'],
    ['qemu', 'smbios1', 'option'],
    ['qemu', 'vmgenid', 'option'],
    ['qemu', 'net01', 'unknown'],
    ['qemu', 'net[n]', 'unknown'],
    ['lxc', 'mp255', 'option'],
    ['lxc', 'mp256', 'index-out-of-range'],
    ['lxc', 'rootfs', 'option'],
    ['lxc', 'scsi0', 'unknown'],
    ['qemu', 'rootfs', 'unknown'],
    ['qemu', 'lock', 'server-managed'],
    ['qemu', 'digest', 'server-managed'],
    ['qemu', 'unused3', 'server-managed'],
    ['lxc', 'lxc', 'server-managed'],
    ['qemu', 'delete', 'api-parameter'],
    ['qemu', 'skiplock', 'api-parameter'],
    ['qemu', 'vmid', 'top-level'],
    ['lxc', 'node', 'top-level'],
    ['lxc', 'ostemplate', 'create-only'],
    ['qemu', 'pool', 'create-only'],
    ['qemu', 'ostemplate', 'unknown'],
    ['qemu', 'cipassword', 'refused'],
  ])('%s %s → %s', (type, key, kind) => {
    expect(classifyConfigKey(type, key).kind).toBe(kind);
  });

  it('reports the index range of an indexed option', () => {
    expect(classifyConfigKey('lxc', 'net32')).toEqual({ kind: 'index-out-of-range', prefix: 'net', count: 32 });
  });
});

describe('key helpers', () => {
  it.each([
    ['qemu', 'memroy', 'memory'],
    ['qemu', 'nte3', 'net3'],
    ['lxc', 'hostnme', 'hostname'],
    ['qemu', 'zzzzzzzz', undefined],
  ] as const)('suggestKey(%s, %s) → %s', (type, key, expected) => {
    expect(suggestKey(type, key)).toBe(expected);
  });

  it('knows which keys exist at all', () => {
    expect(isRealConfigKey('qemu', 'description')).toBe(true);
    expect(isRealConfigKey('qemu', 'lock')).toBe(true);
    expect(isRealConfigKey('qemu', 'delete')).toBe(false);
    expect(isRealConfigKey('lxc', 'sshkeys')).toBe(false);
  });

  it('finds the default sub-key of property strings', () => {
    const net = classifyConfigKey('qemu', 'net0');
    const rootfs = classifyConfigKey('lxc', 'rootfs');
    const cores = classifyConfigKey('qemu', 'cores');
    expect(net.kind === 'option' && defaultSubKey(net.schema)).toBe('model');
    expect(rootfs.kind === 'option' && defaultSubKey(rootfs.schema)).toBe('volume');
    expect(cores.kind === 'option' && defaultSubKey(cores.schema)).toBeUndefined();
  });

  it('measures edit distance', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
    expect(editDistance('nte', 'net')).toBe(1);
  });
});
