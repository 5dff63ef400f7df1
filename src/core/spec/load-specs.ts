/**
 * Loads the spec repository (docs/design.md#the-spec-repository) from file texts: parse every YAML document, check its
 * shape, convert values to Proxmox's wire strings, derive missing VMIDs and validate the whole set.
 * Pure: the caller reads the files (`src/spec-files/read-spec-dir.ts`, or the GitHub API at a SHA).
 *
 * Two halves: `parseSpecFile` (per file, plain-data result, the expensive part) and `assembleSpecs`
 * (everything across files), so large repositories can be parsed in worker threads
 * (`src/spec-files/load-spec-files.ts`).
 */
import { restartPolicy } from './restart-policy.js';
import type { z } from 'zod';
import type { CloneSource, ClusterSpec, GuestSpec, ObjectSpec, SourceRef, SpecSet } from '../model.js';
import type { KindDocument, ObjectKind } from '../kinds/kind.js';
import { documentNameList, guestKeys, kindOfDocument, objectKind } from '../kinds/registry.js';
import type { GuestType } from '../guest-flavours.js';
import { classifyConfigKey, MAX_SUGGESTIONS_PER_DOCUMENT } from './config-keys.js';
import { NearestNames } from './nearest-name.js';
import { fixedPositions, type DocPath, type DocumentPositions } from './document-positions.js';
import { capErrorsPerFile, compareSpecErrors, SpecError } from './errors.js';
import type { SpecParseCache } from './parse-cache.js';
import { parseSpecText } from './parse-spec-file.js';
import type { ParsedSpecFile, ParsedSpecText } from './parsed-spec.js';
import { lineCounterFrom, tablePositions } from './position-table.js';
import { ClusterDocument, ContainerDocument, DOCUMENT_SCHEMAS, SpecKind, VmDocument } from './schema.js';
import { quickGuestDocument } from './guest-document.js';
import { formatBytes, limitHint, resolveSpecLimits, type SpecLimits } from './spec-limits.js';
import { decodeSpecFile, specFileBytes, type SpecFileInput } from './spec-text.js';
import { validateSpecs, type GuestVerdicts, type SpecPositions } from './validate-specs.js';
import { validateObjects } from './validate-objects.js';
import { assignVmids, UNASSIGNED_VMID } from './vmid.js';
import { toWireValue } from './wire-values.js';
import { keyedRecord } from './keyed-record.js';
import { recordCopies } from './loaded-copies.js';

/** One file of the spec repository: its path relative to the spec root, and its text. */
export interface SpecFile {
  path: string;
  text: string;
}

/** Options of {@link loadSpecs} (and `loadSpecFiles`, which adds threads). */
export interface LoadSpecsOptions {
  /** Bounds on the repository (defaults: `DEFAULT_SPEC_LIMITS`); the front end reads them from its configuration. */
  limits?: Partial<SpecLimits>;
  /** Parsed texts shared with other loads: equal file contents parse once (see `parse-cache.ts`). */
  cache?: SpecParseCache;
  /** Names the repository in errors about it as a whole (too many files, too many bytes). Default `spec repository`. */
  label?: string;
}

/** What loading found. `specs` is complete only when `errors` is empty; never plan from it otherwise. */
export interface LoadedSpecs {
  specs: SpecSet;
  /** Every problem, ordered by file and position. */
  errors: SpecError[];
  /** Where each spec's parts were written, for annotations. */
  positions: SpecPositions;
}

/**
 * Loads and validates spec files. Documents without content are skipped; every other document must
 * be a mapping with a `kind` the registry knows (`Cluster`, and each kind's documents: `VM`,
 * `Container`, `Pool`, … see `core/kinds/registry.ts`) — a document without `kind` is an error, not
 * silently ignored, because a misspelt `kind` would otherwise drop a guest from the repository
 * (and with `prune: true`, destroy it). Other YAML files do not belong under the spec root.
 *
 * Config values are converted by `toWireValue` (see `wire-values.ts`); the guest's name, owner tag
 * and other derived values are left to the planner, so `config` holds exactly what was written.
 */
