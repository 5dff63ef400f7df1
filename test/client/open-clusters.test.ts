/**
 * Opening clusters from connections: bounded timeouts from the connection settings, and progress
 * for a person watching while a request or a task takes longer than a few seconds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../src/core/port-errors.js';
import { openClusters } from '../../src/connections/open-clusters.js';
import { startSimulator } from '../../src/pve/sim/index.js';
import { startTinyServer } from './helpers/tiny-server.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('openClusters', () => {
  it('gives up on a cluster that does not answer after its timeout, with progress lines while it waits', async () => {
    const server = await startTinyServer(() => undefined); // accepts, never answers
    cleanups.push(() => server.close());
    const lines: string[] = [];
    const open = openClusters(
      {
        lab: {
          name: 'lab',
          url: server.url,
          token: 'gitops@pve!plan=secret-1234',
          insecure: false,
          allowHttp: true,
          allowHostAccess: [],
          timeoutMs: 1_000,
        },
      },
      'read',
      { progress: (line) => lines.push(line), slowAfterMs: 50 },
    );
    cleanups.push(() => open.close());
    const err = await open.clusters.lab!.listGuests().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as Error).message).toBe('GET /cluster/resources timed out after 1000 ms');
    expect(server.requests).toHaveLength(1);
    expect(lines[0]).toMatch(/^lab: waiting for an answer to GET \/cluster\/resources for \d+ s \(gives up after 1 s\)$/);
  });

  it('reports a task still running after a while', async () => {
    // A task that runs for many report intervals: on a busy machine a slow status request may take
    // one interval's only line, and the task still gets the next.
    const sim = await startSimulator({ port: 0, taskMs: 1000 });
    cleanups.push(() => sim.close());
    sim.sim.addGuest({ vmid: 100, type: 'qemu', node: 'pve-01', config: { name: 'slow', memory: 512 } });
    const lines: string[] = [];
    const open = openClusters(
      { lab: { name: 'lab', url: sim.url, token: sim.token, insecure: false, allowHttp: true, allowHostAccess: [] } },
      'write',
      {
        progress: (line) => lines.push(line),
        slowAfterMs: 50,
      },
    );
    cleanups.push(() => open.close());
    await open.clusters.lab!.start({ node: 'pve-01', type: 'qemu', vmid: 100 });
    expect(lines.filter((line) => /^lab: task UPID:pve-01:[^ ]*:qmstart:100:[^ ]* still running after \d+ s$/.test(line))).not.toEqual([]);
  });
});
