import { describe, expect, it } from 'vitest';
import { assignVmids, vmidSlot } from './vmid.js';

const LAB = { lower: 100000, upper: 199999 };

describe('vmidSlot', () => {
  it('is a fixed function of cluster/name: changing it changes every derived identity', () => {
    // Golden values: if these change, every derived VMID in every repository moves.
    expect(vmidSlot('lab', 'dns-01', LAB)).toBe(171037);
    expect(vmidSlot('lab', 'web-01', LAB)).not.toBe(vmidSlot('prod', 'web-01', LAB));
  });

  it.each([
    ['a range of one', { lower: 500, upper: 501 }],
    ['the whole Proxmox range', { lower: 100, upper: 1_000_000_000 }],
    ['a lab range', LAB],
  ])('stays inside %s', (_name, range) => {
    for (const name of ['a', 'b', 'web-01', 'db-01', 'x'.repeat(200)]) {
      const slot = vmidSlot('lab', name, range);
      expect(slot).toBeGreaterThanOrEqual(range.lower);
      expect(slot).toBeLessThan(range.upper);
    }
  });

  it('refuses an empty range', () => {
    expect(() => vmidSlot('lab', 'a', { lower: 5, upper: 5 })).toThrow(RangeError);
  });
});

describe('assignVmids', () => {
  it('keeps pinned VMIDs and derives the rest at their slot', () => {
    const { vmids } = assignVmids('lab', LAB, [{ name: 'a', vmid: 100001 }, { name: 'dns-01' }]);
    expect(vmids).toEqual([100001, 171037]);
  });

  it('probes past a pinned VMID that holds the slot', () => {
    const { vmids } = assignVmids('lab', LAB, [{ name: 'dns-01' }, { name: 'pinned', vmid: 171037 }]);
    expect(vmids).toEqual([171038, 171037]);
  });

  it('wraps around at the top of the range', () => {
    const range = { lower: 500, upper: 503 };
    // A name whose slot is the last VMID of the range, so a collision there must wrap.
    const name = Array.from({ length: 100 }, (_, i) => `g${i}`).find((n) => vmidSlot('c', n, range) === 502);
    expect(name).toBeDefined();
    const { vmids } = assignVmids('c', range, [{ name: name ?? '' }, { name: 'pinned', vmid: 502 }]);
    expect(vmids).toEqual([500, 502]);
  });

  it('does not depend on the order the guests were read in', () => {
    const guests = Array.from({ length: 200 }, (_, i) => ({ name: `g-${i}` }));
    const range = { lower: 1000, upper: 1300 };
    const forward = assignVmids('c', range, guests).vmids;
    const backward = assignVmids('c', range, [...guests].reverse()).vmids.reverse();
    expect(backward).toEqual(forward);
    expect(new Set(forward).size).toBe(200);
  });

  it('leaves a guest unassigned when the range is full', () => {
    const { vmids } = assignVmids('c', { lower: 500, upper: 502 }, [{ name: 'a' }, { name: 'b' }, { name: 'c', vmid: 500 }]);
    expect(vmids).toEqual([501, undefined, 500]);
  });

  it('ignores pinned VMIDs outside the range when counting free ones', () => {
    const { vmids } = assignVmids('c', { lower: 500, upper: 501 }, [{ name: 'a' }, { name: 'x', vmid: 9999 }]);
    expect(vmids).toEqual([500, 9999]);
  });
});