export function loadSpecs(files: readonly SpecFileInput[], options: LoadSpecsOptions = {}): LoadedSpecs {
  const prepared = prepareSpecFiles(files, options);
  if (prepared.refused) return refused(prepared.errors);
  const parsed = prepared.texts.map((file) => ({ path: file.path, ...parseCached(file.text, prepared, options.cache) }));
  return assembleSpecs(parsed, prepared);
}

/** Spec files checked against the repository's bounds and decoded: what is left to parse. */
interface PreparedSpecFiles {
  limits: SpecLimits;
  label: string;
  /** The files to parse, decoded, in the order given. */
  texts: SpecFile[];
  /** Files refused whole (over the size limit, not UTF-8), as `file: message` errors. */
  errors: SpecError[];
  /** True when the repository as a whole is over a bound: nothing may be parsed. */
  refused: boolean;
  /** Identifies the limits, so a cache never answers with a parse made under other limits. */
  limitsKey: string;
  /**
   * Whether parses may be shared with other loads (a cache was given): then what follows from a
   * file's parse is kept for them too, and each load gets its own copies of the specs.
   */
  shared: boolean;
}

/**
 * The first step of loading: the repository's bounds (file count, total bytes, bytes per file)
 * and strict decoding, before any YAML is parsed. A repository over a bound is refused whole; a
 * file over the per-file bound or not UTF-8 is refused alone (an error, so loading fails).
 */
export function prepareSpecFiles(files: readonly SpecFileInput[], options: LoadSpecsOptions = {}): PreparedSpecFiles {
  const limits = resolveSpecLimits(options.limits);
  const label = options.label ?? 'spec repository';
  const prepared: PreparedSpecFiles = {
    limits,
    label,
    texts: [],
    errors: [],
    refused: false,
    limitsKey: JSON.stringify(limits),
    shared: options.cache !== undefined,
  };
  const whole = (message: string): PreparedSpecFiles => ({ ...prepared, errors: [fileError(label, message)], refused: true });
  if (files.length > limits.maxFiles) {
    return whole(`${files.length.toLocaleString('en-US')} spec files is more than allowed; ${limitHint(limits, 'maxFiles')}`);
  }
  const sizes = files.map(specFileBytes);
  const total = sizes.reduce((sum, size) => sum + size, 0);
  if (total > limits.maxTotalBytes) {
    return whole(`${formatBytes(total)} of spec files is more than allowed; ${limitHint(limits, 'maxTotalBytes')}`);
  }
  files.forEach((file, index) => {
    const size = sizes[index] ?? 0;
    if (size > limits.maxFileBytes) {
      prepared.errors.push(
        fileError(file.path, `${formatBytes(size)} is more than a spec file may hold; ${limitHint(limits, 'maxFileBytes')}`),
      );
      return;
    }
    const decoded = decodeSpecFile(file);
    if (decoded.ok) prepared.texts.push({ path: file.path, text: decoded.text });
    else prepared.errors.push(new SpecError({ file: file.path, line: decoded.line, col: decoded.col }, decoded.message));
  });
  return prepared;
}

/** An error about a file or the repository as a whole: `file: message`, without a position. */
function fileError(file: string, message: string): SpecError {
  return new SpecError({ file, line: 0, col: 0 }, message);
}

function refused(errors: SpecError[]): LoadedSpecs {
  return { specs: { clusters: [], guests: [] }, errors, positions: new Map() };
}

/** The spec set of a load: objects only when there are some, so guest-only sets look as before. */
function specSetOf(state: LoadState): SpecSet {
  return { clusters: state.clusters, guests: state.guests, ...(state.objects.length > 0 ? { objects: state.objects } : {}) };
}

/** Everything that checks a whole set: the guests' and clusters' rules, then each kind's. */
function validateAll(specs: SpecSet, options: Parameters<typeof validateSpecs>[1]): SpecError[] {
  const errors = validateSpecs(specs, options);
  for (const error of validateObjects(specs)) errors.push(error);
  return errors;
}

/**
 * The parse of `text`, from `cache` when it holds one made under the same limits, which it then
 * holds. (`loadSpecFiles` parses its misses on threads and stores them with {@link cacheParsed}.)
 */
