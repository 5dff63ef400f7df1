import type { GuestType } from './guest-flavours.js';
import { endpointSchema, paramSchema, type ParamSchema } from './proxmox-params.js';

/**
 * Guest config options as Proxmox's API schema describes them: one lookup for the planner, the
 * spec loader and the simulator, on top of {@link paramSchema}.
 */

/** A config option's schema; property-string options carry their sub-keys in `format`. */
export type OptionSchema = ParamSchema;

/** Parameters of the config endpoints that are verbs of the call, not guest options. */
export const NON_OPTIONS: ReadonlySet<string> = new Set([
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

/**
 * Keys Proxmox manages itself (docs/design.md#owned-keys): never set by a spec, never owned by the
 * repository. `smbios1` and `vmgenid` are not here: Proxmox fills them in at creation, but a spec
 * may pin them and then owns them.
 */
const SERVER_MANAGED: ReadonlySet<string> = new Set([
  'digest',
  'lock',
  'meta',
  'parent',
  'snaptime',
  'vmstate',
  'runningmachine',
  'runningcpu',
  'pending',
  'snapshots',
  'lxc',
]);

/** True for keys the server manages: `digest`, `lock`, `meta`, `unusedN`, … */
export function isServerManaged(key: string): boolean {
  return SERVER_MANAGED.has(key) || /^unused\d+$/.test(key);
}

/** The endpoint whose parameters are a guest type's config options. */
export function configEndpoint(type: GuestType): string {
  return `PUT /nodes/{node}/${type}/{vmid}/config`;
}

/**
 * The schema of a guest config option (`net3` resolves through `net[n]` within Proxmox's
 * limits), or undefined when Proxmox has no such option for that guest type.
 */
export function configOption(type: GuestType, key: string): OptionSchema | undefined {
  if (NON_OPTIONS.has(key)) return undefined;
  return paramSchema(configEndpoint(type), key);
}

/** Every option name (indexed ones as `net[n]`) of this guest type's config. */
export function optionNames(type: GuestType): string[] {
  return Object.keys(endpointSchema(configEndpoint(type))?.parameters.properties ?? {}).filter((k) => !NON_OPTIONS.has(k));
}

/** Property-string sub-key schemas of an option, when it is a property string. */
export function subOptions(schema: OptionSchema | undefined): Record<string, OptionSchema> | undefined {
  return schema && typeof schema.format === 'object' ? schema.format : undefined;
}

/**
 * Each format's default sub-key, found once: a drift report asks for a disk's twice per disk of
 * every guest, and the search went through the thirty-odd sub-options of a disk each time.
 */
const defaultSubKeys = new WeakMap<Record<string, OptionSchema>, string | undefined>();

/** The sub-key a property string's first, key-less item stands for (`current` of `memory`). */
export function defaultSubKey(schema: OptionSchema | undefined): string | undefined {
  const subs = subOptions(schema);
  if (!subs) return undefined;
  if (defaultSubKeys.has(subs)) return defaultSubKeys.get(subs);
  let found: string | undefined;
  for (const [name, sub] of Object.entries(subs)) {
    if (sub.default_key) {
      found = name;
      break;
    }
  }
  defaultSubKeys.set(subs, found);
  return found;
}
