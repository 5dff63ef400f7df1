/**
 * The registry's rules, each against what Proxmox's source says (not against another part of this
 * code): qemu-server `src/PVE/API2/Qemu.pm` (`$check_vm_modify_config_perm`, `check_hostpci_perm`,
 * `check_usb_perm`, `$check_vm_create_serial_perm`) and pve-container `src/PVE/LXC.pm`
 * (`check_ct_modify_config_perm`), `src/PVE/API2/LXC.pm` (`create_vm`).
 */
import { describe, expect, it } from 'vitest';
import type { GuestType } from './guest-flavours.js';
import { encodeSshKeys, hostAccessOf, hostAccessRule, isDiskKey, isSensitiveKey } from './key-rules.js';

describe('hostAccessOf', () => {
  it.each<[string, GuestType, string, string, string | undefined]>([
    // `die "only root can set '$opt' config\n"` for options in no permission group.
    ['args', 'qemu', 'args', '-device foo', 'args'],
    ['a VM hookscript', 'qemu', 'hookscript', 'local:snippets/hook.pl', 'hookscript'],
    // check_ct_modify_config_perm: "changing the hookscript is only allowed for root@pam".
    ['a container hookscript', 'lxc', 'hookscript', 'local:snippets/hook.pl', 'hookscript'],
    // check_hostpci_perm: host= → "only root can set '$opt' config for non-mapped devices".
    ['a raw PCI device (default key)', 'qemu', 'hostpci0', '0000:01:00.0,pcie=1', 'hostpci'],
    ['a raw PCI device (host=)', 'qemu', 'hostpci1', 'host=01:00.0;02:00.0', 'hostpci'],
    ['a mapped PCI device', 'qemu', 'hostpci0', 'mapping=gpu,pcie=1', undefined],
    // romfile: "only root@pam can set 'romfile' option", even with a mapping.
    ['a mapped PCI device with a ROM file', 'qemu', 'hostpci0', 'mapping=gpu,romfile=vbios.bin', 'hostpci'],
    // check_usb_perm: host=spice needs only VM.Config.HWType; other hosts are root only.
    ['a raw USB device', 'qemu', 'usb0', 'host=1234:5678', 'usb'],
    ['a raw USB port', 'qemu', 'usb1', '1-1.2,usb3=1', 'usb'],
    ['a SPICE USB redirection', 'qemu', 'usb0', 'spice', undefined],
    ['a mapped USB device', 'qemu', 'usb0', 'mapping=dongle', undefined],
    // $check_vm_create_serial_perm: only `socket` is allowed to non-root.
    ['a host serial device', 'qemu', 'serial0', '/dev/ttyS0', 'serial'],
    ['a serial socket', 'qemu', 'serial0', 'socket', undefined],
    ['a host parallel port', 'qemu', 'parallel0', '/dev/parport0', 'parallel'],
    // check_ct_modify_config_perm: "mount point type $type is only allowed for root@pam".
    ['a bind mount of a host path', 'lxc', 'mp0', '/srv/data,mp=/data', 'bind-mount'],
    ['a device mount', 'lxc', 'mp1', 'volume=/dev/sdb1,mp=/mnt', 'bind-mount'],
    ['a storage volume mount point', 'lxc', 'mp0', 'local-lvm:16,mp=/srv', undefined],
    ['a root file system on storage', 'lxc', 'rootfs', 'local-lvm:vm-100-disk-0,size=8G', undefined],
    // "configuring device passthrough is only allowed for root@pam".
    ['a device passthrough', 'lxc', 'dev0', '/dev/ttyUSB0,mode=0660', 'dev'],
    ['a raw LXC key', 'lxc', 'lxc.apparmor.profile', 'unconfined', 'lxc-raw'],
    // create_vm: `$rpcenv->check($authuser, '/', ['Sys.Modify']) if !$unprivileged`.
    ['a privileged container', 'lxc', 'unprivileged', '0', 'privileged'],
    ['an unprivileged container', 'lxc', 'unprivileged', '1', undefined],
    // "changing feature flags (except nesting) is only allowed for root@pam".
    ['nesting alone', 'lxc', 'features', 'nesting=1', undefined],
    ['keyctl', 'lxc', 'features', 'nesting=1,keyctl=1', 'features'],
    ['a mount feature', 'lxc', 'features', 'mount=nfs;cifs', 'features'],
    ['flags switched off', 'lxc', 'features', 'keyctl=0,fuse=0,nesting=1', undefined],
    ['a memory size', 'qemu', 'memory', '4096', undefined],
    ['a VM disk', 'qemu', 'scsi0', 'local-lvm:32', undefined],
  ])('%s', (_label, type, key, value, rule) => {
    expect(hostAccessOf(type, key, value)?.rule).toBe(rule);
  });

  it('names the token-friendly form where Proxmox offers one', () => {
    expect(hostAccessOf('qemu', 'hostpci0', '0000:01:00.0')?.alternative).toContain('mapping=<name>');
    expect(hostAccessOf('qemu', 'usb0', 'host=1234:5678')?.alternative).toContain('Mapping.Use on /mapping/usb/<name>');
    expect(hostAccessOf('qemu', 'args', '-x')?.requires).toContain('root@pam');
    expect(hostAccessOf('lxc', 'unprivileged', '0')?.requires).toBe('Sys.Modify on /');
  });

  it('knows the policy words', () => {
    expect(hostAccessRule('bind-mount')).toBe('bind-mount');
    expect(hostAccessRule('everything')).toBeUndefined();
  });
});

describe('other key rules', () => {
  it.each<[GuestType, string, boolean]>([
    ['qemu', 'scsi0', true],
    ['qemu', 'efidisk0', true],
    ['qemu', 'net0', false],
    ['lxc', 'rootfs', true],
    ['lxc', 'mp9', true],
    ['lxc', 'dev0', false],
  ])('isDiskKey(%s, %s) is %s', (type, key, disk) => {
    expect(isDiskKey(type, key)).toBe(disk);
  });

  it('hides secrets', () => {
    expect(['cipassword', 'sshkeys', 'api_token'].every(isSensitiveKey)).toBe(true);
    expect(isSensitiveKey('memory')).toBe(false);
  });

  it('encodes SSH keys once, however often it is asked', () => {
    const once = encodeSshKeys('ssh-ed25519 AAAA a@b\r\n\n  ssh-rsa BBBB c@d  \n');
    expect(once).toBe('ssh-ed25519%20AAAA%20a%40b%0Assh-rsa%20BBBB%20c%40d');
    expect(encodeSshKeys(once)).toBe(once);
  });
});
