/**
 * The per-document part of loading: checks one spec document's shape (zod), builds its
 * `ClusterSpec` or `GuestSpec` (config values as wire strings), and runs the checks of a guest
 * that need no other document (`checkGuest`). It needs nothing but the document, so it runs where
 * the file is parsed (`parseSpecFile`, in worker threads for large repositories); what needs every
 * file — VMIDs, duplicates, clusters — is left to `assembleSpecs`.
 */
import type { z } from 'zod';
import type { ClusterSpec, GuestSpec, GuestType, SourceRef } from '../model.js';
import { classifyConfigKey, editDistance } from './config-keys.js';
import type { DocPath, DocumentPositions } from './document-positions.js';
import type { SpecProblem } from './errors.js';
import {
  ClusterDocument,
  ContainerDocument,
  DOCUMENT_SCHEMAS,
  SpecKind,
  VmDocument,
} from './schema.js';
import { checkGuest, type GuestFindings } from './validate-specs.js';
import { UNASSIGNED_VMID, vmidHash } from './vmid.js';
import { toWireValue } from './wire-values.js';

/** What one mapping document turned out to be. Plain data: structured-cloneable across threads. */
export type BuiltDocument =
  /** Not a valid spec: its errors. A cluster's name is kept so its guests skip cluster checks. */
  | { kind: 'invalid'; errors: SpecProblem[]; brokenCluster?: string }
  | { kind: 'cluster'; spec: ClusterSpec }
  /**
   * A guest, with what its own checks found (`checkGuest`; `findings.errors` also holds the values
   * that could not be converted): errors, Proxmox's parameter errors that stand only if no cluster
   * check reports the same key, and the names the cluster's naming contract constrains. Its VMID is
   * `UNASSIGNED_VMID` when not written: it is derived across files, from `vmidHash` (computed
   * here, see `vmid.ts`); its `keySources` are added
   * where it is assembled (`addKeySources`).
   */
  | { kind: 'guest'; spec: GuestSpec; findings: GuestFindings; vmidHash?: number };

/**
 * Builds the spec of one mapping document (`raw` is its `toJS()` value, `at` where its parts were
 * written) and checks what the document alone decides.
 */
export function buildDocument(raw: Record<string, unknown>, at: DocumentPositions): BuiltDocument {
  if (!('kind' in raw)) {
    return {
      kind: 'invalid',
      errors: [{ at: at.start, message: 'document has no kind (Cluster, VM or Container); every YAML document under the spec root must be a spec' }],
    };
  }
  const kind = SpecKind.safeParse(raw.kind);
  if (!kind.success) {
    return { kind: 'invalid', errors: [{ at: at.value(['kind']), message: `unknown kind ${describe(raw.kind)} (expected Cluster, VM or Container)` }] };
  }
  const parsed = DOCUMENT_SCHEMAS[kind.data].safeParse(raw);
  if (!parsed.success) {
    const errors = parsed.error.issues.flatMap((issue) => issueErrors(issue, raw, at, kind.data));
    return kind.data === 'Cluster' && typeof raw.name === 'string' ? { kind: 'invalid', errors, brokenCluster: raw.name } : { kind: 'invalid', errors };
  }
  if (parsed.data.kind === 'Cluster') return { kind: 'cluster', spec: toClusterSpec(parsed.data, at.start) };
  const errors: SpecProblem[] = [];
  const guest = toGuestSpec(parsed.data, at, errors);
  const findings = checkGuest(guest, at);
  return {
    kind: 'guest',
    spec: guest,
    findings: { ...findings, errors: errors.concat(findings.errors) },
    ...(guest.vmidDerived ? { vmidHash: vmidHash(guest.cluster, guest.name) } : {}),
  };
}

function toClusterSpec(doc: ClusterDocument, source: SourceRef): ClusterSpec {
  return {
    name: doc.name,
    vmids: { lower: doc.vmids.lower, upper: doc.vmids.upper },
    ownerTag: doc.ownerTag,
    nodes: doc.nodes,
    ...(doc.storages ? { storages: doc.storages } : {}),
    ...(doc.bridges ? { bridges: doc.bridges } : {}),
    prune: doc.prune,
    source,
  };
}

function toGuestSpec(doc: VmDocument | ContainerDocument, at: DocumentPositions, errors: SpecProblem[]): GuestSpec {
  const type: GuestType = doc.kind === 'VM' ? 'qemu' : 'lxc';
  const config: Record<string, string> = {};
  for (const [key, value] of Object.entries(doc.config)) {
    const verdict = classifyConfigKey(type, key);
    const converted = toWireValue(key, value, verdict.kind === 'option' ? verdict.schema : undefined);
    if (!converted.ok) {
      errors.push({ at: at.value(['config', key]), message: `config.${key}: ${converted.message}` });
      continue;
    }
    config[key] = converted.value;
  }
  const createOptions: Record<string, string> = {};
  for (const [key, value] of Object.entries(doc.create)) {
    if (value === undefined) continue;
    createOptions[key] = Array.isArray(value) ? value.join('\n') : value;
  }
  return {
    kind: doc.kind,
    type,
    name: doc.name,
    cluster: doc.cluster,
    node: doc.node,
    vmid: doc.vmid ?? UNASSIGNED_VMID,
    vmidDerived: doc.vmid === undefined,
    power: doc.power,
    state: doc.state,
    adopt: doc.adopt,
    ignore: doc.ignore,
    config,
    ...(Object.keys(createOptions).length > 0 ? { createOptions } : {}),
    source: at.start,
  };
}

