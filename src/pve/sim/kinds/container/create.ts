/**
 * `POST /nodes/{node}/lxc` (`create_vm`, pve-container `API2/LXC.pm`): the container flavour's
 * create. Permissions are checked inside, after parameter validation, and after the VMID check:
 * a privileged container needs Sys.Modify, then VM.Allocate, then `check_ct_modify_config_perm`
 * (feature flags, mount point types, devices, hookscript) and the storages. Since pve-container
 * 6.0.7 a container is unprivileged unless the request says `unprivileged=0`, and
 * `unprivileged: 1` is written to its config (docs/proxmox-behaviour.md).
 */
import { normaliseTags } from '../../../../core/property-string.js';
import { hasPrivilege } from '../../auth.js';
import { flag, param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, ParamError, PermissionError } from '../../errors.js';
import { perlTrue } from '../../guest/guest.js';
import { createTask, holdsOnGuestOrPool, vmidInUse } from '../../guest/create.js';
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { checkLxcOptionPermissions, requireAnyPrivilege, requirePrivilege } from '../../permissions.js';
import { formatSize, isLxcMount, optionFormat, parseOption, parseVolumeId, printPropertyString } from '../../property-format.js';
import { assertLxcWritable, normaliseLxcList, printLxcNet } from '../../config-update/container.js';

/** Parameters of the create call that are not config options. */
const CREATE_ONLY = new Set([
  'node',
  'vmid',
  'ostemplate',
  'password',
  'ssh-public-keys',
  'storage',
  'restore',
  'force',
  'unique',
  'ignore-unpack-errors',
  'pool',
  'start',
  'ha-managed',
  'bwlimit',
]);

/** `ostype` from a template name (`debian-12-standard_…` → `debian`). */
function ostypeFromTemplate(template: string): string {
  const base = template.replace(/^.*[/:]/, '').toLowerCase();
  const known = ['debian', 'ubuntu', 'centos', 'fedora', 'opensuse', 'archlinux', 'alpine', 'gentoo', 'nixos', 'devuan'];
  return (
    known.find((os) => base.startsWith(os)) ?? (base.startsWith('rockylinux') || base.startsWith('almalinux') ? 'centos' : 'unmanaged')
  );
}

/** `check_volume_access` for the template: it must be a `vztmpl` volume the token may read. */
function checkTemplateAccess(ctx: RequestContext, template: string): void {
  const id = parseVolumeId(template);
  if (!id) {
    // A path: `die "Only root can pass arbitrary filesystem paths."` (no newline: Perl appends the location).
    throw new DieError('Only root can pass arbitrary filesystem paths. at /usr/share/perl5/PVE/Storage.pm line 652.\n');
  }
  ctx.sim.volumes.checkStorage(id.storage);
  if (!/^vztmpl\//.test(id.volname)) {
    throw new DieError(`unable to use volume ${template} - content type needs to be 'vztmpl'\n`);
  }
  if (hasPrivilege(ctx.principal, `/storage/${id.storage}`, 'Datastore.Allocate')) return;
  requireAnyPrivilege(ctx.principal, `/storage/${id.storage}`, ['Datastore.AllocateSpace', 'Datastore.Audit']);
}

/** `$check_and_activate_storage` of lxc's create: the storage must hold container directories. */
function checkContainerStorage(ctx: RequestContext, id: string, node: string): void {
  const storage = ctx.sim.volumes.storage(id);
  if (!storage) throw new DieError(`storage '${id}' does not exist\n`);
  ctx.sim.volumes.checkOnNode(id, node);
  if (!storage.content.has('rootdir')) throw new ParamError({ storage: `storage '${id}' does not support container directories` });
  requirePrivilege(ctx.principal, `/storage/${id}`, 'Datastore.AllocateSpace');
}

