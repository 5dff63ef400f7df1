import { describe, expect, it } from 'vitest';
import { makeGuestPlan, makePlan as plan } from '../../../test/helpers/factories.js';
import type { GuestPlan, Plan, Severity } from '../model.js';
import { countPlan, planVerdict } from './plan-counts.js';
import { PLAN_MARKER, renderPlanMarkdown } from './render-markdown.js';

const SEVERITY_RANK: Record<Severity, number> = { 'read-only': 0, configuration: 1, 'service-impact': 2, 'data-loss': 3, 'host-access': 4 };

/** A large estate where every guest changes: destroys, creates with many keys, updates with drift and pending. */
function bigPlan(count: number): Plan {
  const guests: GuestPlan[] = [];
  for (let i = 0; i < count; i += 1) {
    const cluster = `c${i % 3}`;
    const name = `guest-${String(i).padStart(5, '0')}`;
    const vmid = 100_000 + i;
    if (i % 10 === 0) {
      guests.push(
        guest({
          cluster,
          name,
          vmid,
          action: 'destroy',
          severity: 'data-loss',
          changes: [],
          operations: [{ op: 'stop' }, { op: 'destroy' }],
        }),
      );
    } else if (i % 3 === 0) {
      guests.push(
        guest({
          cluster,
          name,
          vmid,
          vmidDerived: true,
          action: 'create',
          severity: 'service-impact',
          changes: ['memory', 'cores', 'net0', 'scsi0', 'cipassword'].map((key) => ({ key, to: `${key}-value`, impact: 'live' as const })),
          operations: [{ op: 'create', node: 'pve-01', params: {} }, { op: 'start' }],
        }),
      );
    } else {
      guests.push(
        guest({
          cluster,
          name,
          vmid,
          changes: [{ key: 'description', from: 'x'.repeat(300), to: 'y'.repeat(300), impact: 'live' }],
          drift: [{ key: 'cores', expected: '2', actual: '4' }],
          pending: [{ key: 'memory', current: '1024', pending: '2048' }],
        }),
      );
    }
  }
  return plan(guests);
}

/** Headings of rendered guest sections: `🟡 **update** · **lab/name** (vmid)`. */
function renderedGuests(markdown: string): { action: string; ref: string; vmid: number }[] {
  const re = /^\S+ \*\*([\w-]+)\*\* · \*\*(.+?)\*\* \((\d+)\)/gm;
  return [...markdown.matchAll(re)].map((m) => ({ action: m[1] ?? '', ref: (m[2] ?? '').replace(/\\/g, ''), vmid: Number(m[3]) }));
}

function omittedCount(markdown: string): number {
  const match = /\*\*(\d+) guests?'s? details omitted\*\*/.exec(markdown);
  return match === null ? 0 : Number(match[1]);
}

/** A guest plan with one live memory change unless overridden. */
function guest(overrides: Partial<GuestPlan> = {}): GuestPlan {
  return makeGuestPlan({ changes: [{ key: 'memory', from: '2048', to: '4096', impact: 'live' }], ...overrides });
}

describe('summary table and verdict', () => {
  it.each([
    [[], 'No changes'],
    [[guest({ action: 'noop' })], 'No changes'],
    [[guest({ action: 'orphan', severity: 'read-only' })], 'No changes, 1 orphan'],
    [
      [
        guest({ action: 'create' }),
        guest({ action: 'create' }),
        guest({ action: 'create' }),
        guest(),
        guest(),
        guest({ action: 'destroy' }),
        guest({ action: 'error' }),
      ],
      '3 to create, 2 to update, 1 to destroy, 1 error',
    ],
  ])('verdict for %#', (guests, verdict) => {
    const p = plan(guests);
    expect(planVerdict(countPlan(p).total)).toBe(verdict);
    expect(renderPlanMarkdown(p)).toContain(`**${verdict}**`);
  });

  it('has one row per cluster with counts per action, drift and pending, and a total', () => {
    const p = plan(
      [
        guest({ cluster: 'lab', action: 'create' }),
        guest({ cluster: 'lab', action: 'noop', pending: [{ key: 'cores', current: '1', pending: '2' }] }),
        guest({ cluster: 'lab', drift: [{ key: 'cores', expected: '1', actual: '2' }] }),
        guest({ cluster: 'prod', action: 'destroy', severity: 'data-loss' }),
        guest({ cluster: 'prod', action: 'orphan' }),
        guest({ cluster: 'prod', action: 'error', errors: ['collision'] }),
      ],
      { clusters: ['lab', 'prod', 'empty'], errors: [{ cluster: 'empty', message: 'listing is empty' }, { message: 'no cluster' }] },
    );
    const md = renderPlanMarkdown(p);
    expect(md).toContain('| Cluster | Create | Update | Destroy | No-op | Orphan | Error | Drift | Pending |');
    expect(md).toContain('| lab | 1 | 1 | 0 | 1 | 0 | 0 | 1 | 1 |');
    expect(md).toContain('| prod | 0 | 0 | 1 | 0 | 1 | 1 | 0 | 0 |');
    expect(md).toContain('| empty | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 0 |');
    expect(md).toContain('| **Total** | 1 | 1 | 1 | 1 | 1 | 3 | 1 | 1 |');
  });

  it('leaves the total out for a single cluster without global errors', () => {
    const md = renderPlanMarkdown(plan([guest()]));
    expect(md).toContain('| lab | 0 | 1 |');
    expect(md).not.toContain('**Total**');
  });
});

