import { describe, expect, it } from 'vitest';
import { countApplyResult, type ApplyResult, type GuestApplyResult } from '../apply-result.js';
import { APPLY_MARKER, applyVerdict, formatMs, type GuestInProgress, renderApplyMarkdown, renderApplyText } from './render-apply.js';

function guest(overrides: Partial<GuestApplyResult> = {}): GuestApplyResult {
  return {
    cluster: 'lab',
    name: 'app-01',
    vmid: 100101,
    node: 'pve-01',
    status: 'applied',
    steps: [{ op: 'config', detail: 'set memory', ms: 120 }],
    ...overrides,
  };
}

function result(guests: GuestApplyResult[], overrides: Partial<ApplyResult> = {}): ApplyResult {
  return {
    version: 1,
    startedAt: '2025-01-01T00:00:00.000Z',
    finishedAt: '2025-01-01T00:00:12.500Z',
    ref: 'abc1234',
    guests,
    ...overrides,
  };
}

const UPID = 'UPID:pve-01:0000A1B2:0001C3D4:65A1B2C3:qmstart:100101:root@pam!gitops:';

function renderedGuests(markdown: string): string[] {
  return [...markdown.matchAll(/^\S+ \*\*(\w+)\*\* · \*\*(.+?)\*\*/gm)].map((m) => `${m[1]} ${(m[2] ?? '').replace(/\\/g, '')}`);
}

describe('apply summary', () => {
  it.each([
    [[], 'Nothing to apply'],
    [[guest({ status: 'unchanged' }), guest({ status: 'unchanged' })], '2 unchanged'],
    [
      [guest(), guest({ status: 'conflict' }), guest({ status: 'failed' }), guest({ status: 'skipped' }), guest({ status: 'unchanged' })],
      '1 applied, 1 conflict, 1 failed, 1 skipped, 1 unchanged',
    ],
    [[guest({ status: 'conflict' }), guest({ status: 'conflict' })], '2 conflicts'],
  ])('verdict %#', (guests, verdict) => {
    expect(applyVerdict(countApplyResult(guests))).toBe(verdict);
    expect(renderApplyMarkdown(result(guests))).toContain(`**${verdict}**`);
  });

  it('has one row per cluster and a total', () => {
    const md = renderApplyMarkdown(
      result([
        guest({ cluster: 'lab' }),
        guest({ cluster: 'lab', status: 'unchanged' }),
        guest({ cluster: 'prod', status: 'failed', error: 'boom' }),
        guest({ cluster: 'prod', status: 'conflict' }),
      ]),
    );
    expect(md).toContain('| Cluster | Applied | Unchanged | Conflict | Failed | Skipped |');
    expect(md).toContain('| lab | 1 | 1 | 0 | 0 | 0 |');
    expect(md).toContain('| prod | 0 | 0 | 1 | 1 | 0 |');
    expect(md).toContain('| **Total** | 1 | 1 | 1 | 1 | 0 |');
    expect(md).toContain('took 12.5 s');
  });
});

