/**
 * `POST /nodes/{node}/qemu` (`create_vm`, qemu-server `API2/Qemu.pm`): the VM flavour's create,
 * with the order of checks Proxmox has (docs/proxmox-api.md#create) — permissions after
 * parameter validation, the VMID last — and the `qmcreate` task that allocates the disks and
 * fills in the defaults (boot order, smbios1, vmgenid, meta).
 */
import { randomUUID } from 'node:crypto';
import { normaliseTags } from '../../../../core/property-string.js';
import { flag, param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, PermissionError } from '../../errors.js';
import { allocationStorages, createTask, vmImageStorages, holdsOnGuestOrPool, vmidInUse } from '../../guest/create.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { checkImportSources, checkImportSyntax } from '../../guest/import-from.js';
import { checkQemuCreateDevices, checkQemuOptionPermissions, requirePrivilege } from '../../permissions.js';
import { parseOption } from '../../property-format.js';
import { isCdrom, isQemuDrive } from '../../../../core/hotplug.js';
import { assertQemuWritable, createQemuDisk, printQemuNet } from '../../config-update/vm.js';

/** Parameters of the create call that are not config options. */
const CREATE_ONLY = new Set([
  'node',
  'vmid',
  'archive',
  'storage',
  'force',
  'unique',
  'live-restore',
  'pool',
  'bwlimit',
  'start',
  'ha-managed',
  'import-working-storage',
]);

/** `get_default_bootdevices` + `print_bootorder`: first disk, first CD-ROM, first NIC. */
function defaultBootOrder(values: Map<string, string>): string | undefined {
  const driveKeys = [
    ...Array.from({ length: 4 }, (_, i) => `ide${i}`),
    ...Array.from({ length: 6 }, (_, i) => `sata${i}`),
    ...Array.from({ length: 31 }, (_, i) => `scsi${i}`),
    ...Array.from({ length: 16 }, (_, i) => `virtio${i}`),
  ];
  const first = (cdrom: boolean): string | undefined =>
    driveKeys.find((k) => {
      const v = values.get(k);
      if (v === undefined) return false;
      const drive = parseOption('qemu', k, v);
      return drive !== undefined && isCdrom(drive) === cdrom;
    });
  const devices = [first(false), first(true), Array.from({ length: 32 }, (_, i) => `net${i}`).find((k) => values.has(k))];
  const list = devices.filter((d): d is string => d !== undefined);
  return list.length ? `order=${list.join(';')}` : undefined;
}

/**
 * Permissions are checked inside, after parameter validation: pool, `storage`, `start`,
 * VM.Allocate, then every option (`only root can set …` for root-only ones, devices), and only
 * then whether the VMID is taken. `lock: create` now, the final config when the task ends; a
 * value the config file cannot hold fails the task.
 */
export function createVm(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const vmid = Number(param(ctx, 'vmid'));
  const pool = ctx.params.pool;
  if (pool !== undefined) ctx.sim.assertPool(pool);
  if (ctx.params.storage !== undefined) requirePrivilege(ctx.principal, `/storage/${ctx.params.storage}`, 'Datastore.AllocateSpace');
  if (flag(ctx, 'ha-managed')) requirePrivilege(ctx.principal, '/', 'Sys.Console');
  if (flag(ctx, 'start') && !holdsOnGuestOrPool(ctx, vmid, pool, 'VM.PowerMgmt')) {
    throw new PermissionError(`/vms/${vmid}, VM.PowerMgmt`);
  }
  if (!holdsOnGuestOrPool(ctx, vmid, pool, 'VM.Allocate')) throw new PermissionError();
  if (ctx.params.archive !== undefined) throw new DieError(`unable to restore VM ${vmid} - restore is not supported by the simulator\n`);
  const options: Record<string, string> = {};
  for (const key of Object.keys(ctx.params).sort()) if (!CREATE_ONLY.has(key)) options[key] = ctx.params[key] as string;
  if (Object.keys(options).length > 0) {
    for (const storage of allocationStorages('qemu', options)) {
      requirePrivilege(ctx.principal, `/storage/${storage}`, 'Datastore.AllocateSpace');
    }
    for (const storage of vmImageStorages(options)) ctx.sim.volumes.checkVmImages(storage);
    checkImportSources(options);
    checkQemuOptionPermissions(ctx.principal, vmid, Object.keys(options));
    checkQemuCreateDevices(ctx.principal, vmid, options);
    checkImportSyntax(options);
  }
  const inUse = vmidInUse(ctx, vmid);
  if (inUse) throw new DieError(`unable to create VM ${vmid} - ${inUse}\n`);
  const values = new Map<string, string>();
  for (const [key, raw] of Object.entries(options)) {
    let value = raw;
    if (/^net\d+$/.test(key)) value = printQemuNet(value);
    if (key === 'tags') value = normaliseTags(value);
    if (key === 'cdrom') {
      values.set('ide2', `${value},media=cdrom`);
      continue;
    }
    values.set(key, value);
  }
  return createTask(ctx, GUEST_FLAVOURS.qemu, node, vmid, values, (guest, log, created) => {
    for (const [key, value] of values) {
      if (!isQemuDrive(key)) continue;
      const disk = createQemuDisk(ctx.sim, guest, key, value);
      const file = parseOption('qemu', key, disk)?.file;
      if (disk !== value && !/media=cdrom/.test(disk)) {
        log.log(`${key}: successfully created disk '${disk}'`);
        if (file) created.push(file);
      }
      values.set(key, disk);
    }
    if (!values.has('boot')) {
      const boot = defaultBootOrder(values);
      if (boot) values.set('boot', boot);
    }
    if (!values.has('smbios1')) values.set('smbios1', `uuid=${randomUUID()}`);
    if (!values.has('vmgenid') || values.get('vmgenid') === '1') values.set('vmgenid', randomUUID());
    values.set('meta', `creation-qemu=10.1.2,ctime=${Math.floor(Date.now() / 1000)}`);
    // `write_vm_config` checks every value it writes.
    for (const [key, value] of values) assertQemuWritable(key, value);
  });
}