describe('layout', () => {
  it('puts the marker first, then the title and verdict', () => {
    const md = renderPlanMarkdown(plan([guest()]), { marker: PLAN_MARKER, title: 'Plan for `abc`' });
    expect(md.startsWith(`${PLAN_MARKER}\n### Plan for \\\`abc\\\`\n\n**1 to update**\n`)).toBe(true);
  });

  it('lists plan-level errors before guest errors, above the guest details', () => {
    const md = renderPlanMarkdown(
      plan([guest({ name: 'a-guest', action: 'error', errors: ['VMID 100101 exists without the owner tag'] })], {
        errors: [{ cluster: 'lab', message: 'cluster listing is empty' }],
      }),
    );
    const planError = md.indexOf('- **lab**: cluster listing is empty');
    const guestError = md.indexOf('- **lab/a-guest** (100101): VMID 100101 exists without the owner tag');
    expect(planError).toBeGreaterThan(md.indexOf('| Cluster |'));
    expect(guestError).toBeGreaterThan(planError);
    expect(md.indexOf('### Changes')).toBeGreaterThan(guestError);
  });

  it('orders details by severity, data-loss first, then cluster/name; no-op guests only counted', () => {
    const md = renderPlanMarkdown(
      plan([
        guest({ cluster: 'b', name: 'z', vmid: 1 }),
        guest({ cluster: 'a', name: 'y', vmid: 2, action: 'noop', changes: [] }),
        guest({ cluster: 'b', name: 'a', vmid: 3, action: 'destroy', severity: 'data-loss' }),
        guest({ cluster: 'a', name: 'x', vmid: 4 }),
        guest({ cluster: 'a', name: 'w', vmid: 5, severity: 'service-impact', impact: 'needs-stop' }),
        guest({ cluster: 'c', name: 'e', vmid: 6, action: 'error', severity: 'read-only', errors: ['locked'] }),
      ]),
    );
    expect(renderedGuests(md).map((g) => g.ref)).toEqual(['c/e', 'b/a', 'a/w', 'a/x', 'b/z']);
    expect(md).not.toContain('a/y');
    expect(md).toContain('_1 guest unchanged (no-op), not listed._');
  });

  it.each([
    [{ impact: 'live' as const }, '· live'],
    [{ impact: 'pending-restart' as const }, '· pending restart'],
    [{ impact: 'needs-stop' as const }, '· needs stop'],
    [{ action: 'destroy' as const, severity: 'data-loss' as const }, '· **DATA-LOSS RISK**'],
  ])('labels impact in the heading (%j)', (overrides, label) => {
    const md = renderPlanMarkdown(plan([guest(overrides)]));
    const heading = md.split('\n').find((line) => line.includes('**lab/app-01**'));
    expect(heading).toContain(label);
  });

  it('shows key changes as a table inside a folded details block', () => {
    const md = renderPlanMarkdown(
      plan([
        guest({
          changes: [
            { key: 'memory', from: '2048', to: '4096', impact: 'live' },
            { key: 'description', from: 'old', impact: 'pending-restart' },
            { key: 'net1', to: 'virtio,bridge=vmbr1', impact: 'needs-stop' },
          ],
        }),
      ]),
    );
    const details = md.slice(md.indexOf('<details>'), md.indexOf('</details>'));
    expect(details).toContain('| key | current | desired | impact |');
    expect(details).toContain('| `memory` | `2048` | `4096` | live |');
    expect(details).toContain('| `description` | `old` | *(deleted)* | pending restart |');
    expect(details).toContain('| `net1` | *(unset)* | `virtio,bridge=vmbr1` | needs stop |');
  });

  it('shows operations, drift, pending, warnings and the derived-VMID note', () => {
    const md = renderPlanMarkdown(
      plan([
        guest({
          vmid: 123456,
          vmidDerived: true,
          operations: [
            { op: 'config', set: { memory: '4096' }, delete: [], from: { memory: '2048' } },
            { op: 'resize', disk: 'scsi0', size: '64G', from: '32G' },
            { op: 'move-disk', disk: 'scsi1', storage: 'ceph', from: 'local-lvm' },
            { op: 'shutdown' },
            { op: 'start' },
          ],
          drift: [{ key: 'cores', expected: '2', actual: '4' }],
          pending: [
            { key: 'sockets', current: '1', pending: '2' },
            { key: 'agent', current: '1', delete: true },
          ],
          warnings: ['guest is running an old machine type'],
        }),
      ]),
    );
    expect(md).toContain('1. resize `scsi0` from `32G` to `64G`');
    expect(md).toContain('2. move `scsi1` from storage `local-lvm` to `ceph`');
    expect(md).toContain('3. shut down (clean)\n4. start');
    expect(md).toContain('changed outside git** — merging reverts it unless the PR takes the live value');
    expect(md).toContain('| `cores` | `2` | `4` |');
    expect(md).toContain('accepted but not in effect until restart');
    expect(md).toContain('| `sockets` | `1` | `2` |');
    expect(md).toContain('| `agent` | `1` | *(delete)* |');
    expect(md).toContain('- guest is running an old machine type');
    expect(md).toContain('derived VMID 123456 — pin it with `vmid: 123456`');
    expect(md).toMatch(/^🟡 \*\*update\*\* .* · ⚠️ drift · ⏳ pending$/m);
  });
});