export function parseCached(text: string, prepared: PreparedSpecFiles, cache: SpecParseCache | undefined): ParsedSpecText {
  const cached = cachedParse(text, prepared, cache);
  if (cached) return cached;
  const parsed = parseSpecText(text, prepared.limits);
  cacheParsed(text, parsed, prepared, cache);
  return parsed;
}

/** The cached parse of `text`, if any (see {@link parseCached}). */
export function cachedParse(text: string, prepared: PreparedSpecFiles, cache: SpecParseCache | undefined): ParsedSpecText | undefined {
  if (!cache) return undefined;
  bindCache(cache, prepared.limitsKey);
  return cache.get(text);
}

/** Stores a parse made under `prepared.limits`. */
export function cacheParsed(text: string, parsed: ParsedSpecText, prepared: PreparedSpecFiles, cache: SpecParseCache | undefined): void {
  if (!cache) return;
  bindCache(cache, prepared.limitsKey);
  cache.set(text, parsed);
}

/** Which limits each cache's entries were parsed under; other limits empty it first. */
const cacheLimits = new WeakMap<SpecParseCache, string>();

function bindCache(cache: SpecParseCache, limitsKey: string): void {
  if (cacheLimits.get(cache) === limitsKey) return;
  cache.clear();
  cacheLimits.set(cache, limitsKey);
}

/**
 * The cross-file half of {@link loadSpecs}: builds specs from parsed files (in the order given),
 * derives VMIDs and validates the set. `parsed` may come from worker threads or a cache (parses
 * are plain data); the result is the same as loading the files here. `prepared` carries the
 * limits and the errors of files refused before parsing.
 */
export function assembleSpecs(parsed: readonly ParsedSpecFile[], prepared?: PreparedSpecFiles): LoadedSpecs {
  if (prepared?.refused) return refused(prepared.errors);
  const limits = prepared?.limits ?? resolveSpecLimits();
  const expanded = parsed.reduce((sum, file) => sum + file.expandedNodes, 0);
  if (expanded > limits.maxExpandedNodes) {
    return refused([
      fileError(
        prepared?.label ?? 'spec repository',
        `the spec files hold ${expanded.toLocaleString('en-US')} values with their aliases expanded, more than allowed; ${limitHint(limits, 'maxExpandedNodes')}`,
      ),
    ]);
  }
  const state: LoadState = {
    clusters: [],
    guests: [],
    objects: [],
    errors: [...(prepared?.errors ?? [])],
    positions: new Map(),
    brokenClusters: new Set(),
  };
  // Each load gets its own copies of the guests (VMIDs are derived per load, callers may edit
  // them); what they were copied from keys the per-guest verdicts shared between loads.
  const origins = new Map<GuestSpec | ClusterSpec, GuestSpec | ClusterSpec>();
  if (!prepared?.shared) {
    // Nothing to share with: load straight into this load's state, no copies.
    for (const file of parsed) assembleFile(file, state);
    assignGuestVmids(state);
    const specs = specSetOf(state);
    const errors = state.errors.concat(
      validateAll(specs, { positions: state.positions, brokenClusters: state.brokenClusters, cappedPerFile: true }),
    );
    errors.sort(compareSpecErrors);
    return { specs, errors: capErrorsPerFile(errors), positions: state.positions };
  }
  for (const file of parsed) {
    const done = assembledFile(file);
    for (const error of done.errors) state.errors.push(error);
    for (const cluster of done.clusters) {
      const copy = copyCluster(cluster);
      origins.set(copy, cluster);
      state.clusters.push(copy);
      state.positions.set(copy, done.positions.get(cluster) ?? fixedPositions(cluster.source));
    }
    for (const guest of done.guests) {
      const copy = copyGuest(guest);
      origins.set(copy, guest);
      state.guests.push(copy);
      state.positions.set(copy, done.positions.get(guest) ?? fixedPositions(guest.source));
    }
    for (const object of done.objects) {
      const copy: ObjectSpec = { ...object, fields: structuredClone(object.fields) };
      state.objects.push(copy);
      state.positions.set(copy, done.positions.get(object) ?? fixedPositions(object.source));
    }
    for (const name of done.brokenClusters) state.brokenClusters.add(name);
  }
  assignGuestVmids(state);
  const specs = specSetOf(state);
  recordCopies(specs, origins);
  const guestVerdicts: GuestVerdicts = {
    get: (guest, cluster) => {
      const origin = origins.get(guest) as GuestSpec | undefined;
      const verdict = origin && guestVerdictCache.get(origin);
      return verdict && verdict.cluster === (cluster && origins.get(cluster)) ? verdict.errors : undefined;
    },
    set: (guest, cluster, errors) => {
      const origin = origins.get(guest) as GuestSpec | undefined;
      if (origin) guestVerdictCache.set(origin, { cluster: cluster && (origins.get(cluster) as ClusterSpec | undefined), errors });
    },
  };
  const errors = state.errors.concat(
    validateAll(specs, { positions: state.positions, brokenClusters: state.brokenClusters, guestVerdicts, cappedPerFile: true }),
  );
  errors.sort(compareSpecErrors);
  return { specs, errors: capErrorsPerFile(errors), positions: state.positions };
}

