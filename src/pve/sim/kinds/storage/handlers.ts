/**
 * The storage kind's handlers: `GET /nodes/{node}/storage` (pve-storage `API2/Storage/Status.pm`,
 * `index`) and `GET /nodes/{node}/storage/{storage}/content` (`API2/Storage/Content.pm`,
 * `index`). What a token sees follows the same privileges as everywhere else
 * (docs/proxmox-behaviour.md); pools are their own kind (`kinds/pool`).
 */
import { splitList } from '../../../../core/proxmox-params.js';
import { hasAnyPrivilege, hasPrivilege } from '../../auth.js';
import { param, type HandlerResult, type RequestContext } from '../../context.js';
import { DieError, ParamError } from '../../errors.js';
import { flavourOf } from '../../guest/flavours.js';
import { parseVolumeId } from '../../property-format.js';
import type { SimStorage } from '../../volumes.js';

const STORAGE_PRIVILEGES = ['Datastore.Audit', 'Datastore.AllocateSpace'];

/** `content_hash_to_string`: the storage's content types, comma-joined. */
export function contentString(storage: SimStorage): string {
  return [...storage.content].sort().join(',');
}

/** One `storage_info` entry: type, content, sizes, flags. */
function storageStatus(ctx: RequestContext, storage: SimStorage, node: string): Record<string, unknown> {
  if (storage.nodes && !storage.nodes.has(node)) {
    // `storage_info`: a storage restricted to other nodes is listed disabled, without its sizes (RHS-6).
    return {
      storage: storage.storage,
      type: storage.type,
      content: contentString(storage),
      shared: storage.shared ? 1 : 0,
      active: 0,
      enabled: 0,
      total: 0,
      used: 0,
      avail: 0,
    };
  }
  const used = ctx.sim.volumes.used(storage.storage);
  const total = storage.total;
  return {
    storage: storage.storage,
    type: storage.type,
    content: contentString(storage),
    shared: storage.shared ? 1 : 0,
    active: 1,
    enabled: 1,
    total,
    used,
    avail: total - used,
    used_fraction: used / total,
  };
}

/**
 * `GET /nodes/{node}/storage`: storages the token holds Datastore.Audit or
 * Datastore.AllocateSpace on (others are left out, no error), filtered by `storage` (an
 * unknown one is a 400), `content` (any of the listed types) and `enabled`.
 */
export function listStorages(ctx: RequestContext): HandlerResult {
  const wanted = ctx.params.storage;
  const node = param(ctx, 'node');
  const content = ctx.params.content === undefined ? undefined : splitList(ctx.params.content);
  const candidates = ctx.sim.volumes
    .storageIds()
    .map((id) => ctx.sim.volumes.storage(id) as SimStorage)
    // With a content filter, `storage_info` leaves out storages not enabled on the node.
    .filter((s) => content === undefined || (content.some((ct) => s.content.has(ct)) && (!s.nodes || s.nodes.has(node))));
  if (wanted !== undefined && !candidates.some((s) => s.storage === wanted)) {
    throw new ParamError({ storage: 'No such storage.' });
  }
  const data: Record<string, unknown>[] = [];
  for (const storage of candidates) {
    if (!hasAnyPrivilege(ctx.principal, `/storage/${storage.storage}`, STORAGE_PRIVILEGES)) continue;
    if (wanted !== undefined && storage.storage !== wanted) continue;
    const entry = storageStatus(ctx, storage, node);
    if (ctx.params.format === '1') {
      // `get_formats`: a directory holds raw, qcow2, vmdk and subvol; block storages raw (and subvol).
      const supported = storage.path !== undefined ? ['qcow2', 'raw', 'subvol', 'vmdk'] : ['raw', 'subvol'];
      entry.formats = { supported, default: 'raw' };
      entry.format = [Object.fromEntries(supported.map((f) => [f, 1])), 'raw'];
    }
    data.push(entry);
  }
  return { data };
}

/**
 * `GET /nodes/{node}/storage/{storage}/content` (`volume_list` + `check_volume_access` per
 * volume): templates and ISOs for anyone with storage access; a guest's disk image only with
 * VM.Config.Disk on that guest (an auditor sees no images). `vmid` lists that guest's images
 * only (no templates or ISOs); `content` one type. Sorted by volume id.
 */
export function listStorageContent(ctx: RequestContext): HandlerResult {
  const id = param(ctx, 'storage');
  const storage = ctx.sim.volumes.storage(id);
  if (!storage) throw new DieError(`storage '${id}' does not exist\n`);
  const vmid = ctx.params.vmid === undefined ? undefined : Number(ctx.params.vmid);
  const types = (
    ctx.params.content === undefined ? ['rootdir', 'images', 'vztmpl', 'iso', 'backup', 'snippets', 'import'] : [ctx.params.content]
  ).filter((ct) => storage.content.has(ct));
  const items: Record<string, unknown>[] = [];
  for (const type of types) {
    if (type === 'images' || type === 'rootdir') {
      for (const image of ctx.sim.volumes.images(id)) {
        if (vmid !== undefined && image.vmid !== vmid) continue;
        const owner = ctx.sim.guests.get(image.vmid);
        const content = owner ? flavourOf(owner.type).storageContent : 'images';
        if (content !== type) continue;
        // Images of a guest need Datastore.Audit on the storage and VM.Config.Disk on the guest.
        if (!hasPrivilege(ctx.principal, `/storage/${id}`, 'Datastore.Allocate')) {
          if (!hasPrivilege(ctx.principal, `/storage/${id}`, 'Datastore.Audit')) continue;
          if (!hasPrivilege(ctx.principal, `/vms/${image.vmid}`, 'VM.Config.Disk')) continue;
        }
        items.push({
          volid: image.volid,
          format: storage.type === 'dir' && !/\.(raw|qcow2|vmdk)$/.test(image.volid) ? 'raw' : formatOf(image.volid),
          size: image.size,
          vmid: image.vmid,
          ctime: 1_735_689_600,
          content,
        });
      }
      continue;
    }
    // File content is listed without a `vmid` filter only (backups aside, which are not simulated).
    if (vmid !== undefined || storage.path === undefined) continue;
    for (const file of ctx.sim.volumes.filesOn(id)) {
      const volname = parseVolumeId(file.volid)?.volname ?? '';
      const fileType = volname.split('/')[0];
      if (fileType !== type) continue;
      items.push({ volid: file.volid, format: fileFormat(type, volname), size: file.size, ctime: file.ctime, content: type });
    }
  }
  items.sort((a, b) => {
    const x = String(a.volid).toLowerCase();
    const y = String(b.volid).toLowerCase();
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return { data: items };
}

function formatOf(volid: string): string {
  const m = /\.(raw|qcow2|vmdk)$/.exec(volid);
  return m ? (m[1] as string) : 'raw';
}

/** `get_subdir_files` formats: `iso`, `tzst`/`tgz`/… for templates (`t` + compression), `snippet`. */
function fileFormat(type: string, volname: string): string {
  if (type === 'iso') return 'iso';
  if (type === 'snippets') return 'snippet';
  if (type === 'vztmpl') {
    const m = /\.tar(?:\.(gz|xz|zst|bz2))?$/.exec(volname) ?? /\.t(gz|xz|zst)$/.exec(volname);
    if (!m) return 'tar';
    return m[1] === undefined ? 'tar' : `t${m[1]}`;
  }
  const ext = /\.([a-z0-9]+)$/.exec(volname);
  return ext ? (ext[1] as string) : 'raw';
}
