/**
 * Cross-document validation of a loaded spec set: everything that needs more than one document or
 * knowledge of Proxmox. Each rule reports at the YAML node that causes it.
 *
 * VMIDs are cluster-scoped in Proxmox, so duplicates are checked per cluster. Cluster ranges must
 * not overlap (the naming-contract practice of keeping clusters apart), and every pinned VMID must
 * lie in its cluster's range, so a VMID can never be claimed by two clusters either.
 */
import { clusterKey, envPrefix } from '../cluster-name.js';
import { isDiskKey } from '../key-rules.js';
import type { ClusterSpec, GuestSpec, SourceRef, SpecSet, ObjectSpec } from '../model.js';
import { flavourOf, type GuestType } from '../guest-flavours.js';
import { parsePropertyString, propertyValue, DNS_NAME_RE, TAG_RE } from '../property-string.js';
import { validateParams } from '../proxmox-params.js';
import { validateCloneAndTemplate } from './validate-clone.js';
import { classifyConfigKey, isRealConfigKey, type KeyVerdict, MAX_SUGGESTIONS_PER_DOCUMENT, suggestKey } from './config-keys.js';
import { fixedPositions, type DocPath, type DocumentPositions } from './document-positions.js';
import { ErrorsPerFile, MAX_ERRORS_PER_FILE, SpecError, UnshownErrors } from './errors.js';
import { VMID_MAX, VMID_MIN } from './schema.js';
import { UNASSIGNED_VMID } from './vmid.js';
import { validateOrder } from './validate-order.js';

/** Where each spec's parts were written, by spec object. Specs without an entry report at `source`. */
export type SpecPositions = ReadonlyMap<ClusterSpec | GuestSpec | ObjectSpec, DocumentPositions>;

/** `STORAGE:volume` with Proxmox's storage-ID syntax (`pve-storage-id`). */
const VOLUME_STORAGE = /^([a-z][a-z0-9._-]*[a-z0-9]):(.*)$/i;

/** A generation ID as Proxmox stores it; `1` would ask Proxmox to generate one (a new value every create). */
const UUID_RE = /^[a-f0-9]{8}(?:-[a-f0-9]{4}){3}-[a-f0-9]{12}$/i;

const DESCRIPTION_MAX = 8192;

const typeLabel = (type: GuestType): string => `a ${flavourOf(type).noun}`;
const list = (items: readonly string[]): string => items.join(', ');
const where = (at: SourceRef): string => `${at.file}:${at.line}:${at.col}`;

/** Context for {@link validateSpecs}. */
interface ValidateOptions {
  /**
   * Where each spec's parts were written (from `loadSpecs`), so each error points at the offending
   * YAML node; without it errors point at each document's `source` (or a config key's `keySources`).
   */
  positions?: SpecPositions;
  /** Clusters whose document failed to load: their guests are not also reported as orphaned from them. */
  brokenClusters?: ReadonlySet<string>;
  /**
   * Verdicts of the per-guest checks from an earlier validation of the same guest under the same
   * cluster spec (loading shares them between a pull request's base and head); those checks read
   * only the guest, its cluster spec and its positions.
   */
  guestVerdicts?: GuestVerdicts;
  /**
   * The caller shows at most {@link MAX_ERRORS_PER_FILE} errors of a file (`capErrorsPerFile`):
   * a document whose errors cannot be among them has them counted, not built — no message,
   * position or "did you mean", the search that made megabytes of small documents of unknown keys
   * slow (docs/spec-loading.md, "Hostile specs").
   */
  cappedPerFile?: boolean;
}

/** A store of per-guest verdicts (see {@link ValidateOptions.guestVerdicts}). */
export interface GuestVerdicts {
  get(guest: GuestSpec, cluster: ClusterSpec | undefined): readonly SpecError[] | undefined;
  set(guest: GuestSpec, cluster: ClusterSpec | undefined, errors: SpecError[]): void;
}