/** One file's documents, loaded: everything that depends on its text and path alone. Never mutated. */
interface AssembledFile {
  clusters: ClusterSpec[];
  guests: GuestSpec[];
  objects: ObjectSpec[];
  errors: SpecError[];
  positions: Map<ClusterSpec | GuestSpec | ObjectSpec, DocumentPositions>;
  brokenClusters: string[];
}

/**
 * Loaded files, by parse (its documents) and path: a file whose parse came from the parse cache
 * — the same text in a pull request's base and head — is checked and converted once. Entries go
 * when the parse does.
 */
const assembledFiles = new WeakMap<readonly unknown[], Map<string, AssembledFile>>();

/**
 * What `validateSpecs` found for a guest (as loaded from its file) under a cluster spec: the same
 * guest under the same Cluster document needs no second look. Entries go with the loaded file.
 */
const guestVerdictCache = new WeakMap<GuestSpec, { cluster: ClusterSpec | undefined; errors: SpecError[] }>();

function assembledFile(file: ParsedSpecFile): AssembledFile {
  let byPath = assembledFiles.get(file.documents);
  const cached = byPath?.get(file.path);
  if (cached) return cached;
  const state: LoadState = { clusters: [], guests: [], objects: [], errors: [], positions: new Map(), brokenClusters: new Set() };
  assembleFile(file, state);
  const done: AssembledFile = {
    clusters: state.clusters,
    guests: state.guests,
    objects: state.objects,
    errors: state.errors,
    positions: state.positions,
    brokenClusters: [...state.brokenClusters],
  };
  if (!byPath) {
    byPath = new Map();
    assembledFiles.set(file.documents, byPath);
  }
  byPath.set(file.path, done);
  return done;
}

/** A copy of a loaded cluster spec that shares nothing mutable with it. */
function copyCluster(cluster: ClusterSpec): ClusterSpec {
  return {
    ...cluster,
    vmids: { ...cluster.vmids },
    nodes: [...cluster.nodes],
    ...(cluster.storages ? { storages: [...cluster.storages] } : {}),
    ...(cluster.bridges ? { bridges: [...cluster.bridges] } : {}),
  };
}

/** A copy of a loaded guest that shares nothing mutable with it. */
function copyGuest(guest: GuestSpec): GuestSpec {
  return {
    ...guest,
    ignore: [...guest.ignore],
    config: { ...guest.config },
    ...(guest.createOptions ? { createOptions: { ...guest.createOptions } } : {}),
    ...(guest.clone ? { clone: { ...guest.clone } } : {}),
    ...(guest.keySources ? { keySources: { ...guest.keySources } } : {}),
    ...(guest.refs ? { refs: { ...guest.refs } } : {}),
  };
}

/** A document that is already a value, with where its parts were written. */
export interface SpecDocument {
  raw: Record<string, unknown>;
  at: DocumentPositions;
}

/**
 * Builds specs from documents that are already values — a stored plan's specs rebuilt as the
 * documents they came from — with exactly the per-document checks and conversions of YAML
 * documents (kind, shape, config values to wire strings). Cross-document validation and VMID
 * derivation are left to the caller, which knows what the documents are part of.
 */