describe('values', () => {
  it.each([
    ['cipassword', 'hunter2'],
    ['sshkeys', 'ssh-ed25519%20AAAAC3Nza'],
    ['api_token', 'tok-123'],
    ['MySecretThing', 'shh'],
    ['rootPassword', 'pw-1'],
  ])('hides the value of %s everywhere', (key, value) => {
    const md = renderPlanMarkdown(
      plan([
        guest({
          changes: [{ key, from: `${value}-old`, to: value, impact: 'live' }],
          drift: [{ key, expected: `${value}-spec`, actual: `${value}-live` }],
          pending: [{ key, current: `${value}-now`, pending: `${value}-next` }],
        }),
      ]),
    );
    expect(md).not.toContain(value);
    expect(md).toContain(`| \`${key}\` | *(sensitive)* | *(sensitive)* | live |`);
  });

  it('keeps hostile values inside their table cell and their details block', () => {
    const hostile = 'a|b `c` </details><details><summary>x</summary>\n| evil | row |';
    const md = renderPlanMarkdown(plan([guest({ changes: [{ key: 'description', from: hostile, to: 'ok', impact: 'live' }] })]));
    const row = md.split('\n').find((line) => line.startsWith('| `description`')) ?? '';
    // Cells split on pipes that are not backslash-escaped, as GitHub's table extension does.
    const cells = row.split(/(?<!\\)\|/).slice(1, -1);
    expect(cells).toHaveLength(4);
    expect(md.split('\n').filter((line) => line === '</details>')).toHaveLength(1);
    expect(md).not.toMatch(/^\| evil/m);
  });

  it('shortens long values and says they were cut and how long they are', () => {
    const md = renderPlanMarkdown(plan([guest({ changes: [{ key: 'description', from: 'x'.repeat(5_000), to: 'ok', impact: 'live' }] })]));
    expect(md).toContain(`\`${'x'.repeat(119)}… (cut: 5,000 characters in all)\``);
    expect(md).not.toContain('x'.repeat(120));
  });

  it('never cuts the value of a key that reaches the host', () => {
    const args = `-fw_cfg name=opt/x,string=${'A'.repeat(300)} -device vfio-pci,host=0000:01:00.0`;
    const md = renderPlanMarkdown(plan([guest({ changes: [{ key: 'args', to: args, impact: 'needs-stop', severity: 'host-access' }] })]));
    expect(md).toContain(args);
    expect(md).not.toContain('(cut:');
  });

  it('shows control characters and bidirectional overrides in values, names and messages as escapes', () => {
    const md = renderPlanMarkdown(
      plan([
        guest({
          name: 'web\u202e10-bew',
          changes: [{ key: 'description', from: 'ok', to: 'rm -rf /\u202e#tpircs_efas\u001b[2J', impact: 'live' }],
          warnings: ['note\u2066hidden\u2069'],
        }),
      ]),
    );
    expect(md).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u202a-\u202e\u2066-\u2069]/);
    expect(md).toContain('rm -rf /\\u202e#tpircs_efas\\x1b[2J');
    expect(md).toContain('web\\\\u202e10-bew');
    expect(md).toContain('note\\\\u2066hidden\\\\u2069');
  });
});