/** Validates a spec set; returns every error found (unordered). */
export function validateSpecs(specs: SpecSet, options: ValidateOptions = {}): SpecError[] {
  const errors: SpecError[] = [];
  const positions = options.positions ?? new Map();
  const posOf = (spec: ClusterSpec | GuestSpec): DocumentPositions => positions.get(spec) ?? fallbackPositions(spec);
  const clusters = validateClusters(specs.clusters, posOf, errors);
  validateIdentity(specs.guests, clusters, options.brokenClusters ?? new Set(), posOf, errors);
  const perFile = options.cappedPerFile ? new ErrorsPerFile() : undefined;
  for (const guest of specs.guests) {
    const cluster = clusters.get(guest.cluster);
    const known = options.guestVerdicts?.get(guest, cluster);
    if (known) {
      for (const error of known) errors.push(error);
      perFile?.add(known);
      continue;
    }
    const at = posOf(guest);
    const unseen = perFile?.hides(at.start) ?? false;
    const found: SpecError[] = [];
    validateGuest(guest, cluster, at, found, unseen);
    // A verdict of counted errors is only good where it is not shown.
    if (!unseen) options.guestVerdicts?.set(guest, cluster, found);
    perFile?.add(found);
    // One at a time: spreading 100,000 errors of one guest into push() overflows the stack.
    for (const error of found) errors.push(error);
  }
  validateOrder(specs.clusters, specs.guests, posOf, errors);
  return errors;
}

/** Positions of a spec without its YAML: its `source`, and each config key's `keySources` entry. */
export function fallbackPositions(spec: ClusterSpec | GuestSpec): DocumentPositions {
  const base = fixedPositions(spec.source);
  const keySources = 'keySources' in spec ? spec.keySources : undefined;
  if (!keySources) return base;
  const configRef = (path: DocPath): SourceRef =>
    path[0] === 'config' && typeof path[1] === 'string' ? (keySources[path[1]] ?? spec.source) : spec.source;
  return { start: spec.source, key: configRef, value: configRef, keysOf: () => ({}) };
}

type PositionsOf = (spec: ClusterSpec | GuestSpec) => DocumentPositions;

function validateClusters(clusters: readonly ClusterSpec[], posOf: PositionsOf, errors: SpecError[]): Map<string, ClusterSpec> {
  const byName = new Map<string, ClusterSpec>();
  const byKey = new Map<string, ClusterSpec>();
  const ranged: ClusterSpec[] = [];
  for (const cluster of clusters) {
    const at = posOf(cluster);
    const first = byName.get(cluster.name);
    if (first) {
      errors.push(
        new SpecError(at.value(['name']), `duplicate cluster "${cluster.name}" (first defined at ${where(posOf(first).value(['name']))})`),
      );
      continue;
    }
    // Connections are found by the normalised name (`PVE_CLUSTER_LAB_…` serves `lab` and `LAB`):
    // two such names would share one connection, and one document could act on the other's guests.
    const twin = byKey.get(clusterKey(cluster.name));
    if (twin) {
      errors.push(
        new SpecError(
          at.value(['name']),
          `cluster "${cluster.name}" differs from cluster "${twin.name}" (${where(posOf(twin).value(['name']))}) only in case or punctuation: both would use the connection ${envPrefix(cluster.name)}*; give it a distinct name`,
        ),
      );
    } else {
      byKey.set(clusterKey(cluster.name), cluster);
    }
    // Still known by its own name, so its guests are not reported as orphaned from it as well.
    byName.set(cluster.name, cluster);
    const { lower, upper } = cluster.vmids;
    if (lower >= upper) {
      errors.push(new SpecError(at.value(['vmids']), `vmids: lower (${lower}) must be below upper (${upper})`));
    } else if (lower < VMID_MIN || upper > VMID_MAX + 1) {
      errors.push(new SpecError(at.value(['vmids']), `vmids: the range must lie within [${VMID_MIN}, ${VMID_MAX + 1})`));
    } else {
      const other = ranged.find((c) => lower < c.vmids.upper && c.vmids.lower < upper);
      if (other) {
        errors.push(
          new SpecError(
            at.value(['vmids']),
            `vmids [${lower}, ${upper}) overlaps cluster "${other.name}" [${other.vmids.lower}, ${other.vmids.upper}); give each cluster its own range`,
          ),
        );
      } else {
        ranged.push(cluster);
      }
    }
    if (!TAG_RE.test(cluster.ownerTag)) {
      errors.push(new SpecError(at.value(['ownerTag']), `ownerTag "${cluster.ownerTag}" is not a valid Proxmox tag`));
    }
    cluster.nodes.forEach((node, index) => {
      if (cluster.nodes.indexOf(node) !== index) errors.push(new SpecError(at.value(['nodes', index]), `node "${node}" is listed twice`));
    });
  }
  return byName;
}

