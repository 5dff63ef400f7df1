/**
 * One guest: its config as the raw file text Proxmox writes, the parsed sections beside it,
 * and the digest (recomputed only when the text changes). The API views (GET config with or
 * without pending, GET pending) are derived here and cached until the next write, so reads
 * of 10,000 guests cost a map lookup.
 */
import type { GuestType } from '../../../core/guest-flavours.js';
import { paramSchema } from '../../../core/proxmox-params.js';
import { configDigest, parseConfig, parsePendingDelete, serializeConfig, type ConfigSection, type ParsedConfig } from '../config-file.js';
import { flavourOf } from './flavours.js';
import { parseSize, parseOption } from '../property-format.js';
import { configEndpoint } from '../../../core/config-options.js';

/** A JSON value of a config view. */
type JsonConfigValue = string | number | [string, string][];

/** Kinds of JSON typing (docs/proxmox-api.md#value-types-on-the-wire): booleans/integers as numbers, everything else strings. */
type ValueKind = 'number' | 'string';

const kindCache: Record<GuestType, Map<string, ValueKind>> = { qemu: new Map(), lxc: new Map() };

/** Keys Proxmox writes that the update schema does not contain, with their JSON typing. */
const INTERNAL_KEY_KINDS: Record<string, ValueKind> = { snaptime: 'number' };

function valueKind(type: GuestType, key: string): ValueKind {
  const cache = kindCache[type];
  let kind = cache.get(key);
  if (kind === undefined) {
    const schema = paramSchema(configEndpoint(type), key);
    kind = schema?.type === 'integer' || schema?.type === 'boolean' ? 'number' : (INTERNAL_KEY_KINDS[key] ?? 'string');
    cache.set(key, kind);
  }
  return kind;
}

/** A config value typed as the API returns it (`cores: 2`, `memory: "2048"`, `cpulimit: "4"`). */
function typedValue(type: GuestType, key: string, value: string): string | number {
  if (valueKind(type, key) === 'number' && /^[+-]?\d+$/.test(value)) return Number(value);
  return value;
}

/** Perl truthiness of a config value (`''` and `'0'` are false). */
export function perlTrue(value: string | undefined): boolean {
  return value !== undefined && value !== '' && value !== '0';
}

/** Options exposed by guest summaries (listing, status/current, cluster resources). */
interface GuestSummaryData {
  name: string;
  maxmem: number;
  maxdisk: number;
  cpus: number;
  template: boolean;
  tags?: string;
  lock?: string;
}

/** A simulated guest. */
export class Guest {
  private rawText: string;
  private digestHex: string;
  private parsed: ParsedConfig;
  private readonly viewCache = new Map<string, string>();
  /** Epoch ms the guest was started; undefined while stopped. */
  startedAt: number | undefined;
  /** Bumped on every change, so derived caches elsewhere can tell they are stale. */
  version = 0;

  constructor(
    readonly vmid: number,
    readonly type: GuestType,
    public node: string,
    raw: string,
    running: boolean,
  ) {
    this.rawText = raw;
    this.digestHex = configDigest(raw);
    this.parsed = parseConfig(raw, type);
    this.startedAt = running ? Date.now() - Math.floor(Math.random() * 86_400_000) : undefined;
  }

  /** The config file text. */
  get raw(): string {
    return this.rawText;
  }

  /** SHA1 hex of {@link raw}. */
  get digest(): string {
    return this.digestHex;
  }

  /** The parsed sections. Mutate, then call {@link commit}. */
  get config(): ParsedConfig {
    return this.parsed;
  }

  get running(): boolean {
    return this.startedAt !== undefined;
  }

  /** Main-section values (what is in effect). */
  get main(): Map<string, string> {
    return this.parsed.main.values;
  }

  /** `[PENDING]` values. */
  get pending(): Map<string, string> {
    return this.parsed.pending.values;
  }

  /** The `lock` of the main section. */
  get lock(): string | undefined {
    return this.parsed.main.values.get('lock');
  }

  /** Writes the parsed model back as text (like `write_config`): new raw text, new digest. */
  commit(): void {
    this.rawText = serializeConfig(this.parsed, this.type);
    this.digestHex = configDigest(this.rawText);
    this.rereadDescriptions();
    this.touch();
  }

  /**
   * A description reads back as the file stores it (comment lines: stripped for qemu, each line
   * newline-terminated for containers, nothing for '' or '0'), so the values held in memory are
   * replaced by what a fresh parse of the written text gives. Section objects keep their identity.
   */
  rereadDescriptions(): void {
    if (!this.rawText.includes('#') && !this.hasDescription()) return;
    const reread = parseConfig(this.rawText, this.type);
    const sync = (mine: ConfigSection | undefined, theirs: ConfigSection | undefined): void => {
      if (!mine) return;
      const value = theirs?.values.get('description');
      if (value === undefined) mine.values.delete('description');
      else mine.values.set('description', value);
    };
    sync(this.parsed.main, reread.main);
    sync(this.parsed.pending, reread.pending);
    for (const [name, section] of this.parsed.snapshots) sync(section, reread.snapshots.get(name));
    for (const [name, section] of this.parsed.special) sync(section, reread.special.get(name));
    this.touch();
  }

  private hasDescription(): boolean {
    if (this.parsed.main.values.has('description') || this.parsed.pending.values.has('description')) return true;
    for (const section of this.parsed.snapshots.values()) if (section.values.has('description')) return true;
    return false;
  }

