/**
 * The rehearsal's outcome read from an apply result: applied and unchanged guests count as
 * applied, a failed one is refused with its failing step and Proxmox's error, untouched guests are
 * left out, and a pull request never sees the error text of a guest whose live values it withholds.
 */
import { describe, expect, it } from 'vitest';
import type { ApplyResult, GuestApplyResult } from '../apply-result.js';
import type { Plan } from '../model.js';
import { objectRefusals, refusals, rehearsalHeadline, rehearsalOf, withholdRehearsalLive } from './outcome.js';
import { renderRehearsalMarkdown, renderRehearsalText } from './render.js';

function result(guests: Partial<GuestApplyResult>[]): ApplyResult {
  return {
    version: 1,
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:00:01.000Z',
    guests: guests.map((g, i) => ({ cluster: 'lab', name: `vm-${i}`, vmid: 100 + i, node: 'pve-01', status: 'applied', steps: [], ...g })),
  };
}

const PLAN = {
  guests: [
    { cluster: 'lab', vmid: 100, action: 'update', source: { file: 'a.yaml', line: 1, col: 1 } },
    { cluster: 'lab', vmid: 101, action: 'update', source: { file: 'b.yaml', line: 4, col: 1 }, liveWithheld: true },
    { cluster: 'lab', vmid: 102, action: 'update' },
    { cluster: 'lab', vmid: 103, action: 'noop' },
  ],
  objects: [
    {
      kind: 'pool',
      key: 'lab/pool/web',
      cluster: 'lab',
      name: 'web',
      action: 'create',
      operations: [{ op: 'create-pool', poolid: 'web' }],
      payload: { poolid: 'web' },
      source: { file: 'pools.yaml', line: 3, col: 1 },
    },
    {
      kind: 'ha',
      key: 'lab/ha/100',
      cluster: 'lab',
      name: 'vm-0',
      action: 'update',
      operations: [{ op: 'update-ha' }],
      payload: { vmid: 100, sid: 'vm:100' },
      liveWithheld: true,
    },
    { kind: 'pool', key: 'lab/pool/db', cluster: 'lab', name: 'db', action: 'noop', operations: [], payload: { poolid: 'db' } },
  ],
} as unknown as Plan;

const CONTEXT = { skipped: {}, requests: 6, ms: 12 };

describe('rehearsalOf', () => {
  it('counts the objects the apply touches beside the guests, naming a refused object by its kind’s label and operation', () => {
    const rehearsal = rehearsalOf(
      PLAN,
      {
        ...result([{}, {}, { status: 'skipped' }, { status: 'unchanged' }]),
        objects: [
          { kind: 'pool', key: 'lab/pool/web', cluster: 'lab', name: 'web', status: 'applied', steps: [{ op: 'create-pool' }] },
          {
            kind: 'ha',
            key: 'lab/ha/100',
            cluster: 'lab',
            name: 'vm-0',
            status: 'failed',
            steps: [],
            error: "service 'vm:100' in error state",
          },
          { kind: 'pool', key: 'lab/pool/db', cluster: 'lab', name: 'db', status: 'unchanged', steps: [] },
        ],
      },
      CONTEXT,
    );
    // Guest 103 has no change: it is not counted, nor is the pool db.
    expect(rehearsalHeadline(rehearsal)).toBe('Rehearsal: 2 of 2 guests and 1 of 2 other objects applied on a simulated copy');
    expect(objectRefusals(rehearsal).map((o) => [o.label, o.step, o.error])).toEqual([
      ['HA resource of vm-0 (vm:100)', 'update-ha', "service 'vm:100' in error state"],
    ]);
    expect(rehearsal.objects?.[0]?.source).toEqual({ file: 'pools.yaml', line: 3, col: 1 });
    expect(renderRehearsalText(rehearsal)).toContain(
      "✗ lab/HA resource of vm-0 (vm:100): update-ha refused — service 'vm:100' in error state",
    );
    expect(renderRehearsalMarkdown(rehearsal)).toContain(
      "| lab/HA resource of vm-0 (vm:100) | update-ha | `service 'vm:100' in error state` |",
    );
    expect(objectRefusals(withholdRehearsalLive(rehearsal, PLAN))[0]?.error).not.toContain('error state');
  });

  it('counts applied and unchanged guests as applied, leaves untouched ones out, and names the refused step and error', () => {
    const rehearsal = rehearsalOf(
      PLAN,
      result([
        { status: 'unchanged' },
        {
          status: 'failed',
          error: "storage 'local' does not support vm images",
          steps: [
            { op: 'wait-lock', detail: 'locked' },
            { op: 'config', detail: 'set scsi1: failed' },
          ],
        },
        { status: 'skipped' },
      ]),
      CONTEXT,
    );
    expect(rehearsal.guests.map((g) => [g.vmid, g.status, g.step, g.error])).toEqual([
      [100, 'applied', undefined, undefined],
      [101, 'refused', 'set scsi1', "storage 'local' does not support vm images"],
    ]);
    expect(rehearsal.guests[1]?.source).toEqual({ file: 'b.yaml', line: 4, col: 1 });
    expect(rehearsalHeadline(rehearsal)).toBe('Rehearsal: 1 of 2 guests applied on a simulated copy');
    expect(renderRehearsalText(rehearsal)).toContain("lab/vm-1 (101): set scsi1 refused — storage 'local' does not support vm images");
    expect(renderRehearsalMarkdown(rehearsal)).toContain("`storage 'local' does not support vm images`");
  });

  it('withholds the error text of a guest the base branch does not own, keeping the step', () => {
    const rehearsal = rehearsalOf(PLAN, result([{}, { status: 'failed', error: 'secret value x', steps: [{ op: 'start' }] }]), CONTEXT);
    const shown = withholdRehearsalLive(rehearsal, PLAN);
    expect(refusals(shown).map((g) => [g.step, g.error?.includes('secret')])).toEqual([['start', false]]);
    expect(refusals(rehearsal)[0]?.error).toBe('secret value x');
  });
});
