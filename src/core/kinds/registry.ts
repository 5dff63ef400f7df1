/**
 * Every kind of managed object, one import and one line each (docs/adding-a-kind.md): the loader,
 * the planner, the executor, the renderers, the JSON Schema and the queue find a kind here and
 * nowhere else. test/kinds/conformance.test.ts checks every entry.
 */
import type { GuestSpec, ObjectSpec } from '../model.js';
import { backupJobKind } from './backup/backup-job-kind.js';
import { firewallKind } from './firewall/firewall-kind.js';
import { guestKind } from './guest/guest-kind.js';
import { haKind } from './ha/ha-kind.js';
import { poolKind } from './pool/pool-kind.js';
import { poolMemberKind } from './pool/pool-member-kind.js';
import {
  type ApplyPhase,
  type GuestKey,
  type KindDocument,
  type KindFacts,
  type KindPrivilege,
  type ObjectKind,
  phaseRank,
} from './kind.js';

/** The kinds planned and applied through the generic pipeline, in registry order. */
// biome-ignore lint/suspicious/noExplicitAny: each kind has its own port and observed types; the pipeline passes them through untouched.
export const OBJECT_KINDS: readonly ObjectKind<any, any>[] = [poolKind, poolMemberKind, backupJobKind, haKind, firewallKind];

/** Every kind, the guest first. */
export const KINDS: readonly KindFacts[] = [guestKind, ...OBJECT_KINDS];

/** The one document that is policy, not an object: a cluster's naming contract. */
export const CLUSTER_DOCUMENT = 'Cluster';

/** A non-guest kind by registry name. */
// biome-ignore lint/suspicious/noExplicitAny: see OBJECT_KINDS.
export function objectKind(name: string): ObjectKind<any, any> | undefined {
  return OBJECT_KINDS.find((kind) => kind.name === name);
}

/** The kind (and its document entry) a `kind:` value declares, or undefined for an unknown one. */
export function kindOfDocument(documentName: string): { kind: KindFacts; document: KindDocument } | undefined {
  for (const kind of KINDS) {
    const document = kind.documents.find((d) => d.name === documentName);
    if (document) return { kind, document };
  }
  return undefined;
}

/** Every `kind:` value the loader knows, Cluster first, as messages list them. */
export function documentNames(): string[] {
  return [CLUSTER_DOCUMENT, ...KINDS.flatMap((kind) => kind.documents.map((d) => d.name))];
}

/** `Cluster, VM, Container or Pool`: the known document names for a message. */
export function documentNameList(): string {
  const names = documentNames();
  return names.length === 1 ? (names[0] as string) : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

// biome-ignore lint/suspicious/noExplicitAny: see OBJECT_KINDS.
let guestKeyList: readonly { key: GuestKey; kind: ObjectKind<any, any> }[] | undefined;

/**
 * Keys other kinds add to guest documents, with the kind that owns each. Built once: loading asks
 * for them once per guest document.
 */
// biome-ignore lint/suspicious/noExplicitAny: see OBJECT_KINDS.
export function guestKeys(): readonly { key: GuestKey; kind: ObjectKind<any, any> }[] {
  guestKeyList ??= OBJECT_KINDS.flatMap((kind) => (kind.guestKeys ?? []).map((key) => ({ key, kind })));
  return guestKeyList;
}

/** The apply phase of a kind by name (the guest's for `guest`). */
export function phaseOf(kindName: string): ApplyPhase {
  return (KINDS.find((kind) => kind.name === kindName) ?? guestKind).phase;
}

/** Whether the kind's objects live on a node (the per-node slot applies only to those). */
export function kindHasNode(kindName: string): boolean {
  return KINDS.find((kind) => kind.name === kindName)?.hasNode ?? false;
}

/** The privileges every other kind's specs on one cluster need (`ObjectKind.requiredPrivileges`). */
export function kindPrivileges(
  specs: { objects: readonly ObjectSpec[]; guests: readonly GuestSpec[] },
  mode: 'read' | 'apply',
): KindPrivilege[] {
  return OBJECT_KINDS.flatMap(
    (kind) => kind.requiredPrivileges?.({ objects: specs.objects.filter((o) => o.kind === kind.name), guests: specs.guests }, mode) ?? [],
  );
}

/** Orders object specs or items by apply phase, then as given. */
export function byPhase<T extends { kind: string }>(items: readonly T[]): T[] {
  return items
    .map((item, index) => ({ item, index }))
    .sort((a, b) => phaseRank(phaseOf(a.item.kind)) - phaseRank(phaseOf(b.item.kind)) || a.index - b.index)
    .map(({ item }) => item);
}

/** The object specs of one kind in a spec set. */
export function objectsOfKind(objects: readonly ObjectSpec[] | undefined, kindName: string): ObjectSpec[] {
  return (objects ?? []).filter((o) => o.kind === kindName);
}