  /** Replaces the whole file text (fixtures, tests). */
  replaceRaw(raw: string): void {
    this.rawText = raw;
    this.digestHex = configDigest(raw);
    this.parsed = parseConfig(raw, this.type);
    this.touch();
  }

  /** Marks derived data stale without changing the file (power state changes). */
  touch(): void {
    this.version++;
    this.viewCache.clear();
  }

  setRunning(running: boolean): void {
    if (running === this.running) return;
    this.startedAt = running ? Date.now() : undefined;
    this.touch();
  }

  /** Uptime in seconds (0 when stopped). */
  uptime(): number {
    return this.startedAt === undefined ? 0 : Math.floor((Date.now() - this.startedAt) / 1000);
  }

  /** A cached JSON rendering keyed by view name; recomputed after any change. */
  cachedJson(view: string, build: () => unknown): string {
    let json = this.viewCache.get(view);
    if (json === undefined) {
      json = JSON.stringify(build());
      this.viewCache.set(view, json);
    }
    return json;
  }

  /**
   * `GET …/config`: with `current` false, pending values override and pending deletions remove
   * keys whose current value is Perl-true (the `load_current_config` quirk). Always has `digest`.
   */
  configView(current: boolean): Record<string, JsonConfigValue> {
    const values = new Map(this.parsed.main.values);
    if (!current) {
      for (const [key, value] of this.parsed.pending.values) if (key !== 'delete') values.set(key, value);
      for (const key of parsePendingDelete(this.parsed.pending.values.get('delete')).keys()) {
        if (perlTrue(values.get(key))) values.delete(key);
      }
    }
    return this.sectionView(values, this.parsed.main.lxc);
  }

  /** `GET …/config?snapshot=<name>`: the snapshot section plus the whole-file digest. */
  snapshotView(name: string): Record<string, JsonConfigValue> | undefined {
    const section: ConfigSection | undefined = this.parsed.snapshots.get(name);
    return section ? this.sectionView(new Map(section.values), section.lxc) : undefined;
  }

  private sectionView(values: Map<string, string>, lxc: [string, string][]): Record<string, JsonConfigValue> {
    const out: Record<string, JsonConfigValue> = {};
    for (const key of [...values.keys()].sort()) {
      const value = values.get(key) as string;
      out[key] = key === 'cipassword' ? '**********' : typedValue(this.type, key, value);
    }
    // Only a container's parser keeps raw `lxc.*` keys (config-file.ts).
    if (lxc.length > 0) out.lxc = lxc.map(([k, v]) => [k, v] as [string, string]);
    out.digest = this.digestHex;
    return out;
  }

  /** `GET …/pending`: `config_with_pending_array`, digest entry included. */
  pendingView(): Record<string, unknown>[] {
    const entries: Record<string, unknown>[] = [];
    const pending = new Map(this.parsed.pending.values);
    const deletes = parsePendingDelete(pending.get('delete'));
    pending.delete('delete');
    const main = new Map(this.parsed.main.values);
    main.set('digest', this.digestHex);
    const typed = (key: string, value: string): string | number => {
      if (key === 'cipassword') return '**********';
      return key === 'digest' ? value : typedValue(this.type, key, value);
    };
    for (const key of [...main.keys()].sort()) {
      const item: Record<string, unknown> = { key, value: typed(key, main.get(key) as string) };
      const pendingValue = pending.get(key);
      if (pendingValue !== undefined) {
        item.pending = key === 'cipassword' ? '********** ' : typed(key, pendingValue);
        pending.delete(key);
      }
      if (deletes.has(key)) {
        item.delete = deletes.get(key) ? 2 : 1;
        deletes.delete(key);
      }
      entries.push(item);
    }
    for (const key of [...pending.keys()].sort()) {
      entries.push({ key, pending: key === 'cipassword' ? '********** ' : typed(key, pending.get(key) as string) });
    }
    // Quirk of the trailing `each` loop: the hashref is always truthy, so these report 2.
    for (const key of [...deletes.keys()].sort()) entries.push({ key, delete: 2 });
    return entries;
  }

  /** Numbers the listings and status calls derive from the config. */
  summary(): GuestSummaryData {
    const main = this.parsed.main.values;
    const flavour = flavourOf(this.type);
    const memoryValue = main.get('memory');
    const memoryMiB = memoryValue === undefined ? 512 : Number(/^(?:current=)?(\d+)/.exec(memoryValue)?.[1] ?? 512);
    const tags = main.get('tags');
    const lock = main.get('lock');
    const name = main.get(flavour.nameKey) ?? flavour.defaultName(this.vmid);
    return {
      name,
      maxmem: memoryMiB * 1024 * 1024,
      maxdisk: this.bootDiskBytes(),
      cpus: flavour.cpus(main),
      template: perlTrue(main.get('template')),
      ...(tags !== undefined ? { tags } : {}),
      ...(lock !== undefined ? { lock } : {}),
    };
  }

  /** Size of the boot disk: the first of the flavour's candidates that has a size. */
  private bootDiskBytes(): number {
    const main = this.parsed.main.values;
    const sizeOf = (key: string): number | undefined => {
      const value = main.get(key);
      if (value === undefined) return undefined;
      const size = parseOption(this.type, key, value)?.size;
      return size === undefined ? undefined : parseSize(size);
    };
    for (const key of flavourOf(this.type).bootDiskCandidates(main)) {
      const size = sizeOf(key);
      if (size !== undefined) return size;
    }
    return 0;
  }
}