export function loadSpecDocuments(documents: readonly SpecDocument[]): {
  specs: SpecSet;
  errors: SpecError[];
  positions: Map<ClusterSpec | GuestSpec | ObjectSpec, DocumentPositions>;
  brokenClusters: Set<string>;
} {
  const state: LoadState = { clusters: [], guests: [], objects: [], errors: [], positions: new Map(), brokenClusters: new Set() };
  for (const doc of documents) loadDocument(doc.raw, doc.at, state);
  return {
    specs: specSetOf(state),
    errors: state.errors,
    positions: state.positions,
    brokenClusters: state.brokenClusters,
  };
}

interface LoadState {
  clusters: ClusterSpec[];
  guests: GuestSpec[];
  objects: ObjectSpec[];
  errors: SpecError[];
  positions: Map<ClusterSpec | GuestSpec | ObjectSpec, DocumentPositions>;
  /** Clusters whose document failed to load: guests naming them skip cluster checks. */
  brokenClusters: Set<string>;
}

function assembleFile(file: ParsedSpecFile, state: LoadState): void {
  const lineCounter = lineCounterFrom(file.lineStarts);
  const at = (offset: number): SourceRef => ({ file: file.path, ...lineCounter.linePos(offset) });
  for (const doc of file.documents) {
    switch (doc.kind) {
      case 'yaml-errors':
        for (const error of doc.errors) state.errors.push(new SpecError(at(error.offset), error.message));
        break;
      case 'empty':
        break;
      case 'not-a-mapping':
        state.errors.push(new SpecError(at(doc.start), `a spec document must be a mapping with a kind (${documentNameList()})`));
        break;
      case 'mapping':
        loadDocument(doc.raw, tablePositions(file.path, doc.positions, lineCounter), state);
        break;
    }
  }
}

function loadDocument(raw: Record<string, unknown>, at: DocumentPositions, state: LoadState): void {
  if (!('kind' in raw)) {
    state.errors.push(
      new SpecError(at.start, `document has no kind (${documentNameList()}); every YAML document under the spec root must be a spec`),
    );
    return;
  }
  const found = typeof raw.kind === 'string' ? kindOfDocument(raw.kind) : undefined;
  const object = found && objectKind(found.kind.name);
  if (object && found) {
    loadObjectDocument(raw, at, object, found.document, state);
    return;
  }
  const kind = SpecKind.safeParse(raw.kind);
  if (!kind.success) {
    state.errors.push(new SpecError(at.value(['kind']), `unknown kind ${describe(raw.kind)} (expected ${documentNameList()})`));
    return;
  }
  // Keys other kinds add to guest documents (a guest's `pool:`) are theirs: taken out here, so
  // the guest's own schema stays strict about everything else.
  const own = kind.data === 'Cluster' ? { raw, refs: undefined } : takeGuestKeys(raw, at, state.errors);
  const body = own.raw;
  // Guest documents the schema accepts are checked without zod's unions (guest-document.ts);
  // anything else, and every error, is the schema's.
  const quick = kind.data === 'Cluster' ? undefined : quickGuestDocument(body, kind.data);
  const parsed = quick ? ({ success: true, data: quick } as const) : DOCUMENT_SCHEMAS[kind.data].safeParse(body);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) for (const error of issueErrors(issue, body, at, kind.data)) state.errors.push(error);
    if (kind.data === 'Cluster' && typeof raw.name === 'string') state.brokenClusters.add(raw.name);
    return;
  }
  if (parsed.data.kind === 'Cluster') {
    const cluster = toClusterSpec(parsed.data, at.start);
    state.clusters.push(cluster);
    state.positions.set(cluster, at);
  } else {
    const guest = toGuestSpec(parsed.data, at, state.errors);
    if (own.refs) guest.refs = own.refs;
    state.guests.push(guest);
    state.positions.set(guest, at);
  }
}

/**
 * The keys other kinds add to a guest document, checked by their kinds' schemas, and the document
 * without them. Errors point at the key's value.
 */
