/**
 * The simulated cluster a kind's HTTP tests run against: `lab`, started before each test with the
 * test file's fixture and closed after it, with an adapter of the kind over the admin token (the
 * writer), one over the audit token (the reader), and a maker for adapters over other tokens.
 * Every client made is closed with the simulator, so no test leaks a socket into the next.
 */
import { afterEach, beforeEach } from 'vitest';
import { PveClient } from '../../src/pve/client.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';

/** What each test gets: the running simulator and the kind's adapters. */
export interface KindSimulator<A> {
  sim: RunningSimulator;
  writer: A;
  reader: A;
  adapter: (token: string, readOnly?: boolean) => A;
}

/**
 * Registers the before and after hooks of the file's tests. `ready` receives each test's
 * simulator and adapters, before the test runs.
 */
export function useKindSimulator<A>(fixture: SimFixture, make: (client: PveClient) => A, ready: (kit: KindSimulator<A>) => void): void {
  let running: RunningSimulator | undefined;
  let clients: PveClient[] = [];
  beforeEach(async () => {
    const sim = await startSimulator({ port: 0, taskMs: 2, clusterName: 'lab', fixture });
    running = sim;
    clients = [];
    const adapter = (token: string, readOnly = false): A => {
      const client = new PveClient({ cluster: 'lab', url: sim.url, token, readOnly, retries: 0 });
      clients.push(client);
      return make(client);
    };
    ready({ sim, writer: adapter(sim.token), reader: adapter(sim.auditToken, true), adapter });
  });
  afterEach(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await running?.close();
  });
}
