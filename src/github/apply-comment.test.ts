import { describe, expect, it } from 'vitest';
import type { GuestApplyResult } from '../core/apply-result.js';
import { type ApplyRunView, applyCheckResult, renderApplyComment, renderApplyNotice } from './apply-comment.js';

const HEAD = 'a'.repeat(40);
const MERGE = 'b'.repeat(40);

function guest(overrides: Partial<GuestApplyResult> = {}): GuestApplyResult {
  return { cluster: 'lab', name: 'app-01', vmid: 100101, node: 'pve-01', status: 'applied', steps: [], ...overrides };
}

function view(overrides: Partial<ApplyRunView> = {}): ApplyRunView {
  return {
    pr: 12,
    headSha: HEAD,
    mergeSha: MERGE,
    trigger: 'merge',
    startedAt: '2030-01-01T00:00:00.000Z',
    finishedAt: '2030-01-01T00:00:03.000Z',
    finished: [guest()],
    inProgress: [],
    ...overrides,
  };
}

describe('the apply comment', () => {
  it('says which merge applies which reviewed plan, under the heading', () => {
    const body = renderApplyComment(view());
    expect(body.split('\n').slice(0, 5)).toEqual([
      '<!-- pve-gitops:apply -->',
      '### pve-gitops apply',
      '',
      'Merged as `bbbbbbb`: applying the plan reviewed for `aaaaaaa`.',
      '',
    ]);
    const command = renderApplyComment(view({ trigger: 'command', requestedBy: 'alice' }));
    expect(command).toContain('`/pve apply` by alice: applying the plan reviewed for `aaaaaaa` (merged as `bbbbbbb`).');
  });

  it('says to comment /pve apply once the run is over with failed guests, not while it runs', () => {
    const failed = guest({ status: 'failed', error: 'cluster unreachable', retryable: true });
    expect(renderApplyComment(view({ finished: [failed] }))).toContain('comment `/pve apply` to run the apply again');
    const running = view({
      finished: [failed],
      inProgress: [{ cluster: 'lab', name: 'b', vmid: 100102, node: 'pve-01', state: 'queued' }],
    });
    expect(renderApplyComment(running)).not.toContain('to run the apply again');
  });
});

describe('the apply check run', () => {
  it.each([
    [[guest(), guest({ status: 'unchanged' })], 'success', '1 applied, 1 unchanged'],
    [[guest(), guest({ status: 'conflict', conflict: [{ key: 'memory' }] })], 'failure', '1 applied, 1 conflict'],
    [[guest({ status: 'failed', error: 'boom' })], 'failure', '1 failed'],
  ] as const)('concludes %#', (finished, conclusion, title) => {
    expect(applyCheckResult(view({ finished: [...finished] }))).toMatchObject({ complete: true, conclusion, title });
  });

  it('is not complete while guests are in progress, and lists what went wrong', () => {
    const result = applyCheckResult(
      view({
        finished: [guest({ status: 'conflict', conflict: [{ key: 'memory' }, { key: 'cores' }] })],
        inProgress: [{ cluster: 'lab', name: 'b', vmid: 100102, node: 'pve-01', state: 'waiting', reason: 'locked (backup)' }],
      }),
    );
    expect(result).toMatchObject({ complete: false, title: 'Applying: 1 of 2 guests done' });
    expect(result.summary).toContain('| In progress | 1 |');
    expect(result.summary).toContain('conflict · **lab/app-01** (100101): changed after review: memory, cores');
  });
});

describe('notices: merges that apply nothing', () => {
  it.each([
    [{ kind: 'no-plan' as const }, 'neutral', /no reviewed plan was stored for `aaaaaaa`/],
    [{ kind: 'plan-errors' as const, errors: ['lab/x: VMID 100 is taken'] }, 'failure', /a plan with errors is never applied/],
    [{ kind: 'invalid-specs' as const, errors: ['vms/x.yaml:3:5: memory must be an integer'] }, 'failure', /do not pass validation/],
    [{ kind: 'no-changes' as const }, 'success', /changes no guest/],
  ])('%o', (notice, conclusion, text) => {
    const { body, check } = renderApplyNotice({ pr: 12, headSha: HEAD, mergeSha: MERGE, ...notice } as Parameters<
      typeof renderApplyNotice
    >[0]);
    expect(body.startsWith('<!-- pve-gitops:apply -->\n### pve-gitops apply\n')).toBe(true);
    expect(body).toMatch(text);
    expect(check.conclusion).toBe(conclusion);
  });
});

describe('a run with items of other kinds', () => {
  const pool = { kind: 'pool', key: 'lab/pool/web', cluster: 'lab', name: 'web' };
  const member = { kind: 'pool-member', key: 'lab/pool-member/100101', cluster: 'lab', name: 'app-01' };

  it('is not complete while an item is still going, and counts items, not guests', () => {
    const going = view({
      objects: [{ ...pool, status: 'applied', steps: [{ op: 'create-pool' }] }],
      objectsInProgress: [
        { ...member, state: 'waiting', reason: 'waiting for the items this apply changes first (an earlier phase) to finish' },
      ],
    });
    const check = applyCheckResult(going);
    expect(check).toMatchObject({ complete: false, conclusion: 'neutral', title: 'Applying: 2 of 3 items done' });
    const body = renderApplyComment(going);
    // The head says the apply is still going, so nobody reads it as finished.
    expect(body).toContain('**⏳ 1 item in progress · so far 2 applied**');
    expect(body).toContain('- ⏳ **waiting** · pool-member **lab/app-01** — waiting for the items this apply changes first');
    expect(body).toContain('**lab: pool web**');
  });

  it('fails the check run for a failed item and lists it, and says held items apart from failures', () => {
    const done = view({
      objects: [
        { ...pool, status: 'failed', steps: [], error: 'Proxmox refused: permission denied' },
        { ...member, status: 'skipped', steps: [], error: 'held: lab/100101 it follows ended failed', retryable: true },
      ],
      objectsInProgress: [],
    });
    const check = applyCheckResult(done);
    expect(check).toMatchObject({ complete: true, conclusion: 'failure' });
    expect(check.summary).toContain('failed · pool **lab/web**: Proxmox refused: permission denied');
    expect(check.summary).not.toContain('pool-member **lab/app-01**');
    expect(renderApplyComment(done)).toContain('**1 item could not be applied.**');
  });
});
