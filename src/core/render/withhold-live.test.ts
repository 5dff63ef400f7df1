import { describe, expect, it } from 'vitest';
import { makeGuestPlan, makePlan } from '../../../test/helpers/factories.js';
import { withholdLiveValues } from './withhold-live.js';
import { LIVE_WITHHELD } from '../plan/base-ownership.js';

describe('withholdLiveValues', () => {
  const guest = makeGuestPlan({
    liveWithheld: true,
    changes: [
      { key: 'memory', from: '8192', to: '2048', impact: 'live' },
      { key: 'net0', from: 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr9', to: 'virtio,bridge=vmbr0', impact: 'live' },
      { key: 'tags', to: 'pve-gitops', impact: 'live' },
    ],
    operations: [
      {
        op: 'config',
        set: { memory: '2048', net0: 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0', tags: 'pve-gitops' },
        delete: ['description'],
        from: { memory: '8192', net0: 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr9', description: 'secret' },
      },
      { op: 'resize', disk: 'scsi0', size: '64G', from: '48G' },
      { op: 'move-disk', disk: 'scsi0', storage: 'fast', from: 'slow-secret-pool' },
      { op: 'start' },
    ],
    drift: [{ key: 'cores', expected: '2', actual: '6' }],
    pending: [
      { key: 'cores', current: '4', pending: '6' },
      { key: 'balloon', current: '1024', delete: true },
    ],
  });

  it('replaces every live value of a marked guest, and keeps what the spec sets', () => {
    const plan = makePlan([
      guest,
      makeGuestPlan({ name: 'owned', changes: [{ key: 'memory', from: '1024', to: '2048', impact: 'live' }] }),
    ]);
    const shown = withholdLiveValues(plan);
    const [hidden, owned] = shown.guests;
    expect(hidden?.changes).toEqual([
      { key: 'memory', from: LIVE_WITHHELD, to: '2048', impact: 'live' },
      { key: 'net0', from: LIVE_WITHHELD, to: 'virtio,bridge=vmbr0', impact: 'live' },
      { key: 'tags', to: 'pve-gitops', impact: 'live' },
    ]);
    expect(hidden?.operations).toEqual([
      {
        op: 'config',
        // The NIC's written value carries the live MAC: not the spec's value, so withheld.
        set: { memory: '2048', net0: LIVE_WITHHELD, tags: 'pve-gitops' },
        delete: ['description'],
        from: { memory: LIVE_WITHHELD, net0: LIVE_WITHHELD, description: LIVE_WITHHELD },
      },
      { op: 'resize', disk: 'scsi0', size: '64G', from: LIVE_WITHHELD },
      { op: 'move-disk', disk: 'scsi0', storage: 'fast', from: LIVE_WITHHELD },
      { op: 'start' },
    ]);
    expect(hidden?.drift).toEqual([{ key: 'cores', expected: '2', actual: LIVE_WITHHELD }]);
    expect(hidden?.pending).toEqual([
      { key: 'cores', current: LIVE_WITHHELD, pending: LIVE_WITHHELD },
      { key: 'balloon', current: LIVE_WITHHELD, delete: true },
    ]);
    expect(JSON.stringify(hidden)).not.toMatch(/8192|BC:24:11|vmbr9|secret|48G|"6"|"4"|1024/);
    expect(owned).toBe(plan.guests[1]);
    // The plan itself keeps the values the apply compares with.
    expect(plan.guests[0]?.changes[0]?.from).toBe('8192');
  });

  it('returns a plan without marked guests as it is', () => {
    const plan = makePlan([makeGuestPlan()]);
    expect(withholdLiveValues(plan)).toBe(plan);
  });
});
