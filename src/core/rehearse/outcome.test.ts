/**
 * The rehearsal's outcome read from an apply result: applied and unchanged guests count as
 * applied, a failed one is refused with its failing step and Proxmox's error, untouched guests are
 * left out, and a pull request never sees the error text of a guest whose live values it withholds.
 */
import { describe, expect, it } from 'vitest';
import type { ApplyResult, GuestApplyResult } from '../apply-result.js';
import type { Plan } from '../model.js';
import { refusals, rehearsalHeadline, rehearsalOf, withholdRehearsalLive } from './outcome.js';
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
    { cluster: 'lab', vmid: 100, source: { file: 'a.yaml', line: 1, col: 1 } },
    { cluster: 'lab', vmid: 101, source: { file: 'b.yaml', line: 4, col: 1 }, liveWithheld: true },
    { cluster: 'lab', vmid: 102 },
  ],
} as unknown as Plan;

const CONTEXT = { skipped: {}, requests: 6, ms: 12 };

describe('rehearsalOf', () => {
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
