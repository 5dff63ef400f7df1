/**
 * Proxmox property strings (`virtio=AA:BB:..,bridge=vmbr0,firewall=1`, `local-lvm:32,ssd=1`):
 * comma-separated `key=value` pairs where the first item may omit its key (the "default key").
 */

/** A parsed property string: the default-key value (if any) and the named pairs, in order. */
export interface PropertyString {
  /** The first item when it has no `key=` (a disk's volume, `1` in `agent: 1,fstrim…`). */
  head?: string;
  pairs: [string, string][];
}

/** Splits `a=1,b=2` (or `head,a=1`) into its parts. Values never contain commas in the options we own. */
export function parsePropertyString(value: string): PropertyString {
  const result: PropertyString = { pairs: [] };
  const items = value.split(',').map((item) => item.trim());
  items.forEach((item, index) => {
    if (item === '') return;
    const eq = item.indexOf('=');
    if (eq < 0) {
      if (index === 0) result.head = item;
      else result.pairs.push([item, '']);
      return;
    }
    result.pairs.push([item.slice(0, eq), item.slice(eq + 1)]);
  });
  return result;
}

/** Value of a named pair, if present. */
export function propertyValue(ps: PropertyString, key: string): string | undefined {
  return ps.pairs.find(([k]) => k === key)?.[1];
}

/**
 * Proxmox's stored tag form: split on `,` `;` or whitespace, lower-cased, de-duplicated, sorted,
 * joined with `;` (datacenter.cfg tag-style defaults).
 */
export function normaliseTags(value: string | readonly string[]): string {
  const list = typeof value === 'string' ? value.split(/[,;\s]+/) : value.flatMap((v) => v.split(/[,;\s]+/));
  const seen = new Set<string>();
  for (const tag of list) {
    if (tag === '') continue;
    seen.add(tag.toLowerCase());
  }
  return [...seen].sort().join(';');
}

/** Tag syntax accepted by Proxmox (`PVE_TAG_RE`). */
export const TAG_RE = /^[a-z0-9_][a-z0-9_\-+.]*$/i;

/** Proxmox `dns-name` format (`pve_verify_dns_name`). */
export const DNS_NAME_RE = /^(([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)$/;