describe('size', () => {
  it('keeps a 10,000-guest plan under the limit and says how many guests were folded', () => {
    const p = bigPlan(10_000);
    const md = renderPlanMarkdown(p, { marker: PLAN_MARKER, detailsUrl: 'https://github.com/o/r/runs/1' });
    expect(md.length).toBeLessThanOrEqual(65_000);
    const shown = renderedGuests(md);
    expect(shown.length).toBeGreaterThan(0);
    expect(omittedCount(md)).toBe(10_000 - shown.length);
    expect(md).toContain('`pve-gitops plan --format json`');
    expect(md).toContain('[full plan](https://github.com/o/r/runs/1)');
    // The summary table is whole: every cluster and the total of all 10,000 guests.
    expect(md).toContain('| **Total** | 3000 | 6000 | 1000 | 0 | 0 | 0 | 6000 | 6000 |');
    for (const cluster of ['c0', 'c1', 'c2']) expect(md).toMatch(new RegExp(`^\\| ${cluster} \\|`, 'm'));
  });

  it('folds the least severe guests first', () => {
    const p = bigPlan(10_000);
    const md = renderPlanMarkdown(p);
    const shownIds = new Set(renderedGuests(md).map((g) => g.vmid));
    const shownMin = Math.min(...p.guests.filter((g) => shownIds.has(g.vmid)).map((g) => SEVERITY_RANK[g.severity]));
    const omittedMax = Math.max(...p.guests.filter((g) => !shownIds.has(g.vmid)).map((g) => SEVERITY_RANK[g.severity]));
    expect(shownMin).toBeGreaterThanOrEqual(omittedMax);
    expect(renderedGuests(md).every((g) => g.action === 'destroy')).toBe(true);
  });

  it.each([1_000, 2_500, 10_000, 30_000, 65_000, 65_535])('never cuts a details block or a table at maxChars %i', (maxChars) => {
    const md = renderPlanMarkdown(bigPlan(2_000), { maxChars });
    expect(md.length).toBeLessThanOrEqual(maxChars);
    const opened = md.split('\n').filter((line) => line.startsWith('<details>')).length;
    expect(md.split('\n').filter((line) => line === '</details>')).toHaveLength(opened);
    expect(renderedGuests(md)).toHaveLength(opened);
    expect(omittedCount(md)).toBe(2_000 - opened);
    // Every table row is complete: as many cells as its header.
    const lines = md.split('\n');
    lines.forEach((line, i) => {
      if (!line.startsWith('|') || !lines[i + 1]?.startsWith('| ---')) return;
      const width = line.split('|').length;
      for (let j = i + 2; lines[j]?.startsWith('|'); j += 1) expect(lines[j]?.split(/(?<!\\)\|/).length).toBe(width);
    });
  });

  it('keeps 10,000 guest errors under the limit and still shows details', () => {
    const guests = Array.from({ length: 10_000 }, (_v, i) =>
      guest({ name: `g${i}`, vmid: 100_000 + i, action: 'error', errors: [`VMID ${100_000 + i} exists without the owner tag`] }),
    );
    const md = renderPlanMarkdown(plan(guests, { errors: [{ cluster: 'lab', message: 'something global' }] }));
    expect(md.length).toBeLessThanOrEqual(65_000);
    expect(md).toContain('- **lab**: something global');
    expect(md).toMatch(/- _…and \d+ more errors: see the full plan/);
    expect(renderedGuests(md).length).toBeGreaterThan(0);
  });

  it('folds nothing in a small plan', () => {
    const guests = [
      guest({ name: 'a', vmid: 1 }),
      guest({ name: 'b', vmid: 2, action: 'create' }),
      guest({ name: 'c', vmid: 3, action: 'destroy', severity: 'data-loss' }),
    ];
    const md = renderPlanMarkdown(plan(guests));
    expect(renderedGuests(md)).toHaveLength(3);
    expect(md).not.toContain('omitted');
  });

  it('still fits with thousands of clusters, keeping the total', () => {
    const guests = Array.from({ length: 5_000 }, (_v, i) => guest({ cluster: `cluster-number-${i}`, name: 'g', vmid: 100_000 + i }));
    const md = renderPlanMarkdown(plan(guests));
    expect(md.length).toBeLessThanOrEqual(65_000);
    expect(md).toContain('| **Total** | 0 | 5000 |');
    expect(md).toContain('Per-cluster rows left out');
  });
});