/**
 * What {@link validateIdentity} reads of each guest, in order, and of each cluster, with the
 * broken clusters: a set that asks exactly this again gets the same answer.
 */
function identityQuestion(
  guests: readonly GuestSpec[],
  clusters: Map<string, ClusterSpec>,
  brokenClusters: ReadonlySet<string>,
): unknown[] {
  const question: unknown[] = [guests.length, ...brokenClusters, clusters.size];
  for (const [name, c] of clusters) question.push(name, c.name, c.vmids.lower, c.vmids.upper, c.nodes.length, ...c.nodes);
  for (const g of guests) question.push(g.cluster, g.node, g.name, g.vmid, g.vmidDerived);
  return question;
}

/**
 * The identity questions last answered with no error: a pull request's base usually names the
 * same guests at the same VMIDs as its head. Only answers without errors are kept (errors name
 * positions, which differ between the two).
 */
const cleanIdentities: unknown[][] = [];
const MAX_CLEAN_IDENTITIES = 4;

/** Names and VMIDs unique per cluster; pinned VMIDs inside the cluster's range. */
function validateIdentity(
  guests: readonly GuestSpec[],
  clusters: Map<string, ClusterSpec>,
  brokenClusters: ReadonlySet<string>,
  posOf: PositionsOf,
  errors: SpecError[],
): void {
  const question = identityQuestion(guests, clusters, brokenClusters);
  const same = (known: unknown[]): boolean => known.length === question.length && known.every((x, i) => x === question[i]);
  if (cleanIdentities.some(same)) return;
  const before = errors.length;
  checkIdentity(guests, clusters, brokenClusters, posOf, errors);
  if (errors.length === before) {
    cleanIdentities.unshift(question);
    cleanIdentities.length = Math.min(cleanIdentities.length, MAX_CLEAN_IDENTITIES);
  }
}

function checkIdentity(
  guests: readonly GuestSpec[],
  clusters: Map<string, ClusterSpec>,
  brokenClusters: ReadonlySet<string>,
  posOf: PositionsOf,
  errors: SpecError[],
): void {
  const names = new Map<string, GuestSpec>();
  const vmids = new Map<string, GuestSpec>();
  for (const guest of guests) {
    const at = posOf(guest);
    const cluster = clusters.get(guest.cluster);
    if (!cluster) {
      if (brokenClusters.has(guest.cluster)) continue;
      const known = [...clusters.keys()];
      errors.push(
        new SpecError(
          at.value(['cluster']),
          `unknown cluster "${guest.cluster}"${known.length ? ` (clusters: ${list(known)})` : ' (no kind: Cluster document defines it)'}`,
        ),
      );
      continue;
    }
    if (!cluster.nodes.includes(guest.node)) {
      errors.push(
        new SpecError(at.value(['node']), `node "${guest.node}" is not a node of cluster "${cluster.name}" (${list(cluster.nodes)})`),
      );
    }
    const nameKey = `${guest.cluster}\0${guest.name}`;
    const sameName = names.get(nameKey);
    if (sameName) {
      errors.push(
        new SpecError(
          at.value(['name']),
          `duplicate guest name "${guest.name}" in cluster "${guest.cluster}" (first defined at ${where(posOf(sameName).value(['name']))})`,
        ),
      );
    } else {
      names.set(nameKey, guest);
    }
    const vmidAt = guest.vmidDerived ? at.start : at.value(['vmid']);
    const { lower, upper } = cluster.vmids;
    if (!guest.vmidDerived && (guest.vmid < lower || guest.vmid >= upper)) {
      errors.push(new SpecError(vmidAt, `vmid ${guest.vmid} is outside cluster "${cluster.name}" range [${lower}, ${upper})`));
    }
    // A VMID that could not be derived has its own error already.
    if (guest.vmid === UNASSIGNED_VMID) continue;
    const vmidKey = `${guest.cluster}\0${guest.vmid}`;
    const sameVmid = vmids.get(vmidKey);
    if (sameVmid) {
      errors.push(new SpecError(vmidAt, `vmid ${guest.vmid} is already used by "${sameVmid.name}" (${where(posOf(sameVmid).start)})`));
    } else {
      vmids.set(vmidKey, guest);
    }
  }
}