describe('renderApplyMarkdown', () => {
  it('lists failures, then conflicts, then skipped, then applied; unchanged only counted', () => {
    const md = renderApplyMarkdown(
      result([
        guest({ name: 'ok' }),
        guest({ name: 'same', status: 'unchanged' }),
        guest({ name: 'moved', status: 'conflict' }),
        guest({ name: 'broke', status: 'failed', error: 'VM is locked (backup)' }),
        guest({ name: 'later', status: 'skipped' }),
      ]),
      { marker: APPLY_MARKER },
    );
    expect(md.startsWith(`${APPLY_MARKER}\n`)).toBe(true);
    expect(renderedGuests(md)).toEqual(['failed lab/broke', 'conflict lab/moved', 'skipped lab/later', 'applied lab/ok']);
    expect(md).not.toContain('lab/same');
    expect(md).toContain('> VM is locked (backup)');
  });

  it('shows what moved after review and hides secrets', () => {
    const md = renderApplyMarkdown(
      result([
        guest({
          status: 'conflict',
          steps: [],
          conflict: [
            { key: 'memory', reviewed: { from: '2048', to: '4096' }, now: { from: '3072', to: '4096' } },
            { key: 'cores', now: { from: '2', to: '4' } },
            { key: 'cipassword', reviewed: { from: 'pw-old', to: 'pw-new' }, now: { from: 'pw-other', to: 'pw-new' } },
          ],
        }),
      ]),
    );
    expect(md).toContain('Nothing was written for 1 guest in conflict');
    expect(md).toContain('| key | reviewed change | change now |');
    expect(md).toContain('| `memory` | `2048` → `4096` | `3072` → `4096` |');
    expect(md).toContain('| `cores` | *(no change)* | `2` → `4` |');
    expect(md).toContain('| `cipassword` | *(sensitive)* → *(sensitive)* | *(sensitive)* → *(sensitive)* |');
    expect(md).not.toMatch(/pw-/);
  });

  it('shows steps with task ids, exit statuses and times in a folded block', () => {
    const md = renderApplyMarkdown(
      result([
        guest({
          steps: [
            { op: 'config', detail: 'set memory, cores', ms: 85 },
            { op: 'start', upid: UPID, exitStatus: 'WARNINGS: 1', ms: 2_340 },
          ],
        }),
      ]),
    );
    expect(md).toContain('<details><summary>2 steps · 1 task</summary>');
    expect(md).toContain('| 1 | `config` | set memory, cores |  |  | 85 ms |');
    expect(md).toContain(`| 2 | \`start\` |  | \`${UPID}\` | WARNINGS: 1 | 2.3 s |`);
  });

  it('keeps 10,000 results under the limit and says how many were folded', () => {
    const guests = Array.from({ length: 10_000 }, (_v, i) =>
      guest({
        cluster: `c${i % 4}`,
        name: `guest-${i}`,
        vmid: 100_000 + i,
        status: i % 5 === 0 ? 'failed' : 'applied',
        error: i % 5 === 0 ? `task failed: ${'x'.repeat(400)}` : undefined,
        steps: [
          { op: 'config', detail: 'set memory', ms: 90 },
          { op: 'start', upid: UPID, ms: 1_500 },
        ],
      }),
    );
    const md = renderApplyMarkdown(result(guests), { detailsUrl: 'https://github.com/o/r/runs/2' });
    expect(md.length).toBeLessThanOrEqual(65_000);
    const shown = renderedGuests(md);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.every((line) => line.startsWith('failed'))).toBe(true);
    expect(md).toContain(`**${10_000 - shown.length} guests' details omitted**`);
    expect(md).toContain('| **Total** | 8000 | 0 | 0 | 2000 | 0 |');
    expect(md.split('\n').filter((line) => line.startsWith('<details>')).length).toBe(
      md.split('\n').filter((line) => line === '</details>').length,
    );
  });

  it('folds nothing for a small result', () => {
    const md = renderApplyMarkdown(result([guest(), guest({ name: 'b', status: 'failed', error: 'x' })]));
    expect(renderedGuests(md)).toHaveLength(2);
    expect(md).not.toContain('omitted');
  });
});