function takeGuestKeys(
  raw: Record<string, unknown>,
  at: DocumentPositions,
  errors: SpecError[],
): { raw: Record<string, unknown>; refs: Record<string, unknown> | undefined } {
  let rest: Record<string, unknown> | undefined;
  let refs: Record<string, unknown> | undefined;
  for (const { key } of guestKeys()) {
    if (!Object.hasOwn(raw, key.key)) continue;
    rest ??= { ...raw };
    delete rest[key.key];
    const checked = key.schema.safeParse(raw[key.key]);
    if (!checked.success) {
      errors.push(new SpecError(at.value([key.key]), `${key.key}: ${checked.error.issues[0]?.message ?? 'invalid'} (${key.description})`));
      continue;
    }
    refs ??= {};
    refs[key.key] = checked.data;
  }
  return { raw: rest ?? raw, refs };
}

/** A document of another kind: its schema, then its kind's `load`. */
function loadObjectDocument(
  raw: Record<string, unknown>,
  at: DocumentPositions,
  kind: ObjectKind,
  document: KindDocument,
  state: LoadState,
): void {
  // A kind document follows its cluster's apply windows (README "Apply windows"): one list per
  // cluster, so a pool and the guests it holds never wait for different hours.
  let body = raw;
  if (Object.hasOwn(raw, 'windows')) {
    const cluster = typeof raw.cluster === 'string' ? ` '${raw.cluster}'` : '';
    state.errors.push(
      new SpecError(
        at.key(['windows']),
        `windows: a ${document.name} document has no apply windows of its own; it applies inside its cluster's: put windows: on the Cluster document${cluster}`,
      ),
    );
    const { windows: _windows, ...rest } = raw;
    body = rest;
  }
  const parsed = document.schema.safeParse(body);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) for (const error of issueErrors(issue, body, at, document.name)) state.errors.push(error);
    return;
  }
  const spec = kind.load(parsed.data as Record<string, unknown>, at.start);
  state.objects.push(spec);
  state.positions.set(spec, at);
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
    ...(doc.restart !== undefined ? { restart: restartPolicy(doc.restart) } : {}),
    ...(doc.restartsInFlight !== undefined ? { restartsInFlight: doc.restartsInFlight } : {}),
    ...(doc.windows !== undefined ? { windows: [...doc.windows] } : {}),
    ...(doc.snapshot !== undefined ? { snapshot: doc.snapshot } : {}),
    ...(doc.snapshotsKept !== undefined ? { snapshotsKept: doc.snapshotsKept } : {}),
    source,
  };
}

/** `create.clone` as the spec keeps it: the template as a string, only the options written. */
function cloneOf(doc: VmDocument | ContainerDocument): { clone?: CloneSource } {
  const clone = doc.create.clone;
  if (!clone) return {};
  const format = 'format' in clone ? clone.format : undefined;
  return {
    clone: {
      template: String(clone.template),
      ...(clone.full !== undefined ? { full: clone.full } : {}),
      ...(clone.storage !== undefined ? { storage: clone.storage } : {}),
      ...(format !== undefined ? { format } : {}),
    },
  };
}

function toGuestSpec(doc: VmDocument | ContainerDocument, at: DocumentPositions, errors: SpecError[]): GuestSpec {
  const type: GuestType = doc.kind === 'VM' ? 'qemu' : 'lxc';
  let config: Record<string, string> = {};
  let keySources: Record<string, SourceRef> = {};
  let keyed = false;
  const written = at.keysOf(['config']);
  for (const [key, value] of Object.entries(doc.config)) {
    const verdict = classifyConfigKey(type, key);
    if (!keyed && verdict.kind === 'unknown') {
      // Keys the repository made up: held in a dictionary from here on (keyed-record.ts).
      config = Object.assign(keyedRecord<string>(), config);
      keySources = Object.assign(keyedRecord<SourceRef>(), keySources);
      keyed = true;
    }
    const converted = toWireValue(key, value, verdict.kind === 'option' ? verdict.schema : undefined);
    if (!converted.ok) {
      errors.push(new SpecError(at.value(['config', key]), `config.${key}: ${converted.message}`));
      continue;
    }
    config[key] = converted.value;
    // Keys merged in with `<<` have no entry of their own; they point at the config mapping.
    keySources[key] = written[key] ?? at.key(['config', key]);
  }
  const createOptions: Record<string, string> = {};
  for (const [key, value] of Object.entries(doc.create)) {
    if (value === undefined || (typeof value === 'object' && !Array.isArray(value))) continue;
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
    ...(doc.restart !== undefined ? { restart: restartPolicy(doc.restart) } : {}),
    ...(doc.dependsOn !== undefined ? { dependsOn: [...doc.dependsOn] } : {}),
    ...cloneOf(doc),
    ...(doc.template === true ? { template: true } : {}),
    ...('cloudinit' in doc && doc.cloudinit === 'regenerate' ? { regenerateCloudinit: true } : {}),
    ...(doc.windows !== undefined ? { windows: [...doc.windows] } : {}),
    ...(doc.snapshot !== undefined ? { snapshot: doc.snapshot } : {}),
    source: at.start,
    keySources,
  };
}

