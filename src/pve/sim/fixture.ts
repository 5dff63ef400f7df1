/**
 * Fixture files: the starting state of a simulated cluster.
 *
 * ```json
 * {
 *   "clusterName": "lab",                       // optional
 *   "nodes": ["pve-01", "pve-02"],              // optional; default from the options
 *   "storages": ["local", "local-lvm"],         // optional; when set, other storage ids fail
 *   "nextId": { "lower": 100, "upper": 1000000 },  // optional datacenter.cfg next-id range
 *   "tokens": [                                 // optional extra API tokens
 *     { "id": "auditor@pve!audit", "secret": "…", "role": "audit", "vmids": [100, 101] }
 *   ],
 *   "guests": [
 *     { "vmid": 100, "type": "qemu", "node": "pve-01", "running": true,
 *       "config": "name: web\nmemory: 2048\n…",   // raw file text, may hold [PENDING]/[snap] sections
 *       "lock": "backup" },                       // optional, written into the main section
 *     { "vmid": 200, "type": "lxc", "node": "pve-02",
 *       "config": { "hostname": "db", "memory": 1024, "rootfs": "local-lvm:vm-200-disk-0,size=8G" } }
 *   ]
 * }
 * ```
 * `config` as an object is serialised as Proxmox would write it (sorted keys, description as
 * `#` lines, tags normalised). A raw string is kept byte for byte, so its digest is its SHA1.
 * Keys starting with `_` (e.g. `"_comment"`) are ignored at the top level and in guests and
 * tokens; any other unknown key is an error.
 */
import { readFile } from 'node:fs/promises';
import { normaliseTags } from '../../core/property-string.js';
import { emptySection, serializeConfig, type ParsedConfig } from './config-file.js';
import type { GuestType } from '../../core/guest-flavours.js';
import { SimFixture, type ParsedSimFixture } from './schema.js';

/** Thrown for a fixture that does not validate; the message lists every problem with its path. */
export class FixtureError extends Error {
  override readonly name = 'FixtureError';
  constructor(
    readonly source: string,
    readonly issues: string[],
  ) {
    super(`invalid simulator fixture ${source}:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
  }
}

/** Drops `_comment`-style keys, which JSON has no other way to hold comments in. */
function stripComments(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !key.startsWith('_')));
}

/** Validates a fixture object. */
export function parseFixture(input: unknown, source = '(object)'): ParsedSimFixture {
  let cleaned = stripComments(input);
  if (cleaned && typeof cleaned === 'object' && !Array.isArray(cleaned)) {
    const record = cleaned as Record<string, unknown>;
    cleaned = {
      ...record,
      ...(Array.isArray(record.guests) ? { guests: record.guests.map(stripComments) } : {}),
      ...(Array.isArray(record.tokens) ? { tokens: record.tokens.map(stripComments) } : {}),
    };
  }
  const result = SimFixture.safeParse(cleaned);
  const issues = result.success
    ? []
    : result.error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`);
  issues.push(...crossChecks(cleaned));
  if (!result.success || issues.length > 0) throw new FixtureError(source, issues);
  return result.data;
}

/** Checks across guests (duplicate VMIDs, unknown nodes), run even when other fields fail. */
function crossChecks(input: unknown): string[] {
  const record = input && typeof input === 'object' ? (input as Record<string, unknown>) : {};
  const nodes = Array.isArray(record.nodes) ? (record.nodes as unknown[]) : undefined;
  const guests = Array.isArray(record.guests) ? (record.guests as unknown[]) : [];
  const issues: string[] = [];
  const seen = new Set<unknown>();
  guests.forEach((guest, index) => {
    if (!guest || typeof guest !== 'object') return;
    const { vmid, node } = guest as { vmid?: unknown; node?: unknown };
    if (vmid !== undefined && seen.has(vmid)) issues.push(`guests.${index}.vmid: duplicate vmid ${String(vmid)}`);
    seen.add(vmid);
    if (nodes && typeof node === 'string' && !nodes.includes(node)) {
      issues.push(`guests.${index}.node: node '${node}' is not in nodes`);
    }
  });
  return issues;
}

/** Reads and validates a fixture file. */
export async function loadFixtureFile(path: string): Promise<ParsedSimFixture> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new FixtureError(path, [`cannot read file: ${(err as Error).message}`]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new FixtureError(path, [`not valid JSON: ${(err as Error).message}`]);
  }
  return parseFixture(json, path);
}

/** Serialises a key → value config object the way Proxmox would write it. */
export function configObjectToRaw(type: GuestType, config: Record<string, string | number | boolean | undefined>): string {
  const parsed: ParsedConfig = { main: emptySection(), pending: emptySection(), special: new Map(), snapshots: new Map() };
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined) continue;
    const text = typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
    parsed.main.values.set(key, key === 'tags' ? normaliseTags(text) : text);
  }
  return serializeConfig(parsed, type);
}
