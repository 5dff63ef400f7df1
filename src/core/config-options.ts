import apiSchema from './proxmox-api-schema.json' with { type: 'json' };
import type { GuestType } from './model.js';

/** A parameter's JSON schema as Proxmox's API dump describes it (descriptions stripped). */
export interface OptionSchema {
  type?: string;
  format?: string | Record<string, SubOptionSchema>;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
  optional?: number;
  requires?: string;
}

/** A sub-key of a property-string option (`bridge` of `netN`, `size` of `scsiN`). */
export interface SubOptionSchema extends OptionSchema {
  default_key?: number;
  alias?: string;
  keyAlias?: string;
}

interface EndpointSchema {
  parameters: { properties?: Record<string, OptionSchema> };
}

const endpoints = apiSchema as unknown as Record<string, EndpointSchema>;

/** Parameters of the config endpoints that are verbs of the call, not guest options. */
const NON_OPTIONS = new Set([
  'node',
  'vmid',
  'delete',
  'revert',
  'digest',
  'skiplock',
  'force',
  'background_delay',
  'import-working-storage',
]);

function configProperties(type: GuestType): Record<string, OptionSchema> {
  const key = `PUT /nodes/{node}/${type}/{vmid}/config`;
  return endpoints[key]?.parameters.properties ?? {};
}

const cache: Record<GuestType, Map<string, OptionSchema | null>> = { qemu: new Map(), lxc: new Map() };

/**
 * The schema of a guest config option (`net3` resolves through `net[n]`), or undefined when
 * Proxmox has no such option for that guest type.
 */
export function configOption(type: GuestType, key: string): OptionSchema | undefined {
  const memo = cache[type];
  if (memo.has(key)) return memo.get(key) ?? undefined;
  const props = configProperties(type);
  let found: OptionSchema | undefined;
  if (!NON_OPTIONS.has(key)) {
    found = props[key];
    const indexed = /^([a-z][a-z_-]*?)(\d+)$/.exec(key);
    if (!found && indexed) found = props[`${indexed[1]}[n]`];
  }
  memo.set(key, found ?? null);
  return found;
}

/** Property-string sub-key schemas of an option, when it is a property string. */
export function subOptions(schema: OptionSchema | undefined): Record<string, SubOptionSchema> | undefined {
  return schema && typeof schema.format === 'object' ? schema.format : undefined;
}

/** The sub-key a property string's first, key-less item stands for (`current` for `memory`). */
export function defaultSubKey(schema: OptionSchema | undefined): string | undefined {
  const subs = subOptions(schema);
  if (!subs) return undefined;
  for (const [name, sub] of Object.entries(subs)) if (sub.default_key) return name;
  return undefined;
}

/** Every option name (indexed ones as `net[n]`) Proxmox accepts for this guest type's config. */
export function optionNames(type: GuestType): string[] {
  return Object.keys(configProperties(type)).filter((k) => !NON_OPTIONS.has(k));
}
