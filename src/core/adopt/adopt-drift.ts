/**
 * Drift adopted into git: the live values a drift report found, written into the spec files that
 * describe them, each document edited in place (`yaml-edit.ts`), so that the plan afterwards shows
 * no change for those keys. Pure: the report, the loaded specs and the files' texts go in; the
 * changed texts and what was and was not taken come out, and nothing is written when any edit
 * fails or the edited specs no longer load.
 *
 * What is taken: a config key (its live value in the spec's canonical form, `adopt-values.ts`; a
 * key deleted live is removed), `power`, a guest's pool (`pool:`), its HA fields (`ha:`), its
 * firewall's options, aliases, IPsets and rules (`firewall:`, `adopt-firewall.ts`) and a pool's
 * comment. Unowned guests are listed for the caller to import when it asks (`importUnowned`,
 * `adopt-unowned.ts`). What is not: secrets (never written into git), missing guests, orphans and
 * otherwise unowned guests (they need a spec of their own: `pve-gitops import`), and objects whose
 * spec side is not one key of one document (a backup job's selection).
 */
import type { DriftFinding, DriftReport } from '../drift/drift-report.js';
import type { GuestSpec, ObjectPlan, ObjectSpec, SourceRef, SpecSet } from '../model.js';
import { isSensitiveKey } from '../key-rules.js';
import { parseKeyText } from '../kinds/resource-key.js';
import { HA_KIND } from '../kinds/ha/ha-kind.js';
import { FIREWALL_KIND } from '../kinds/firewall/firewall-kind.js';
import { POOL_KIND, POOL_MEMBER_KIND } from '../kinds/pool/common.js';
import { loadSpecs, type SpecFile } from '../spec/load-specs.js';
import { firewallEdit, liveFirewall } from './adopt-firewall.js';
import { specValueOf } from './adopt-values.js';
import { type DocumentEdit, SpecEditError, SpecFileText, type SpecValue } from './yaml-edit.js';

/** Which findings to take: guests (`cluster/name`, `cluster/vmid` or a name) and keys; empty takes all. */
export interface AdoptSelection {
  guests?: readonly string[];
  keys?: readonly string[];
}

/** One value taken into a spec file. */
export interface AdoptedValue {
  /** `cluster/name` of the guest, or `cluster/kind name` of another object. */
  subject: string;
  /** The spec file (relative to the spec root). */
  file: string;
  key: string;
  /** What the spec said (undefined: not set). */
  from?: string;
  /** What the cluster has and the spec now says (undefined: removed from the spec). */
  to?: string;
}

/** A finding left as it is, and why. */
export interface NotAdopted {
  subject: string;
  key: string;
  reason: string;
}

/** A guest without a spec that the report found in a cluster's range, to be imported (`adopt-unowned.ts`). */
export interface ToImport {
  cluster: string;
  vmid: number;
  name: string;
}

/** A guest imported into a new spec file. */
export interface ImportedSpec {
  /** `cluster/name`. */
  subject: string;
  file: string;
  /** What the file's notes say, in a few words each (`3 keys left out`). */
  remarks: string[];
}

/** What {@link adoptDrift} made of the report. */
export interface Adoption {
  /** The spec files that changed, with their new texts, in path order. */
  files: SpecFile[];
  adopted: AdoptedValue[];
  notAdopted: NotAdopted[];
  /** Selectors (guests, keys) that matched no finding. */
  unmatched: string[];
  /** Unowned guests asked for, when the caller imports them (`importUnowned`). */
  toImport?: ToImport[];
  /** Guests imported into new spec files (those files are in `files`). */
  imported?: ImportedSpec[];
}

/** The edited specs would not load: nothing is written. */
export class AdoptionError extends Error {
  override name = 'AdoptionError';
  constructor(
    message: string,
    readonly problems: readonly string[],
  ) {
    super(message);
  }
}