/** The handler. */
export function createContainer(ctx: RequestContext): HandlerResult {
  const node = param(ctx, 'node');
  const vmid = Number(param(ctx, 'vmid'));
  const pool = ctx.params.pool;
  const unprivileged = ctx.params.unprivileged === undefined ? true : flag(ctx, 'unprivileged');
  if (!unprivileged) requirePrivilege(ctx.principal, '/', 'Sys.Modify');
  if (flag(ctx, 'ha-managed')) requirePrivilege(ctx.principal, '/', 'Sys.Console');
  const inUse = vmidInUse(ctx, vmid);
  if (inUse) throw new DieError(`${inUse}\n`);
  if (pool !== undefined) ctx.sim.assertPool(pool);
  if (!holdsOnGuestOrPool(ctx, vmid, pool, 'VM.Allocate')) throw new PermissionError();
  const template = param(ctx, 'ostemplate');
  const storage = ctx.params.storage ?? 'local';
  const options = new Map<string, string>();
  for (const key of Object.keys(ctx.params).sort()) {
    if (CREATE_ONLY.has(key) || key === 'unprivileged') continue;
    options.set(key, ctx.params[key] as string);
  }
  checkLxcOptionPermissions(ctx.principal, vmid, undefined, options, [], unprivileged);
  checkTemplateAccess(ctx, template);
  const values = new Map<string, string>();
  for (const [key, raw] of options) {
    let value = raw;
    // A bare size on a mount point means the default storage (`storage`).
    if (isLxcMount(key) && /^\d+(\.\d+)?$/.test(value)) value = `${storage}:${value}`;
    if (/^unused\d+$/.test(key)) continue;
    if (/^net\d+$/.test(key)) value = printLxcNet(value);
    if (key === 'tags') value = normaliseTags(value);
    if (key === 'nameserver' || key === 'searchdomain') value = normaliseLxcList(value);
    values.set(key, value);
  }
  if (values.has('rootfs') || [...values.keys()].some((k) => /^mp\d+$/.test(k))) {
    if (!values.has('rootfs')) throw new DieError("mount points configured, but 'rootfs' not set - aborting\n");
  }
  for (const key of ['rootfs', ...[...values.keys()].filter((k) => /^mp\d+$/.test(k))]) {
    const volume = parseOption('lxc', key, values.get(key) ?? `${storage}:4`)?.volume ?? '';
    const id = parseVolumeId(volume);
    if (id) checkContainerStorage(ctx, id.storage, node);
  }
  if (unprivileged) values.set('unprivileged', '1');
  if (!values.has('arch')) values.set('arch', 'amd64');
  if (!values.has('ostype')) values.set('ostype', ostypeFromTemplate(template));
  if (!values.has('rootfs')) values.set('rootfs', `${storage}:4`);
  return createTask(ctx, GUEST_FLAVOURS.lxc, node, vmid, values, (_guest, log, created) => {
    for (const [key, value] of values) {
      if (!isLxcMount(key)) continue;
      const format = optionFormat('lxc', key);
      const mp = parseOption('lxc', key, value);
      const alloc = /^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(?:\.\d+)?)$/i.exec(mp?.volume ?? '');
      if (!format || !mp || !alloc) continue;
      const bytes = Math.round(Number(alloc[2]) * 1024 ** 3);
      mp.volume = ctx.sim.volumes.allocate(alloc[1] as string, vmid, bytes, node);
      created.push(mp.volume);
      mp.size = formatSize(bytes);
      values.set(key, printPropertyString(format, mp));
    }
    const path = ctx.sim.volumes.filePath(template);
    if (!ctx.sim.volumes.fileExists(template)) throw new Error(`failed to open '${path}': No such file or directory`);
    log.log(`extracting archive '${path}'`);
    log.log('Total bytes read: 523182080 (499MiB, 1.2GiB/s)');
    // The defaults `create_vm` fills in once the archive is extracted.
    if (!values.get('hostname')) values.set('hostname', `CT${vmid}`);
    if (!perlTrue(values.get('memory'))) values.set('memory', '512');
    if (!values.has('swap')) values.set('swap', '512');
    assertLxcWritable([values]);
  });
}
