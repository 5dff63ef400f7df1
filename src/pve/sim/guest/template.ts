/**
 * Converting a guest to a template, as both flavours' `template` endpoints do it (qemu-server
 * `API2/Qemu.pm`, `template`, and `QemuServer.pm`, `template_create`; pve-container
 * `API2/LXC.pm`, `template`, and `LXC.pm`, `template_create`; docs/proxmox-behaviour.md, TPL-
 * rows): the refusals both check under the config lock, and each volume made a base image
 * (`vdisk_create_base`: `vm-<vmid>-disk-<n>` becomes `base-<vmid>-disk-<n>`), which is what a
 * linked clone is made from. CD-ROMs (and a VM's cloud-init drive, a CD-ROM too) stay as they are.
 */
import { isCdrom } from '../../../core/hotplug.js';
import type { RequestContext } from '../context.js';
import { DieError } from '../errors.js';
import { optionFormat, parseOption, parseVolumeId, printPropertyString } from '../property-format.js';
import { flavourOf } from './flavours.js';
import { type Guest, perlTrue } from './guest.js';

/** `check_lock`, then snapshots, a template already, running: the refusals of both flavours. */
export function checkTemplateConversion(guest: Guest): void {
  const flavour = flavourOf(guest.type);
  const word = flavour.label;
  if (guest.lock) throw new DieError(`${flavour.label} is locked (${guest.lock})\n`);
  if (guest.config.snapshots.size > 0) throw new DieError(`unable to create template, because ${word} contains snapshots\n`);
  if (perlTrue(guest.main.get('template'))) throw new DieError("you can't convert a template to a template\n");
  if (guest.running) throw new DieError(`you can't convert a ${word} to template if ${word === 'VM' ? 'VM' : 'the CT'} is running\n`);
}

/** `template_create` and `template: 1`: every volume becomes a base image; the config says so. */
export function convertToTemplate(ctx: RequestContext, guest: Guest): void {
  const flavour = flavourOf(guest.type);
  for (const [key, value] of [...guest.main]) {
    if (!flavour.isVolumeKey(key)) continue;
    const format = optionFormat(guest.type, key);
    const drive = parseOption(guest.type, key, value);
    const volid = drive?.[flavour.volumeProperty];
    if (!format || !drive || !volid || isCdrom(drive)) continue;
    const id = parseVolumeId(volid);
    if (!id || !/^(?:\d+\/)?vm-\d+-/.test(id.volname)) continue;
    const base = `${id.storage}:${id.volname.replace(/^((?:\d+\/)?)vm-/, '$1base-')}`;
    ctx.sim.volumes.setSize(base, ctx.sim.volumes.size(volid) ?? 0);
    ctx.sim.volumes.free(volid);
    drive[flavour.volumeProperty] = base;
    guest.main.set(key, printPropertyString(format, drive));
  }
  guest.main.set('template', '1');
  guest.commit();
}