/** Inputs of {@link adoptDrift}. */
interface AdoptInput {
  report: DriftReport;
  /** The specs the report was made against, loaded from `files`. */
  specs: SpecSet;
  /** Every spec file, relative to the spec root (the same paths as the specs' sources). */
  files: readonly SpecFile[];
  select?: AdoptSelection;
  /**
   * The drift plan's items of other kinds, by key: the live values a finding's text does not
   * carry (a guest's firewall). Without them such findings are not adopted.
   */
  items?: readonly ObjectPlan[];
  /** Unowned guests are listed in `toImport` instead of left (the caller imports them). */
  importUnowned?: boolean;
}

/** One planned edit of one document. */
interface Pending {
  at: SourceRef;
  edit: DocumentEdit;
  adopted: AdoptedValue;
}

const SECRET_REASON =
  'sensitive: pve-gitops never writes a sensitive value into the spec files (a password never belongs in git); set it by hand';

/** Whether a guest selector names this subject. */
function namesSubject(selector: string, cluster: string, name: string, vmid?: number): boolean {
  const slash = selector.indexOf('/');
  if (slash < 0) return selector === name;
  if (selector.slice(0, slash) !== cluster) return false;
  const who = selector.slice(slash + 1);
  return who === name || (vmid !== undefined && /^\d+$/.test(who) && Number(who) === vmid);
}

/** Whether a key selector names a finding's key (`ha` names every `ha.…` field, `firewall.rules` every `firewall.rules #…`). */
function namesKey(selector: string, key: string): boolean {
  return selector === key || key.startsWith(`${selector}.`) || key.startsWith(`${selector} `);
}

/** The display of a value in what adopting reports: one line, secrets never. */
function shown(key: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return isSensitiveKey(key) ? '(sensitive)' : value;
}

function describe(subject: string, file: string, finding: Pick<DriftFinding, 'key' | 'expected' | 'actual'>): AdoptedValue {
  const from = shown(finding.key, finding.expected);
  const to = shown(finding.key, finding.actual);
  return { subject, file, key: finding.key, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) };
}

/** A live HA field as the `ha:` mapping writes it. */
function haFieldValue(field: string, live: string): SpecValue {
  if (field === 'max_restart' || field === 'max_relocate') return Number(live);
  if (field === 'failback') return live === 'true' || live === '1';
  return live;
}

/**
 * Takes the report's findings (all, or those `select` names) into the spec files. Throws
 * {@link AdoptionError} when an edit cannot be made or the edited specs would not load; then no
 * file is changed.
 */
