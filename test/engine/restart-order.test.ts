/**
 * Restarts after an apply that leaves values pending, and `dependsOn` between guests, over HTTP
 * against the simulator (README "Restarts", "Order between guests: dependsOn"). The HA-managed
 * restart runs the simulator's HA manager on the engine's own "waiting" events, never on a clock.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterSpec, GuestSpec, RestartPolicy } from '../../src/core/model.js';
import type { ClusterWriter } from '../../src/core/ports.js';
import type { ApplyEvent } from '../../src/engine/apply-guest.js';
import { applyGuest } from '../../src/engine/apply-guest.js';
import { executePlan, type ExecuteOptions } from '../../src/engine/execute-plan.js';
import { restartInterrupted } from '../../src/engine/restart-guest.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { haManager } from '../../src/pve/sim/kinds/ha/manager.js';
import { haConfig } from '../../src/pve/sim/kinds/ha/state.js';
import { makeClusterSpec, makeGuestSpec } from '../helpers/factories.js';
import { rawValue } from './helpers.js';

const ALLOWED: RestartPolicy = { policy: 'allowed', force: false, timeout: 60 };
const VMIDS = [100, 101, 102, 103, 104, 105];

let sim: RunningSimulator;
let client: PveClient;
let adapter: PveClusterAdapter;

beforeEach(async () => {
  sim = await startSimulator({
    port: 0,
    taskMs: 2,
    nodes: ['pve-01', 'pve-02'],
    clusterName: 'lab',
    fixture: {
      storages: ['local-lvm'],
      guests: VMIDS.map((vmid) => ({
        vmid,
        type: 'qemu' as const,
        node: vmid % 2 === 0 ? 'pve-01' : 'pve-02',
        running: true,
        config: `name: guest-${vmid}\ntags: pve-gitops\nmemory: 2048\n`,
      })),
    },
  });
  client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
  adapter = new PveClusterAdapter(client, { wait: { intervalMs: 5 } });
});
afterEach(async () => {
  await client.close();
  await sim.close();
});

function cluster(overrides: Partial<ClusterSpec> = {}): ClusterSpec {
  return makeClusterSpec({ vmids: { lower: 100, upper: 1000 }, nodes: ['pve-01', 'pve-02'], ...overrides });
}

/** Guest `guest-<vmid>` asking for 4 GiB: on a running VM without memory hotplug, a pending value. */
function guest(vmid: number, overrides: Partial<GuestSpec> = {}): GuestSpec {
  return makeGuestSpec({
    vmid,
    name: `guest-${vmid}`,
    node: vmid % 2 === 0 ? 'pve-01' : 'pve-02',
    config: { memory: '4096' },
    ...overrides,
  });
}

async function planAndApply(clusterSpec: ClusterSpec, guests: GuestSpec[], options: ExecuteOptions = {}, writer: ClusterWriter = adapter) {
  const plan = await runPlan({ head: { clusters: [clusterSpec], guests }, readers: { lab: adapter } });
  const result = await executePlan(plan, { lab: writer }, { lockPollMs: 5, ...options });
  return { plan, result, byVmid: Object.fromEntries(result.guests.map((g) => [g.vmid, g])) };
}

