/**
 * One adapter per kind of object other than the guest, one import and one line each: the Proxmox
 * side of the port its kind declares in `core/kinds/<kind>/` (docs/adding-a-kind.md). The guest's
 * adapter is `../cluster-adapter.ts`.
 */
import type { PveClient } from '../client.js';
import { BackupJobAdapter } from './backup-adapter.js';
import { FirewallAdapter } from './firewall-adapter.js';
import { HaAdapter } from './ha-adapter.js';
import { PoolAdapter } from './pool-adapter.js';

/** Makes a kind's adapter over one cluster's client. */
type AdapterFactory = (client: PveClient) => unknown;

const ADAPTERS: Readonly<Record<string, AdapterFactory>> = {
  pool: (client) => new PoolAdapter(client),
  'pool-member': (client) => new PoolAdapter(client),
  'backup-job': (client) => new BackupJobAdapter(client),
  ha: (client) => new HaAdapter(client),
  firewall: (client) => new FirewallAdapter(client),
};

/** The kind's adapter over `client`, or undefined for a kind without one. */
export function kindAdapter(kind: string, client: PveClient): unknown {
  return Object.hasOwn(ADAPTERS, kind) ? ADAPTERS[kind]?.(client) : undefined;
}

/** The kinds that have an adapter (for the conformance test). */
export function adaptedKinds(): string[] {
  return Object.keys(ADAPTERS).sort();
}