/** Derives the VMIDs left out, per cluster, once every document is known (see `vmid.ts`). */
/** One cluster's derivation: what it was asked (names, pinned VMIDs) and what it gave. */
interface VmidDerivation {
  cluster: string;
  lower: number;
  upper: number;
  names: string[];
  pinned: (number | undefined)[];
  vmids: readonly (number | undefined)[];
}

/**
 * The last derivations made: a pull request's base and head ask the same of a cluster whose
 * guests kept their names and pins (the hashes of 10,000 names were most of a base's
 * derivation). The rule depends on nothing else (`vmid.ts`), so an equal question gets the
 * earlier answer.
 */
const recentDerivations: VmidDerivation[] = [];
const MAX_RECENT_DERIVATIONS = 4;

/** The VMIDs the rule gives `members` of `cluster`, in their order (undefined: no free VMID). */
function clusterVmids(cluster: ClusterSpec, members: readonly GuestSpec[]): readonly (number | undefined)[] {
  const names = members.map((g) => g.name);
  const pinned = members.map((g) => (g.vmidDerived ? undefined : g.vmid));
  const { lower, upper } = cluster.vmids;
  const same = (d: VmidDerivation): boolean =>
    d.cluster === cluster.name &&
    d.lower === lower &&
    d.upper === upper &&
    d.names.length === names.length &&
    d.names.every((name, i) => name === names[i] && d.pinned[i] === pinned[i]);
  const known = recentDerivations.find(same);
  if (known) return known.vmids;
  const requests = names.map((name, i) => {
    const vmid = pinned[i];
    return vmid === undefined ? { name } : { name, vmid };
  });
  const { vmids } = assignVmids(cluster.name, { lower, upper }, requests);
  recentDerivations.unshift({ cluster: cluster.name, lower, upper, names, pinned, vmids });
  recentDerivations.length = Math.min(recentDerivations.length, MAX_RECENT_DERIVATIONS);
  return vmids;
}

