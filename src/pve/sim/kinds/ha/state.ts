/**
 * The simulated `/etc/pve/ha/resources.cfg` (pve-ha-manager `HA/Config.pm`, a SectionConfig
 * file): the HA resources of one simulator by SID, in the order they were added, and the file's
 * digest, the SHA-1 of its text as `write_resources_config` would write it, so any resource's
 * edit changes the digest every other resource's write carries. Kept beside the simulator rather
 * than in it, so the HA kind is one folder; tests reach it through `haConfig(sim)`.
 */
import { createHash } from 'node:crypto';
import type { Simulator } from '../../simulator.js';

/** The options a `vm:`/`ct:` section may hold (`PVEVM.pm`/`PVECT.pm` `options`), as stored strings. */
export const HA_OPTIONS = ['state', 'group', 'comment', 'failback', 'max_restart', 'max_relocate'] as const;

/** One section: its type (`vm`, `ct`) and the options written. */
export interface SimHaResource {
  type: string;
  options: Record<string, string>;
}

/** The HA configuration of one simulator. */
export class SimHaConfig {
  readonly ids = new Map<string, SimHaResource>();
  /** The CRM's service state per SID when it is `error` (the manager status); tests set it. */
  readonly errorState = new Set<string>();
  /** Edits run once, right after the next read of one resource answers: another client's write between our read and our write. */
  readonly afterRead: (() => void)[] = [];

  /** The file's text: `<type>: <name>` then the options, as SectionConfig writes them. */
  text(): string {
    let out = '';
    for (const [sid, resource] of this.ids) {
      out += `${resource.type}: ${sid.slice(resource.type.length + 1)}\n`;
      for (const key of Object.keys(resource.options).sort()) out += `\t${key} ${resource.options[key]}\n`;
      out += '\n';
    }
    return out;
  }

  /** `$cfg->{digest}`: the SHA-1 of the file as read. */
  digest(): string {
    return createHash('sha1').update(this.text()).digest('hex');
  }
}

const CONFIGS = new WeakMap<Simulator, SimHaConfig>();

/** The HA configuration of `sim` (empty until something is added). */
export function haConfig(sim: Simulator): SimHaConfig {
  let config = CONFIGS.get(sim);
  if (!config) {
    config = new SimHaConfig();
    CONFIGS.set(sim, config);
  }
  return config;
}