describe('renderApplyText', () => {
  it('prints each guest with its steps and a final total', () => {
    const text = renderApplyText(
      result([
        guest({ steps: [{ op: 'start', upid: UPID, ms: 1_200 }] }),
        guest({ name: 'same', status: 'unchanged', steps: [] }),
        guest({
          name: 'moved',
          status: 'conflict',
          steps: [],
          conflict: [{ key: 'memory', reviewed: { from: '1', to: '2' }, now: { from: '3', to: '2' } }],
        }),
        guest({ name: 'broke', status: 'failed', steps: [], error: 'VM is locked (backup)' }),
      ]),
    );
    const out = text.split('\n');
    expect(out[0]).toBe('Apply of abc1234: started 2025-01-01T00:00:00.000Z, finished 2025-01-01T00:00:12.500Z (12.5 s)');
    expect(out).toContain('failed    lab/broke (100101) on pve-01');
    expect(out).toContain('    error: VM is locked (backup)');
    expect(out).toContain('    moved: memory: reviewed 1 → 2, now 3 → 2');
    expect(out).toContain(`    start ${UPID} (1.2 s)`);
    expect(out).toContain('unchanged lab/same (100101) on pve-01');
    expect(out.at(-2)).toBe('Apply: 1 applied, 1 unchanged, 1 conflict, 1 failed, 0 skipped.');
    expect(text).not.toContain('\u001b[');
    expect(renderApplyText(result([guest({ status: 'failed' })]), { color: true })).toContain('\u001b[31;1m');
  });
});

describe('formatMs', () => {
  it.each([
    [0, '0 ms'],
    [999, '999 ms'],
    [1_000, '1.0 s'],
    [59_949, '59.9 s'],
    [245_000, '4 min 5 s'],
    [59_960, '1 min 0 s'],
  ])('%i ms → %s', (ms, text) => {
    expect(formatMs(ms)).toBe(text);
  });
});

describe('an apply in progress', () => {
  const waiting: GuestInProgress[] = [
    { cluster: 'lab', name: 'db-01', vmid: 100102, node: 'pve-02', state: 'waiting', reason: 'locked (backup)', steps: [] },
    { cluster: 'lab', name: 'cache', vmid: 100103, node: 'pve-01', state: 'queued' },
    { cluster: 'prod', name: 'web', vmid: 200101, node: 'pve-11', state: 'running', steps: [{ op: 'config', detail: 'set memory' }] },
  ];

  it('says what is still going on first, with an In progress column, and no finish time', () => {
    const md = renderApplyMarkdown(result([guest()]), { marker: APPLY_MARKER, inProgress: waiting });
    expect(md).toContain('**⏳ 3 guests in progress · so far 1 applied**');
    expect(md).toContain('started 2025-01-01T00:00:00.000Z · in progress');
    expect(md).not.toContain('finished');
    expect(md).toContain('| Cluster | Applied | Unchanged | Conflict | Failed | Skipped | In progress |');
    expect(md).toContain('| lab | 1 | 0 | 0 | 0 | 0 | 2 |');
    expect(md).toContain('| prod | 0 | 0 | 0 | 0 | 0 | 1 |');
    const section = md.slice(md.indexOf('### In progress'), md.indexOf('### Guests'));
    expect(section.split('\n').filter((line) => line.startsWith('- '))).toEqual([
      '- 🕓 **queued** · **lab/cache** (100103) on pve-01',
      '- ⏳ **waiting** · **lab/db-01** (100102) on pve-02 — locked (backup)',
      '- 🔄 **running** · **prod/web** (200101) on pve-11 · 1 step done',
    ]);
    expect(md.indexOf('### In progress')).toBeLessThan(md.indexOf('### Guests'));
  });

  it('without guests in progress renders exactly as a finished apply', () => {
    const finished = result([guest(), guest({ name: 'b', status: 'conflict' })]);
    expect(renderApplyMarkdown(finished, { inProgress: [] })).toBe(renderApplyMarkdown(finished));
  });

  it('stays under the size limit with thousands of guests in progress', () => {
    const many: GuestInProgress[] = Array.from({ length: 5000 }, (_, i) => ({
      cluster: 'lab',
      name: `guest-${i}`,
      vmid: 100000 + i,
      node: 'pve-01',
      state: 'queued',
    }));
    const md = renderApplyMarkdown(result([]), { inProgress: many });
    expect(md.length).toBeLessThanOrEqual(65_000);
    expect(md).toContain('**⏳ 5000 guests in progress**');
    expect(md).toMatch(/omitted\*\* to stay under GitHub's comment size limit/);
  });
});