function assignGuestVmids(state: LoadState): void {
  const byCluster = new Map<string, GuestSpec[]>();
  for (const guest of state.guests) {
    const members = byCluster.get(guest.cluster) ?? [];
    members.push(guest);
    byCluster.set(guest.cluster, members);
  }
  const seen = new Set<string>();
  for (const cluster of state.clusters) {
    // A duplicate cluster is an error reported by validation; its first definition decides.
    if (seen.has(cluster.name)) continue;
    seen.add(cluster.name);
    const members = byCluster.get(cluster.name);
    if (!members || cluster.vmids.lower >= cluster.vmids.upper) continue;
    const vmids = clusterVmids(cluster, members);
    members.forEach((guest, index) => {
      if (!guest.vmidDerived) return;
      const vmid = vmids[index];
      if (vmid === undefined) {
        state.errors.push(
          new SpecError(
            guest.source,
            `no free VMID left in cluster "${cluster.name}" range [${cluster.vmids.lower}, ${cluster.vmids.upper}) for "${guest.name}"; widen the range or pin a vmid`,
          ),
        );
      } else {
        guest.vmid = vmid;
      }
    });
  }
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

/** Top-level keys of each document, for "did you mean": the guest documents with the keys other kinds add. */
const KIND_KEYS: Record<string, string[]> = {
  Cluster: Object.keys(ClusterDocument.shape),
  VM: [...Object.keys(VmDocument.shape), ...guestKeys().map(({ key }) => key.key)],
  Container: [...Object.keys(ContainerDocument.shape), ...guestKeys().map(({ key }) => key.key)],
};

/** The top-level keys a document name allows (its schema's shape, for documents of other kinds). */
function documentKeys(name: string): string[] {
  if (KIND_KEYS[name]) return KIND_KEYS[name];
  const schema = kindOfDocument(name)?.document.schema as { shape?: Record<string, unknown> } | undefined;
  const keys = schema?.shape ? Object.keys(schema.shape) : [];
  KIND_KEYS[name] = keys;
  return keys;
}

function unknownKeyHint(kind: string, parent: readonly PropertyKey[], key: string, suggest: boolean): string {
  const guest = kind === 'VM' || kind === 'Container';
  if (parent.length === 0) {
    if (guest && classifyConfigKey(kind === 'VM' ? 'qemu' : 'lxc', key).kind === 'option') {
      return ' (Proxmox options go under config:)';
    }
    const near = suggest ? closest(key, documentKeys(kind)) : undefined;
    return near ? ` (did you mean "${near}"?)` : '';
  }
  if (guest && parent.length === 1 && parent[0] === 'create') {
    if (key === 'password') return ' (a password does not belong in a repository; use ssh-public-keys)';
    const allowed = Object.keys((kind === 'Container' ? ContainerDocument : VmDocument).shape.create.unwrap().shape);
    return ` (create options for ${kind === 'VM' ? 'a VM' : 'a container'}: ${allowed.join(', ')})`;
  }
  return '';
}

/** Each kind's keys indexed for "did you mean", lower-cased: a key that differs only in case is a suggestion too. */
const KIND_KEY_INDEX = new Map<readonly string[], NearestNames>();

function closest(key: string, candidates: readonly string[]): string | undefined {
  let index = KIND_KEY_INDEX.get(candidates);
  if (!index) {
    index = new NearestNames(candidates.map((candidate) => candidate.toLowerCase()));
    KIND_KEY_INDEX.set(candidates, index);
  }
  const found = index.find(key.toLowerCase(), true);
  // A short key is no suggestion for a word it shares too little with: `bad` is not a typo of `ha`.
  if (found === undefined || found.distance >= (candidates[found.index] ?? '').length) return undefined;
  return candidates[found.index];
}

/** Turns one zod issue into errors at the YAML node it concerns. */
function issueErrors(issue: z.core.$ZodIssue, raw: unknown, at: DocumentPositions, kind: string): SpecError[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  const label = pathLabel(path);
  const value = valueAtPath(raw, path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map(
        (key, index) =>
          new SpecError(
            at.key([...path, key]),
            `unknown key "${key}" ${path.length ? `in ${label}` : `in ${kind}`}${unknownKeyHint(kind, path, key, index < MAX_SUGGESTIONS_PER_DOCUMENT)}`,
          ),
      );
    case 'invalid_type': {
      const parentPath: DocPath = path.slice(0, -1);
      const parent = valueAtPath(raw, parentPath);
      const last = path[path.length - 1];
      if (last !== undefined && parent !== null && typeof parent === 'object' && !(last in parent)) {
        const ref = parentPath.length === 0 ? at.start : at.value(parentPath);
        return [new SpecError(ref, `missing required key "${String(last)}"${parentPath.length ? ` in ${pathLabel(parentPath)}` : ''}`)];
      }
      return [new SpecError(at.value(path), `${label}: expected ${EXPECTED[issue.expected] ?? issue.expected}, got ${describe(value)}`)];
    }
    case 'invalid_value':
      return [new SpecError(at.value(path), `${label}: expected one of ${issue.values.map(String).join(', ')}, got ${describe(value)}`)];
    case 'too_small':
      return [
        new SpecError(
          at.value(path),
          issue.origin === 'array' || issue.origin === 'string'
            ? `${label}: must not be empty`
            : `${label}: must be at least ${String(issue.minimum)}`,
        ),
      ];
    case 'too_big':
      return [new SpecError(at.value(path), `${label}: must be at most ${String(issue.maximum)}`)];
    default:
      return [new SpecError(at.value(path), `${label}: ${issue.message}`)];
  }
}