/**
 * The per-guest checks. An `unseen` guest's errors cannot be among those its file shows: they are
 * counted into one {@link UnshownErrors}, as many as would have been built, with no message,
 * position or "did you mean" worked out for its config keys.
 */
function validateGuest(
  guest: GuestSpec,
  cluster: ClusterSpec | undefined,
  at: DocumentPositions,
  errors: SpecError[],
  unseen: boolean,
): void {
  // Keys with an error of our own; Proxmox's value check would only repeat it less clearly.
  const reported = new Set<string>();
  // A file shows at most MAX_ERRORS_PER_FILE errors (`capErrorsPerFile`), so neither does one
  // document: the rest are counted, not built (100,000 unknown keys made 100,000 errors).
  let dropped = 0;
  let counted = 0;
  const report = (ref: SourceRef, message: string, key?: string): void => {
    if (key) reported.add(key);
    if (unseen) counted += 1;
    else if (errors.length - before < MAX_ERRORS_PER_FILE) errors.push(new SpecError(ref, message));
    else dropped += 1;
  };
  const before = errors.length;
  const full = (): boolean => unseen || errors.length - before >= MAX_ERRORS_PER_FILE;

  if (!DNS_NAME_RE.test(guest.name))
    report(at.value(['name']), `name "${guest.name}" is not a valid DNS name`, flavourOf(guest.type).nameKey);
  validatePowerState(guest, at, report);
  const suggestions = suggester(guest.type, unseen ? 0 : MAX_SUGGESTIONS_PER_DOCUMENT);
  const skip = (key: string): void => {
    reported.add(key);
    dropped += 1;
  };
  validateConfigKeys(guest, at, report, suggestions, full, skip);
  validateConfigValues(guest, cluster, at, report);
  validateIgnore(guest, at, report, suggestions);
  validateCreateOptions(guest, cluster, at, report);
  validateCloneAndTemplate(guest, at, report);
  validateWithProxmoxSchema(guest, at, reported, report);
  if (unseen) {
    // What would have been built: the first MAX_ERRORS_PER_FILE, and a line for the rest.
    const total = counted + dropped;
    const built = Math.min(total, MAX_ERRORS_PER_FILE) + (total > MAX_ERRORS_PER_FILE ? 1 : 0);
    if (built > 0) errors.push(new UnshownErrors(at.start, built));
  } else if (dropped > 0) errors.push(new SpecError(at.start, `${dropped} more errors in this document are not shown`));
}

type Report = (ref: SourceRef, message: string, key?: string) => void;

function validatePowerState(guest: GuestSpec, at: DocumentPositions, report: Report): void {
  if (guest.state === 'absent' && guest.power === 'running') {
    report(at.value(['power']), 'power: running contradicts state: absent (an absent guest is destroyed)');
  }
  if (guest.type === 'lxc' && guest.state === 'present' && !guest.adopt && !guest.clone && !guest.createOptions?.ostemplate) {
    report(
      at.start,
      'a container needs create.ostemplate (the template it is created from), create.clone, or adopt: true to take over an existing one',
    );
  }
}

/** "Did you mean" for the first `left` unknown keys of a document, none after. */
function suggester(type: GuestType, most: number): (key: string) => string | undefined {
  let left = most;
  return (key) => {
    if (left <= 0) return undefined;
    left -= 1;
    return suggestKey(type, key);
  };
}

function keyMessage(type: GuestType, key: string, verdict: KeyVerdict, suggest: (key: string) => string | undefined): string | undefined {
  switch (verdict.kind) {
    case 'option':
      return undefined;
    case 'unknown': {
      const suggestion = verdict.hint === undefined ? suggest(key) : undefined;
      const extra = verdict.hint ?? (suggestion ? `did you mean "${suggestion}"?` : undefined);
      return `unknown config key "${key}" for ${typeLabel(type)}${extra ? ` (${extra})` : ''}`;
    }
    case 'index-out-of-range':
      return `config key "${key}" is out of range for ${typeLabel(type)} (${verdict.prefix}0 to ${verdict.prefix}${verdict.count - 1})`;
    case 'server-managed':
      return `config key "${key}" is managed by Proxmox and cannot be set`;
    case 'api-parameter':
      return `"${key}" is an API parameter, not a config key`;
    case 'top-level':
      return `"${key}" belongs at the top level of the document, not under config`;
    case 'create-only':
      return `"${key}" is a create-only option: put it under create:`;
    case 'refused':
      return verdict.reason;
  }
}

