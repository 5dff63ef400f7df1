/**
 * `power:` on an HA-managed guest, over HTTP against the simulator: Proxmox hands the start or
 * stop to the HA manager in a `hastart`/`hastop` task that ends before the guest changes state,
 * so the engine waits on the guest's status. The simulator's HA manager runs a round only when the
 * test says (`tick()`), on the engine's own "waiting" event: no clock is waited for.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterSpec, GuestSpec } from '../../src/core/model.js';
import type { ApplyEvent } from '../../src/engine/apply-guest.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { startSimulator, type RunningSimulator } from '../../src/pve/sim/index.js';
import { haManager } from '../../src/pve/sim/kinds/ha/manager.js';
import { haConfig } from '../../src/pve/sim/kinds/ha/state.js';
import { makeClusterSpec, makeGuestSpec } from '../helpers/factories.js';

const LAB: ClusterSpec = makeClusterSpec({ vmids: { lower: 100, upper: 1000 }, nodes: ['pve-01', 'pve-02'] });

let sim: RunningSimulator;
let clients: PveClient[];
let adapter: PveClusterAdapter;

beforeEach(async () => {
  sim = await startSimulator({
    port: 0,
    taskMs: 2,
    nodes: ['pve-01', 'pve-02'],
    clusterName: 'lab',
    fixture: {
      storages: ['local-lvm'],
      guests: [
        { vmid: 100, type: 'qemu', node: 'pve-01', config: 'name: web-01\ntags: pve-gitops\nmemory: 2048\n' },
        { vmid: 200, type: 'lxc', node: 'pve-01', running: true, config: 'hostname: ct-01\ntags: pve-gitops\nmemory: 512\n' },
      ],
    },
  });
  const client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
  clients = [client];
  adapter = new PveClusterAdapter(client, { wait: { intervalMs: 5 } });
  haConfig(sim.sim).ids.set('vm:100', { type: 'vm', options: { state: 'stopped' } });
  haConfig(sim.sim).ids.set('ct:200', { type: 'ct', options: { state: 'started' } });
});
afterEach(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await sim.close();
});

function vm(power: GuestSpec['power']): GuestSpec {
  return makeGuestSpec({ vmid: 100, name: 'web-01', power, config: { memory: '2048' } });
}
function ct(power: GuestSpec['power']): GuestSpec {
  return makeGuestSpec({ vmid: 200, name: 'ct-01', type: 'lxc', power, config: { memory: '512' } });
}

/** Applies `guests` and runs one HA round each time the engine says it waits for the HA manager. */
async function applyWithRounds(guests: GuestSpec[], onWait: (reason: string) => void = () => haManager(sim.sim).tick()) {
  const plan = await runPlan({ head: { clusters: [LAB], guests }, readers: { lab: adapter } });
  const waits: string[] = [];
  const onEvent = (event: ApplyEvent): void => {
    if (event.type !== 'waiting' || !event.reason.startsWith('HA manager')) return;
    waits.push(event.reason);
    onWait(event.reason);
  };
  const result = await executePlan(plan, { lab: adapter }, { lockPollMs: 5, onEvent });
  return { plan, result, waits };
}

describe('power on an HA-managed guest', () => {
  it('starts through HA: the hastart task ends with the guest still stopped, the engine waits on the status', async () => {
    const { plan, result, waits } = await applyWithRounds([vm('running')]);
    expect(plan.guests.find((g) => g.vmid === 100)?.operations.map((o) => o.op)).toEqual(['start']);
    const guest = result.guests.find((g) => g.status !== 'skipped')!;
    expect(guest.status).toBe('applied');
    expect(guest.steps.map((s) => s.op)).toEqual(['start', 'wait-ha']);
    expect(guest.steps[0]?.upid).toMatch(/:hastart:100:/);
    expect(guest.steps[0]?.exitStatus).toBe('OK');
    // The task had ended and the guest was still stopped: that is what the engine waited out.
    expect(waits[0]).toBe('HA manager: guest stopped, HA state request_start; waiting for running');
    expect(sim.sim.getGuest(100)?.running).toBe(true);
    expect(haConfig(sim.sim).ids.get('vm:100')?.options.state).toBe('started');
    const again = await runPlan({ head: { clusters: [LAB], guests: [vm('running')] }, readers: { lab: adapter } });
    expect(again.guests.find((g) => g.vmid === 100)?.action).toBe('noop');
  });

  it('stops a container through HA (hastop), and the CRM records the resource as stopped', async () => {
    const { result } = await applyWithRounds([ct('stopped')]);
    const guest = result.guests.find((g) => g.status !== 'skipped')!;
    expect(guest.status).toBe('applied');
    expect(guest.steps[0]?.upid).toMatch(/:hastop:200:/);
    expect(guest.steps.map((s) => s.op)).toEqual(['shutdown', 'wait-ha']);
    expect(sim.sim.getGuest(200)?.running).toBe(false);
    expect(haConfig(sim.sim).ids.get('ct:200')?.options.state).toBe('stopped');
  });

  it('reports a failure, not a success, when HA does not carry the request out in time', async () => {
    const plan = await runPlan({ head: { clusters: [LAB], guests: [vm('running')] }, readers: { lab: adapter } });
    const result = await executePlan(plan, { lab: adapter }, { lockPollMs: 5, lockWaitMs: 40 });
    const guest = result.guests.find((g) => g.status !== 'skipped')!;
    expect(guest.status).toBe('failed');
    expect(guest.error).toMatch(
      /^the HA manager was asked for running but the guest is still stopped after \d+ s \(HA state request_start\)/,
    );
    expect(sim.sim.getGuest(100)?.running).toBe(false);
  });

  it('follows a guest HA moves to another node while it waits, and never moves it back', async () => {
    const { result } = await applyWithRounds([vm('running')], () => {
      haManager(sim.sim).relocate(100, 'pve-02');
      haManager(sim.sim).tick();
    });
    const guest = result.guests.find((g) => g.status !== 'skipped')!;
    expect(guest.status).toBe('applied');
    expect(guest.node).toBe('pve-02');
    expect(guest.steps.map((s) => s.op)).toEqual(['start', 'relocated', 'wait-ha']);
    const again = await runPlan({ head: { clusters: [LAB], guests: [vm('running')] }, readers: { lab: adapter } });
    expect(again.guests.find((g) => g.vmid === 100)?.action).toBe('noop');
    expect(again.guests.find((g) => g.vmid === 100)?.operations).toEqual([]);
    expect(again.guests.find((g) => g.vmid === 100)?.warnings.join('\n')).toMatch(/lives on pve-02 .*not moved/);
    expect(sim.sim.getGuest(100)?.node).toBe('pve-02');
  });
});
