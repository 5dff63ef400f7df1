import { describe, expect, it } from 'vitest';
import { classifyConfigKey } from './config-keys.js';
import type { ConfigValue } from './schema.js';
import { toWireValue } from './wire-values.js';

const schemaOf = (key: string, type: 'qemu' | 'lxc' = 'qemu') => {
  const verdict = classifyConfigKey(type, key);
  return verdict.kind === 'option' ? verdict.schema : undefined;
};

describe('toWireValue', () => {
  it.each<[string, ConfigValue, string, 'qemu' | 'lxc']>([
    ['onboot', true, '1', 'qemu'],
    ['protection', false, '0', 'qemu'],
    ['memory', 8192, '8192', 'qemu'],
    ['cpulimit', 0.5, '0.5', 'qemu'],
    ['cpu', 'x86-64-v2-AES', 'x86-64-v2-AES', 'qemu'],
    ['tags', 'B, a  b', 'a;b', 'qemu'],
    ['tags', ['Prod', 'web', 'prod'], 'prod;web', 'qemu'],
    ['tags', [], '', 'qemu'],
    ['nameserver', ['1.1.1.1', '9.9.9.9'], '1.1.1.1 9.9.9.9', 'qemu'],
    ['searchdomain', ['a.example', 'b.example'], 'a.example b.example', 'lxc'],
    ['sshkeys', ['ssh-ed25519 AAAA a@b'], 'ssh-ed25519%20AAAA%20a%40b', 'qemu'],
    ['sshkeys', 'ssh-ed25519 AAAA a@b\n\nssh-rsa BB+/= c\n', 'ssh-ed25519%20AAAA%20a%40b%0Assh-rsa%20BB%2B%2F%3D%20c', 'qemu'],
    ['sshkeys', 'ssh-ed25519%20AAAA%20a%40b', 'ssh-ed25519%20AAAA%20a%40b', 'qemu'],
    ['description', 'two\nlines\n\n', 'two\nlines', 'qemu'],
    ['net0', { model: 'virtio', bridge: 'vmbr0', firewall: true }, 'virtio,bridge=vmbr0,firewall=1', 'qemu'],
    ['net0', { bridge: 'vmbr0', model: 'e1000' }, 'e1000,bridge=vmbr0', 'qemu'],
    ['net0', { name: 'eth0', bridge: 'vmbr0', ip: 'dhcp' }, 'name=eth0,bridge=vmbr0,ip=dhcp', 'lxc'],
    ['scsi0', { file: 'local-lvm:32', ssd: true, iothread: 1 }, 'local-lvm:32,ssd=1,iothread=1', 'qemu'],
    ['rootfs', { volume: 'local-lvm:8', acl: false }, 'local-lvm:8,acl=0', 'lxc'],
    ['agent', { enabled: true, fstrim_cloned_disks: true }, '1,fstrim_cloned_disks=1', 'qemu'],
    ['features', { nesting: true, keyctl: true }, 'nesting=1,keyctl=1', 'lxc'],
    ['memory', { current: 4096 }, '4096', 'qemu'],
    ['ipconfig0', { ip: '10.0.0.5/24', gw: '10.0.0.1' }, 'ip=10.0.0.5/24,gw=10.0.0.1', 'qemu'],
  ])('%s: %j → %s (%s)', (key, value, expected, type) => {
    expect(toWireValue(key, value, schemaOf(key, type))).toEqual({ ok: true, value: expected });
  });

  it.each<[string, ConfigValue, string]>([
    ['cores', [1, 2], 'a list is only accepted for tags, sshkeys, nameserver and searchdomain'],
    ['cores', { n: 1 }, 'a mapping is only accepted for property-string options (netN, disks, ipconfigN, agent, …)'],
    ['description', { a: 'b' }, 'a mapping is only accepted for property-string options (netN, disks, ipconfigN, agent, …)'],
    ['net0', {}, 'an empty mapping is not a value; remove the key to leave it unset'],
    ['net0', { model: 'virtio', trunks: '1,2' }, 'net0.trunks must not contain a comma or newline'],
    ['cores', Number.POSITIVE_INFINITY, 'must be a finite number'],
    ['ciuser', 'a\nb', 'must be a single line'],
  ])('%s: %j is refused', (key, value, message) => {
    expect(toWireValue(key, value, schemaOf(key))).toEqual({ ok: false, message });
  });
});