function validateConfigKeys(
  guest: GuestSpec,
  at: DocumentPositions,
  report: Report,
  suggest: (key: string) => string | undefined,
  full: () => boolean,
  skip: (key: string) => void,
): void {
  for (const key of Object.keys(guest.config)) {
    const verdict = classifyConfigKey(guest.type, key);
    if (verdict.kind === 'option') continue;
    // Past the document's last shown error a key is only counted (and still kept from Proxmox's checks).
    if (full()) {
      skip(key);
      continue;
    }
    const message = keyMessage(guest.type, key, verdict, suggest);
    if (message) report(at.key(['config', key]), message, key);
  }
}

function validateConfigValues(guest: GuestSpec, cluster: ClusterSpec | undefined, at: DocumentPositions, report: Report): void {
  const { config } = guest;
  const valueAt = (key: string): SourceRef => at.value(['config', key]);
  if (guest.type === 'qemu' && config.name !== undefined && config.name !== guest.name) {
    report(
      valueAt('name'),
      `config name "${config.name}" differs from the guest's name "${guest.name}"; leave it out, it is the guest's name`,
      'name',
    );
  }
  if (guest.type === 'lxc' && config.hostname !== undefined && !DNS_NAME_RE.test(config.hostname)) {
    report(valueAt('hostname'), `hostname "${config.hostname}" is not a valid DNS name`, 'hostname');
  }
  if (config.tags !== undefined) {
    for (const tag of config.tags.split(';')) {
      if (tag !== '' && !TAG_RE.test(tag)) report(valueAt('tags'), `tag "${tag}" is not a valid Proxmox tag`, 'tags');
    }
  }
  if (config.vmgenid !== undefined && !UUID_RE.test(config.vmgenid)) {
    report(
      valueAt('vmgenid'),
      'vmgenid must be a UUID: other values make Proxmox generate one, which then differs from the spec on every plan; leave it out to let Proxmox choose',
      'vmgenid',
    );
  }
  if (config.description !== undefined && config.description.length > DESCRIPTION_MAX) {
    report(valueAt('description'), `description may only be ${DESCRIPTION_MAX} characters long`, 'description');
  }
  if (!cluster) return;
  for (const [key, value] of Object.entries(config)) {
    if (cluster.storages && isDiskKey(guest.type, key)) {
      const storage = diskStorage(guest.type, value);
      if (storage !== undefined && !cluster.storages.includes(storage)) {
        report(
          valueAt(key),
          `storage "${storage}" of ${key} is not in cluster "${cluster.name}" storages (${list(cluster.storages)})`,
          key,
        );
      }
    }
    if (cluster.bridges && /^net\d+$/.test(key)) {
      const bridge = propertyValue(parsePropertyString(value), 'bridge');
      if (bridge !== undefined && !cluster.bridges.includes(bridge)) {
        report(valueAt(key), `bridge "${bridge}" of ${key} is not in cluster "${cluster.name}" bridges (${list(cluster.bridges)})`, key);
      }
    }
  }
}

/**
 * The storage a disk value allocates on or lives on, or undefined when the naming contract does not
 * apply: no volume (`none`, a physical `cdrom`), a host path (`/dev/…`), or an installation medium
 * (`media=cdrom`, an `iso/` or `vztmpl/` volume), which live on content storages such as `local`
 * that are not disk storages.
 */
