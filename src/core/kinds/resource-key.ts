/**
 * The identity of one managed object: which cluster, which kind, which object of that kind. Every
 * place that needs to name an object — a plan item, a queue lock, a FIFO, a stored run — uses this
 * one key and its one text form, instead of building `cluster/vmid` by hand (docs/adding-a-kind.md).
 * Modelled on gitops-engine's `ResourceKey` (group, kind, namespace, name).
 */

/** One object's identity. `id` is the kind's own identifier: a guest's VMID, a pool's id. */
export interface ResourceKey {
  cluster: string;
  kind: string;
  id: string;
}

/** The kind name of guests (VMs and containers). */
export const GUEST_KIND = 'guest';

/** A key from its parts. */
export function resourceKey(cluster: string, kind: string, id: string | number): ResourceKey {
  return { cluster, kind, id: String(id) };
}

/** A guest's key. */
export function guestResourceKey(cluster: string, vmid: number): ResourceKey {
  return resourceKey(cluster, GUEST_KIND, vmid);
}

/**
 * The key as text: `cluster/vmid` for a guest — the form runs, locks and FIFOs stored before kinds
 * existed already use, so a lock held across an upgrade still serialises the same guest — and
 * `cluster/kind/id` for every other kind. A VMID is a number and a kind name is not, so the two
 * forms never meet.
 */
export function keyText(key: ResourceKey): string {
  return key.kind === GUEST_KIND ? `${key.cluster}/${key.id}` : `${key.cluster}/${key.kind}/${key.id}`;
}

/** The text form of a guest's key (`cluster/vmid`). */
export function guestKeyText(cluster: string, vmid: number): string {
  return `${cluster}/${vmid}`;
}

/** A key back from its text, or undefined when the text is not one. Cluster names hold no `/`. */
export function parseKeyText(text: string): ResourceKey | undefined {
  const parts = text.split('/');
  if (parts.length === 2 && parts[0] && /^\d+$/.test(parts[1] ?? '')) return resourceKey(parts[0], GUEST_KIND, parts[1] as string);
  if (parts.length >= 3 && parts[0] && parts[1] && !/^\d+$/.test(parts[1])) {
    return resourceKey(parts[0], parts[1], parts.slice(2).join('/'));
  }
  return undefined;
}
