/**
 * The rehearsal's sandbox: one simulator per copied cluster (`sim/`), in this process, on a
 * loopback port, with tasks that finish at once, started from the copy (`core/rehearse/copy.ts`),
 * and the same cluster adapter the real apply uses, over HTTP to it. Closing stops them all.
 */
import type { OpenSandbox, RehearsalSandbox } from '../../core/ports.js';
import type { ClusterCopy, GuestCopy } from '../../core/rehearse/copy.js';
import { PveClient } from '../client.js';
import { PveClusterAdapter } from '../cluster-adapter.js';
import { emptySection, type ParsedConfig, serializeConfig } from '../sim/config-file.js';
import { type RunningSimulator, startSimulator } from '../sim/index.js';
import type { SimFixture } from '../sim/schema.js';

/** A guest's config file as the copy holds it: the values in effect, then `[PENDING]`. */
function rawConfig(guest: GuestCopy): string {
  const parsed: ParsedConfig = { main: emptySection(), pending: emptySection(), special: new Map(), snapshots: new Map() };
  for (const [key, value] of Object.entries(guest.current)) parsed.main.values.set(key, value);
  for (const [key, value] of Object.entries(guest.pending)) parsed.pending.values.set(key, value);
  if (guest.pendingDelete.length > 0) parsed.pending.values.set('delete', guest.pendingDelete.join(','));
  return serializeConfig(parsed, guest.type);
}

/** The simulator fixture of one copied cluster. */
export function fixtureOf(copy: ClusterCopy): SimFixture {
  const { facts } = copy;
  const nodeCpus = Object.fromEntries(facts.nodes.flatMap((n) => (n.cpus !== undefined ? [[n.node, n.cpus]] : [])));
  return {
    clusterName: copy.cluster,
    nodes: facts.nodes.map((n) => n.node),
    ...(facts.storages.length > 0 ? { storages: facts.storages } : {}),
    ...(facts.pools ? { pools: facts.pools } : {}),
    bridges: facts.bridges,
    nodeCpus,
    guests: copy.guests.map((g) => ({ vmid: g.vmid, type: g.type, node: g.node, running: g.running, config: rawConfig(g) })),
  };
}

/** Starts the copies; see the file comment. */
export const openRehearsalSandbox: OpenSandbox = async (copies: readonly ClusterCopy[]): Promise<RehearsalSandbox> => {
  const running: RunningSimulator[] = [];
  const clients: PveClient[] = [];
  let closing: Promise<void> | undefined;
  // Idempotent, every step attempted: the clients first, then the simulators they talk to.
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await Promise.allSettled(clients.map((c) => c.close()));
      await Promise.allSettled(running.map((sim) => sim.close()));
    })();
    return closing;
  };
  try {
    const writers: RehearsalSandbox['writers'] = {};
    for (const copy of copies) {
      const sim = await startSimulator({ port: 0, taskMs: 0, fixture: fixtureOf(copy) });
      running.push(sim);
      const client = new PveClient({ cluster: copy.cluster, url: sim.url, token: sim.token, retries: 0 });
      clients.push(client);
      writers[copy.cluster] = new PveClusterAdapter(client, { wait: { fastIntervalMs: 1, intervalMs: 5 } });
    }
    return { writers, close };
  } catch (err) {
    await close();
    throw err;
  }
};
