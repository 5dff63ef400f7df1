/** What plans and drift reports read, on the in-memory cluster. */
import { describe, expect, it } from 'vitest';
import type { ClusterSpec, GuestSpec } from '../../src/core/model.js';
import { runDrift } from '../../src/engine/run-plan.js';
import { makeClusterSpec, makeGuestSpec } from '../helpers/factories.js';
import { MemoryCluster } from './memory-cluster.js';
import { VirtualClock } from './virtual-clock.js';

const LAB: ClusterSpec = makeClusterSpec({ vmids: { lower: 100, upper: 1000 }, source: { file: 'lab/cluster.yaml', line: 1, col: 1 } });

function estate(guests: number): { lab: MemoryCluster; specs: GuestSpec[] } {
  const lab = new MemoryCluster({ clock: new VirtualClock(), nodes: ['pve-01'], readMs: 20 });
  const specs: GuestSpec[] = [];
  for (let vmid = 100; vmid < 100 + guests; vmid++) {
    lab.add({ vmid, config: { name: `guest-${vmid}`, tags: 'pve-gitops', memory: '2048' } });
    specs.push(makeGuestSpec({ vmid, name: `guest-${vmid}`, config: { memory: '2048' } }));
  }
  return { lab, specs };
}

describe('observeClusters', () => {
  it("has no read limit of its own: the cluster's connection bounds every request", async () => {
    const { lab, specs } = estate(100);
    const report = await runDrift({ head: { clusters: [LAB], guests: specs }, readers: { lab } });
    expect(report.summary.noop).toBe(100);
    // The in-memory cluster has no bound, so every read is in flight at once (formerly 16).
    expect(lab.maxConcurrentReads).toBe(100);
  });

  it('honours an explicit limit when asked for one', async () => {
    const { lab, specs } = estate(40);
    await runDrift({ head: { clusters: [LAB], guests: specs }, readers: { lab }, concurrency: 8 });
    expect(lab.maxConcurrentReads).toBe(8);
  });
});