export function adoptDrift(input: AdoptInput): Adoption {
  const { report, specs } = input;
  const guestSelectors = input.select?.guests ?? [];
  const keySelectors = input.select?.keys ?? [];
  const usedSelectors = new Set<string>();
  const texts = new Map(input.files.map((f) => [f.path, f.text]));
  const parsed = new Map<string, SpecFileText>();
  const parsedFile = (path: string, text: string): SpecFileText => {
    let file = parsed.get(path);
    if (!file) parsed.set(path, (file = new SpecFileText(path, text)));
    return file;
  };
  const ownerTags = new Map(specs.clusters.map((c) => [c.name, c.ownerTag]));
  const guestSpec = (cluster: string, vmid: number): GuestSpec | undefined =>
    specs.guests.find((g) => g.cluster === cluster && g.vmid === vmid && g.state === 'present');

  const wanted = (cluster: string, name: string, vmid: number | undefined, key: string): boolean => {
    const guestHit = guestSelectors.filter((s) => namesSubject(s, cluster, name, vmid));
    const keyHit = keySelectors.filter((s) => namesKey(s, key));
    if (guestSelectors.length > 0 && guestHit.length === 0) return false;
    if (keySelectors.length > 0 && keyHit.length === 0) return false;
    for (const s of [...guestHit, ...keyHit]) usedSelectors.add(s);
    return true;
  };

  const pending: Pending[] = [];
  const notAdopted: NotAdopted[] = [];
  const toImport: ToImport[] = [];
  const skip = (subject: string, key: string, reason: string): void => {
    notAdopted.push({ subject, key, reason });
  };

  for (const guest of report.guests) {
    const subject = `${guest.cluster}/${guest.name}`;
    const spec = guestSpec(guest.cluster, guest.vmid);
    for (const finding of guest.findings) {
      if (!wanted(guest.cluster, guest.name, guest.vmid, finding.key)) continue;
      if (finding.kind === 'unowned' && input.importUnowned) {
        toImport.push({ cluster: guest.cluster, vmid: guest.vmid, name: guest.name });
        continue;
      }
      if (finding.kind === 'orphan' || finding.kind === 'unowned') {
        skip(subject, finding.key, 'the guest has no spec: `pve-gitops import` writes one');
        continue;
      }
      if (finding.kind === 'missing') {
        skip(subject, finding.key, 'the guest is gone from the cluster: remove its spec, or give it `state: absent`, by hand');
        continue;
      }
      if (!spec) {
        skip(subject, finding.key, 'no spec describes this guest');
        continue;
      }
      const text = texts.get(spec.source.file);
      if (text === undefined) {
        skip(subject, finding.key, `its spec file ${spec.source.file} was not given`);
        continue;
      }
      const adopted = describe(subject, spec.source.file, finding);
      if (finding.kind === 'power') {
        if (finding.actual !== 'running' && finding.actual !== 'stopped') {
          skip(subject, 'power', `the guest is ${finding.actual ?? 'in no known state'}: a spec says running or stopped`);
          continue;
        }
        pending.push({ at: spec.source, edit: { path: ['power'], value: finding.actual }, adopted });
        continue;
      }
      const key = finding.key;
      if (isSensitiveKey(key)) {
        skip(subject, key, SECRET_REASON);
        continue;
      }
      if (finding.actual === undefined) {
        if (!(key in spec.config)) {
          skip(subject, key, 'deleted on the cluster, but the spec does not set it: the planner adds it itself');
          continue;
        }
        pending.push({ at: spec.source, edit: { path: ['config', key] }, adopted });
        continue;
      }
      const ownerTag = ownerTags.get(guest.cluster) ?? 'pve-gitops';
      const shape = parsedFile(spec.source.file, text).valueShape(spec.source, ['config', key]);
      const value = specValueOf(spec.type, key, finding.actual, shape, ownerTag);
      if (!value) {
        skip(subject, key, 'no form of the live value reads back equal to it in a spec: edit it by hand');
        continue;
      }
      const edit: DocumentEdit = 'remove' in value ? { path: ['config', key] } : { path: ['config', key], value: value.value };
      pending.push({ at: spec.source, edit, adopted });
    }
  }

  const items = new Map((input.items ?? []).map((item) => [item.key, item]));
  // Removals from a firewall section after the values set in it: a section emptied on the way would go, and with it its comments.
  const removals: Pending[] = [];
  for (const object of report.objects ?? []) {
    const subject = `${object.cluster}/${object.kind} ${object.name}`;
    const id = parseKeyText(object.key)?.id ?? '';
    const vmid = /^\d+$/.test(id) ? Number(id) : undefined;
    for (const finding of object.findings) {
      if (!wanted(object.cluster, object.name, vmid, finding.key)) continue;
      if (object.kind === FIREWALL_KIND) {
        const guest = vmid === undefined ? undefined : guestSpec(object.cluster, vmid);
        const edit = guest ? firewallEdit(finding, guest, liveFirewall(items.get(object.key))) : { reason: 'no spec describes the guest' };
        if ('reason' in edit) skip(subject, finding.key, edit.reason);
        else if (guest)
          (edit.value === undefined ? removals : pending).push({
            at: guest.source,
            edit,
            adopted: describe(subject, guest.source.file, finding),
          });
        continue;
      }
      const target = objectEdit(
        object.kind,
        finding,
        vmid === undefined ? undefined : guestSpec(object.cluster, vmid),
        objectSpec(specs, object),
      );
      if ('reason' in target) {
        skip(subject, finding.key, target.reason);
        continue;
      }
      pending.push({ at: target.at, edit: target.edit, adopted: describe(subject, target.at.file, finding) });
    }
  }

  pending.push(...removals);
  const unmatched = [...guestSelectors, ...keySelectors].filter((s) => !usedSelectors.has(s));
  const changed = applyEdits(texts, pending, parsedFile);
  const files = [...changed.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([path, text]) => ({ path, text }));
  if (files.length > 0) checkLoads(input.files, changed);
  return {
    files,
    adopted: pending.map((p) => p.adopted),
    notAdopted,
    unmatched,
    ...(input.importUnowned ? { toImport } : {}),
  };
}