describe('restarts', () => {
  it('restart: allowed shuts the guest down cleanly, starts it and confirms nothing is left pending; the plan says why first', async () => {
    const { plan, byVmid } = await planAndApply(cluster(), [guest(100, { restart: ALLOWED })]);
    expect(plan.guests.find((g) => g.vmid === 100)?.restart).toEqual({
      reason: 'memory takes effect only after a restart (restart: allowed)',
      force: false,
      timeout: 60,
      inFlight: 1,
    });
    const result = byVmid[100]!;
    expect(result.status).toBe('applied');
    expect(result.steps.map((s) => s.op)).toEqual(['config', 'shutdown', 'start', 'restarted']);
    expect(result.steps[1]?.upid).toMatch(/:qmshutdown:100:/);
    expect(result.pending).toBeUndefined();
    expect(rawValue(sim, 100, 'memory')).toBe('4096');
    expect(sim.sim.getGuest(100)?.rawConfig).not.toContain('[PENDING]');
    expect(sim.sim.getGuest(100)?.running).toBe(true);
  });

  it('a guest that ignores the shutdown: without force it fails and keeps running, pending; with force it is stopped hard and restarted', async () => {
    sim.sim.ignoresShutdown.add(100);
    const { byVmid } = await planAndApply(cluster(), [guest(100, { restart: ALLOWED })]);
    expect(byVmid[100]?.status).toBe('failed');
    expect(byVmid[100]?.error).toBe(
      'restart: the shutdown failed (VM quit/powerdown failed - got timeout); the guest was not started again by this run and its pending values wait; restart: { policy: allowed, force: true } lets a hard stop follow',
    );
    expect(sim.sim.getGuest(100)?.running).toBe(true);
    expect(rawValue(sim, 100, 'memory')).toBe('2048');

    // The value is pending now, so the plan is a no-op: the forced restart is tried on a fresh change.
    const forced = await planAndApply(cluster(), [
      guest(100, { restart: { ...ALLOWED, force: true }, config: { memory: '4096', cores: '2' } }),
    ]);
    const result = forced.byVmid[100]!;
    expect(result.status).toBe('applied');
    expect(result.steps.map((s) => s.op)).toEqual(['config', 'shutdown', 'start', 'restarted']);
    expect(result.steps[1]?.detail).toBe('restart: clean shutdown within 60 s, then a hard stop');
    expect(rawValue(sim, 100, 'memory')).toBe('4096');
    expect(rawValue(sim, 100, 'cores')).toBe('2');
  });

  it('a run that stopped inside its restart (the guest down) is finished by the next run of the same plan', async () => {
    const plan = await runPlan({ head: { clusters: [cluster()], guests: [guest(100, { restart: ALLOWED })] }, readers: { lab: adapter } });
    const planned = plan.guests.find((g) => g.vmid === 100)!;
    // The first run dies after the shutdown: its start never reaches Proxmox.
    const dying = new Proxy(adapter, {
      get(target, prop) {
        if (prop === 'start') return () => Promise.reject(new Error('worker died'));
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const first = await applyGuest(planned, dying, { lockPollMs: 5 });
    expect(first.status).toBe('failed');
    expect(sim.sim.getGuest(100)?.running).toBe(false);
    expect(restartInterrupted(first.steps)).toBe(true);

    const second = await applyGuest(planned, adapter, { lockPollMs: 5, restartInterrupted: restartInterrupted(first.steps) });
    expect(second.status).toBe('applied');
    expect(second.steps.map((s) => s.op)).toEqual(['shutdown', 'start', 'restarted']);
    // qemu's shutdown of a stopped VM is a task that ends OK at once (the worker finds nothing running).
    expect(second.steps[0]?.exitStatus).toBe('OK');
    expect(sim.sim.getGuest(100)?.running).toBe(true);
    expect(rawValue(sim, 100, 'memory')).toBe('4096');
  });

  it('restart: never (the default) leaves the value pending and says so', async () => {
    const { plan, byVmid } = await planAndApply(cluster(), [guest(100)]);
    expect(plan.guests.find((g) => g.vmid === 100)?.restart).toBeUndefined();
    expect(byVmid[100]?.steps.map((s) => s.op)).toEqual(['config']);
    expect(byVmid[100]?.pending).toEqual(['memory']);
    expect(rawValue(sim, 100, 'memory')).toBe('2048');
  });

  it("takes the cluster's default policy and never has more restarts in flight than its restartsInFlight", async () => {
    let inFlight = 0;
    let most = 0;
    // A restart is in flight from its shutdown until its start has returned.
    const counting = new Proxy(adapter, {
      get(target, prop) {
        if (prop === 'shutdown') {
          return (...args: Parameters<ClusterWriter['shutdown']>) => {
            most = Math.max(most, ++inFlight);
            return target.shutdown(...args);
          };
        }
        if (prop === 'start') {
          return (...args: Parameters<ClusterWriter['start']>) => target.start(...args).finally(() => inFlight--);
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { byVmid } = await planAndApply(
      cluster({ restart: ALLOWED, restartsInFlight: 2 }),
      VMIDS.map((vmid) => guest(vmid)),
      {},
      counting,
    );
    for (const vmid of VMIDS)
      expect({ vmid, ops: byVmid[vmid]?.steps.map((s) => s.op) }).toEqual({ vmid, ops: ['config', 'shutdown', 'start', 'restarted'] });
    expect(most).toBeGreaterThanOrEqual(1);
    expect(most).toBeLessThanOrEqual(2);
    for (const vmid of VMIDS) expect(rawValue(sim, vmid, 'memory')).toBe('4096');
  });

  it('restarts an HA-managed guest through HA, waiting on the status after each hastop/hastart', async () => {
    haConfig(sim.sim).ids.set('vm:100', { type: 'vm', options: { state: 'started' } });
    const onEvent = (event: ApplyEvent): void => {
      if (event.type === 'waiting' && event.reason.startsWith('HA manager')) haManager(sim.sim).tick();
    };
    const { byVmid } = await planAndApply(cluster(), [guest(100, { restart: ALLOWED })], { onEvent });
    const result = byVmid[100]!;
    expect(result.status).toBe('applied');
    expect(result.steps.map((s) => s.op)).toEqual(['config', 'shutdown', 'wait-ha', 'start', 'wait-ha', 'restarted']);
    expect(result.steps[1]?.upid).toMatch(/:hastop:100:/);
    expect(result.steps[3]?.upid).toMatch(/:hastart:100:/);
    expect(rawValue(sim, 100, 'memory')).toBe('4096');
    expect(haConfig(sim.sim).ids.get('vm:100')?.options.state).toBe('started');
  });
});

describe('dependsOn', () => {
  it('applies a guest only after the guests it depends on have their result', async () => {
    const events: string[] = [];
    const onEvent = (event: ApplyEvent): void => {
      if (event.type === 'guest-start' || event.type === 'guest-done') events.push(`${event.type}:${event.guest.vmid}`);
    };
    const { plan, byVmid } = await planAndApply(
      cluster(),
      [guest(100, { dependsOn: ['guest-101'] }), guest(101, { dependsOn: ['guest-102'] }), guest(102)],
      { onEvent },
    );
    expect(plan.guests.find((g) => g.vmid === 100)?.after).toEqual(['lab/101']);
    expect([100, 101, 102].map((vmid) => byVmid[vmid]?.status)).toEqual(['applied', 'applied', 'applied']);
    expect(events.indexOf('guest-start:101')).toBeGreaterThan(events.indexOf('guest-done:102'));
    expect(events.indexOf('guest-start:100')).toBeGreaterThan(events.indexOf('guest-done:101'));
  });

  it('holds the dependents of a guest that failed: skipped and retryable, nothing written', async () => {
    void sim.sim.holdLock(101, 'backup', 60_000);
    const { byVmid } = await planAndApply(cluster(), [guest(100, { dependsOn: ['guest-101'] }), guest(101), guest(102)], {
      lockWaitMs: 30,
    });
    expect(byVmid[101]?.status).toBe('failed');
    expect(byVmid[100]).toMatchObject({
      status: 'skipped',
      retryable: true,
      steps: [],
      error: 'held: it depends on guest-101 (lab/101), which ended failed; nothing was written — apply again once that guest applies',
    });
    expect(byVmid[102]?.status).toBe('applied');
    expect(sim.sim.stats().guests[100]?.writes ?? 0).toBe(0);
    expect(sim.sim.getGuest(100)?.rawConfig).not.toContain('4096');
  });
});