export function diskStorage(type: GuestType, value: string): string | undefined {
  const parsed = parsePropertyString(value);
  if (propertyValue(parsed, 'media') === 'cdrom') return undefined;
  const volume = parsed.head ?? propertyValue(parsed, flavourOf(type).volumeKey);
  if (volume === undefined) return undefined;
  const match = VOLUME_STORAGE.exec(volume);
  if (!match) return undefined;
  const [, storage, rest = ''] = match;
  if (/^(?:iso|vztmpl)\//.test(rest)) return undefined;
  return storage;
}

function validateIgnore(guest: GuestSpec, at: DocumentPositions, report: Report, suggest: (key: string) => string | undefined): void {
  guest.ignore.forEach((key, index) => {
    const ref = at.value(['ignore', index]);
    if (!isRealConfigKey(guest.type, key)) {
      const suggestion = suggest(key);
      report(
        ref,
        `ignore: unknown config key "${key}" for ${typeLabel(guest.type)}${suggestion ? ` (did you mean "${suggestion}"?)` : ''}`,
      );
    } else if (key === 'tags') {
      report(ref, 'ignore: tags cannot be ignored, the owner tag is kept there');
    } else if (key in guest.config) {
      report(ref, `ignore: "${key}" is also set under config; a key is either owned or ignored`);
    }
  });
}

function validateCreateOptions(guest: GuestSpec, cluster: ClusterSpec | undefined, at: DocumentPositions, report: Report): void {
  const storage = guest.createOptions?.storage;
  if (storage !== undefined && cluster?.storages && !cluster.storages.includes(storage)) {
    report(
      at.value(['create', 'storage']),
      `storage "${storage}" is not in cluster "${cluster.name}" storages (${list(cluster.storages)})`,
    );
  }
}

/**
 * Runs the config and create options through Proxmox's own parameter validation for the create
 * call, so a bad value fails in review with the text Proxmox would answer, at that key's line.
 * Keys already reported above are skipped; `description` is checked above (the schema extract
 * lacks it).
 */
function validateWithProxmoxSchema(guest: GuestSpec, at: DocumentPositions, reported: Set<string>, report: Report): void {
  const params: Record<string, string> = {};
  const origin: Record<string, DocPath> = {};
  for (const [key, value] of Object.entries(guest.config)) {
    if (reported.has(key) || key === 'description' || classifyConfigKey(guest.type, key).kind !== 'option') continue;
    params[key] = value;
    origin[key] = ['config', key];
  }
  for (const [key, value] of Object.entries(guest.createOptions ?? {})) {
    params[key] = value;
    origin[key] = ['create', key];
  }
  const found = checkParams(`POST /nodes/{node}/${guest.type}`, params);
  for (const [param, text] of Object.entries(found)) {
    const path = origin[param] ?? ['config', param];
    report(at.value(path), `${path.join('.')}: ${oneLine(text)}`);
  }
}

/**
 * Proxmox's verdict per parameter value, remembered: estates repeat the same values (`memory:
 * 4096`, the same NIC) across hundreds of guests. Safe per key because none of the options a spec
 * can set `requires` another. Bounded so a long-running server does not grow without limit.
 * Nested by endpoint and key rather than keyed by a joined string: the lookup then hashes strings
 * the spec already holds (V8 caches their hashes) instead of building and hashing a new one per
 * value, which was a noticeable part of validating 10,000 guests.
 */
const paramVerdicts = new Map<string, Map<string, Map<string, string | null>>>();
let paramVerdictCount = 0;
const PARAM_VERDICTS_MAX = 100_000;

/** Required parameters the create call checks that a spec does not carry (or that we check ourselves). */
const NOT_FROM_SPEC = ['node', 'vmid', 'ostemplate'];

function checkParams(endpoint: string, params: Record<string, string>): Record<string, string> {
  const errors: Record<string, string> = {};
  const unknown: Record<string, string> = {};
  let known = paramVerdicts.get(endpoint);
  for (const [key, value] of Object.entries(params)) {
    const verdict = known?.get(key)?.get(value);
    if (verdict === undefined) unknown[key] = value;
    else if (verdict !== null) errors[key] = verdict;
  }
  if (Object.keys(unknown).length === 0) return errors;
  const found = validateParams(endpoint, unknown, { ignore: NOT_FROM_SPEC });
  if (paramVerdictCount > PARAM_VERDICTS_MAX) {
    paramVerdicts.clear();
    paramVerdictCount = 0;
  }
  known = paramVerdicts.get(endpoint) ?? new Map<string, Map<string, string | null>>();
  paramVerdicts.set(endpoint, known);
  for (const [key, value] of Object.entries(unknown)) {
    // Property-string errors come back under `key.sub`; they belong to the key.
    const text = Object.entries(found)
      .filter(([param]) => param === key || param.startsWith(`${key}.`))
      .map(([, message]) => message)
      .join('\n');
    const values = known.get(key) ?? new Map<string, string | null>();
    known.set(key, values);
    values.set(value, text === '' ? null : text);
    paramVerdictCount++;
    if (text !== '') errors[key] = text;
  }
  return errors;
}

/** Proxmox's texts end in `\n` and nest property-string errors on further lines. */
function oneLine(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join('; ');
}