/** The document of another kind a drift object came from, by its source. */
function objectSpec(specs: SpecSet, object: { cluster: string; kind: string; source?: SourceRef }): ObjectSpec | undefined {
  const at = object.source;
  if (!at) return undefined;
  return (specs.objects ?? []).find(
    (o) => o.cluster === object.cluster && o.source.file === at.file && o.source.line === at.line && o.source.col === at.col,
  );
}

/** Where a finding of another kind is written in the specs, or why it cannot be adopted. */
function objectEdit(
  kind: string,
  finding: DriftFinding,
  guest: GuestSpec | undefined,
  document: ObjectSpec | undefined,
): { at: SourceRef; edit: DocumentEdit } | { reason: string } {
  if (kind === POOL_MEMBER_KIND && finding.key === 'pool') {
    if (!guest) return { reason: 'no spec describes the guest' };
    return { at: guest.source, edit: { path: ['pool'], value: finding.actual ?? null } };
  }
  if (kind === HA_KIND) {
    if (!guest) return { reason: 'no spec describes the guest' };
    if (finding.key === 'ha' && finding.actual === undefined) return { at: guest.source, edit: { path: ['ha'], value: null } };
    const field = finding.key.startsWith('ha.') ? finding.key.slice(3) : undefined;
    if (field === undefined) return { reason: 'the HA resource was added on the cluster: write its fields under `ha:` by hand' };
    if (finding.actual === undefined) return { at: guest.source, edit: { path: ['ha', field] } };
    return { at: guest.source, edit: { path: ['ha', field], value: haFieldValue(field, finding.actual) } };
  }
  if (kind === POOL_KIND && finding.key === 'comment') {
    if (!document) return { reason: 'no Pool document describes the pool' };
    return {
      at: document.source,
      edit: finding.actual === undefined ? { path: ['comment'] } : { path: ['comment'], value: finding.actual },
    };
  }
  return {
    reason: `a ${kind} ${finding.key === kind ? 'that is there or gone' : `difference in ${finding.key}`} cannot be adopted: edit its document by hand`,
  };
}

/** Makes every edit, file by file; throws {@link AdoptionError} naming the first that fails. */
function applyEdits(
  texts: ReadonlyMap<string, string>,
  pending: readonly Pending[],
  parsedFile: (path: string, text: string) => SpecFileText,
): Map<string, string> {
  const byFile = new Map<string, Pending[]>();
  for (const p of pending) byFile.set(p.at.file, [...(byFile.get(p.at.file) ?? []), p]);
  const changed = new Map<string, string>();
  for (const [file, edits] of byFile) {
    const before = texts.get(file);
    if (before === undefined) throw new AdoptionError(`${file}: the spec file was not given`, []);
    try {
      const after = parsedFile(file, before).edit(edits.map((p) => ({ at: p.at, edit: p.edit })));
      if (after !== before) changed.set(file, after);
    } catch (error) {
      if (error instanceof SpecEditError) throw new AdoptionError(`nothing was adopted: ${error.message}`, [error.message]);
      throw error;
    }
  }
  return changed;
}

/** Loads the specs with the edited (and any new) files: adopting must leave a repository that loads. */
export function checkLoads(files: readonly SpecFile[], changed: ReadonlyMap<string, string>): void {
  const given = new Set(files.map((f) => f.path));
  const added = [...changed].filter(([path]) => !given.has(path)).map(([path, text]) => ({ path, text }));
  const loaded = loadSpecs([...files.map((f) => ({ path: f.path, text: changed.get(f.path) ?? f.text })), ...added]);
  if (loaded.errors.length === 0) return;
  const problems = loaded.errors.map((e) => `${e.file}:${e.line}:${e.col}: ${e.message}`);
  throw new AdoptionError('nothing was adopted: the edited specs would not load', problems);
}