/**
 * Sets `guest.keySources` from where its document was written. Done where the spec is assembled,
 * not where it is built: the positions travel between threads anyway, and a `SourceRef` per
 * config key would make the result sent back from a worker half as large again (measured: 8 MB
 * more for 10,000 guests, and more time to receive it than to compute them here).
 */
export function addKeySources(guest: GuestSpec, at: DocumentPositions): void {
  const written = at.keysOf(['config']);
  const keySources: Record<string, SourceRef> = {};
  // Keys merged in with `<<` have no entry of their own; they point at the config mapping.
  for (const key of Object.keys(guest.config)) keySources[key] = written[key] ?? at.key(['config', key]);
  guest.keySources = keySources;
}


const EXPECTED: Record<string, string> = {
  int: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
  record: 'a mapping',
};

/** A short description of a YAML value for messages. */
function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

function pathLabel(path: readonly PropertyKey[]): string {
  let label = '';
  for (const segment of path) label += typeof segment === 'number' ? `[${segment}]` : `${label ? '.' : ''}${String(segment)}`;
  return label;
}

function valueAtPath(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const segment of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[segment];
  }
  return node;
}

/** Top-level keys of each kind, for "did you mean". */
const KIND_KEYS: Record<SpecKind, string[]> = {
  Cluster: Object.keys(ClusterDocument.shape),
  VM: Object.keys(VmDocument.shape),
  Container: Object.keys(ContainerDocument.shape),
};

function unknownKeyHint(kind: SpecKind, parent: readonly PropertyKey[], key: string): string {
  if (parent.length === 0) {
    if (kind !== 'Cluster' && classifyConfigKey(kind === 'VM' ? 'qemu' : 'lxc', key).kind === 'option') {
      return ' (Proxmox options go under config:)';
    }
    const near = closest(key, KIND_KEYS[kind]);
    return near ? ` (did you mean "${near}"?)` : '';
  }
  if (parent.length === 1 && parent[0] === 'create') {
    if (key === 'password') return ' (a password does not belong in a repository; use ssh-public-keys)';
    const allowed = Object.keys((kind === 'Container' ? ContainerDocument : VmDocument).shape.create.unwrap().shape);
    return ` (create options for ${kind === 'VM' ? 'a VM' : 'a container'}: ${allowed.join(', ')})`;
  }
  return '';
}

function closest(key: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of candidates) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

/** Turns one zod issue into errors at the YAML node it concerns. */
function issueErrors(issue: z.core.$ZodIssue, raw: unknown, at: DocumentPositions, kind: SpecKind): SpecProblem[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  const label = pathLabel(path);
  const value = valueAtPath(raw, path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map(
        (key) =>
          problem(
            at.key([...path, key]),
            `unknown key "${key}" ${path.length ? `in ${label}` : `in ${kind}`}${unknownKeyHint(kind, path, key)}`,
          ),
      );
    case 'invalid_type': {
      const parentPath: DocPath = path.slice(0, -1);
      const parent = valueAtPath(raw, parentPath);
      const last = path[path.length - 1];
      if (last !== undefined && parent !== null && typeof parent === 'object' && !(last in parent)) {
        const ref = parentPath.length === 0 ? at.start : at.value(parentPath);
        return [problem(ref, `missing required key "${String(last)}"${parentPath.length ? ` in ${pathLabel(parentPath)}` : ''}`)];
      }
      return [problem(at.value(path), `${label}: expected ${EXPECTED[issue.expected] ?? issue.expected}, got ${describe(value)}`)];
    }
    case 'invalid_value':
      return [problem(at.value(path), `${label}: expected one of ${issue.values.map(String).join(', ')}, got ${describe(value)}`)];
    case 'too_small':
      return [
        problem(
          at.value(path),
          issue.origin === 'array' || issue.origin === 'string'
            ? `${label}: must not be empty`
            : `${label}: must be at least ${String(issue.minimum)}`,
        ),
      ];
    case 'too_big':
      return [problem(at.value(path), `${label}: must be at most ${String(issue.maximum)}`)];
    default:
      return [problem(at.value(path), `${label}: ${issue.message}`)];
  }
}

function problem(at: SourceRef, message: string): SpecProblem {
  return { at, message };
}
