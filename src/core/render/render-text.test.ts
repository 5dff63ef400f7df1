import { describe, expect, it } from 'vitest';
import { makeGuestPlan as guest, makePlan as plan } from '../../../test/helpers/factories.js';
import type { Plan } from '../model.js';
import { renderPlanText } from './render-text.js';

function lines(p: Plan): string[] {
  return renderPlanText(p).split('\n');
}

describe('renderPlanText', () => {
  it.each([
    ['create', guest({ action: 'create', name: 'web', vmid: 100102 }), '+ create  lab/web (100102) on pve-01'],
    ['update', guest({ impact: 'live' }), '~ update  lab/app-01 (100101) [live]'],
    ['destroy', guest({ action: 'destroy', severity: 'data-loss' }), '- destroy lab/app-01 (100101) [DATA-LOSS RISK]'],
    ['error', guest({ action: 'error', errors: ['VMID 100101 exists without the owner tag'] }), '! error   lab/app-01 (100101)'],
    ['orphan', guest({ action: 'orphan', severity: 'read-only' }), '? orphan  lab/app-01 (100101)'],
  ])('prints a %s line', (_name, g, line) => {
    expect(lines(plan([g]))).toContain(line);
  });

  it('indents key changes under their guest', () => {
    const out = lines(
      plan([
        guest({
          changes: [
            { key: 'memory', from: '2048', to: '4096', impact: 'live' },
            { key: 'net1', to: 'virtio,bridge=vmbr1', impact: 'needs-stop' },
            { key: 'description', from: 'old', impact: 'pending-restart' },
          ],
          operations: [
            { op: 'config', set: { memory: '4096' }, delete: ['description'], from: {} },
            { op: 'resize', disk: 'scsi0', size: '64G', from: '32G' },
          ],
        }),
      ]),
    );
    const at = out.indexOf('~ update  lab/app-01 (100101) [needs stop]');
    expect(out.slice(at + 1, at + 5)).toEqual([
      '    ~ memory: 2048 → 4096 (live)',
      '    + net1: virtio,bridge=vmbr1 (needs stop)',
      '    - description: old (pending restart)',
      '    > resize scsi0 from 32G to 64G (grows only)',
    ]);
  });

  it('prints drift and pending sections', () => {
    const text = renderPlanText(
      plan([
        guest({
          drift: [{ key: 'cores', expected: '2', actual: '4' }],
          pending: [
            { key: 'memory', current: '1024', pending: '2048' },
            { key: 'agent', current: '1', delete: true },
          ],
        }),
      ]),
    );
    expect(text).toContain(
      'Drift (changed outside git; applying reverts it unless the spec takes the live value):\n  lab/app-01 (100101)\n    cores: spec 2, cluster 4\n',
    );
    expect(text).toContain(
      'Pending (accepted but not in effect until restart):\n  lab/app-01 (100101)\n    memory: 1024 → 2048\n    agent: 1 → (delete)\n',
    );
  });

  it.each([
    ['nothing', [], 'No changes.'],
    ['only no-ops', [guest({ action: 'noop' })], 'No changes.'],
    ['an orphan', [guest({ action: 'orphan' })], 'No changes. 1 orphan.'],
    ['changes', [guest({ action: 'create' }), guest(), guest()], 'Plan: 1 to create, 2 to update, 0 to destroy.'],
    [
      'an error',
      [guest({ action: 'destroy' }), guest({ action: 'error', errors: ['x'] })],
      'Plan: 0 to create, 0 to update, 1 to destroy, 1 error.',
    ],
  ])('ends with the total for %s', (_name, guests, last) => {
    const out = lines(plan(guests));
    expect(out.at(-1)).toBe('');
    expect(out.at(-2)).toBe(last);
  });

  it('puts plan-level errors first', () => {
    const out = lines(plan([guest()], { errors: [{ cluster: 'lab', message: 'cluster listing is empty' }] }));
    expect(out.slice(0, 2)).toEqual(['Errors:', '  ! lab: cluster listing is empty']);
  });

  it('notes a derived VMID and counts no-op guests without listing them', () => {
    const text = renderPlanText(
      plan([guest({ action: 'create', vmid: 123456, vmidDerived: true }), guest({ name: 'quiet', action: 'noop' })]),
    );
    expect(text).toContain('    note: derived VMID 123456 — pin it with `vmid: 123456`');
    expect(text).toContain('1 guest unchanged.');
    expect(text).not.toContain('quiet');
  });

  it('hides secrets', () => {
    const text = renderPlanText(
      plan([
        guest({
          changes: [{ key: 'cipassword', from: 'old-secret', to: 'new-secret', impact: 'live' }],
          drift: [{ key: 'sshkeys', expected: 'key-a', actual: 'key-b' }],
        }),
      ]),
    );
    for (const secret of ['old-secret', 'new-secret', 'key-a', 'key-b']) expect(text).not.toContain(secret);
    expect(text).toContain('~ cipassword: (sensitive) → (sensitive) (live)');
  });

  it('never passes control characters from values to the terminal', () => {
    const text = renderPlanText(plan([guest({ changes: [{ key: 'description', from: 'a\u001b[2Jb\nc', to: 'd', impact: 'live' }] })]));
    expect(text).not.toContain('\u001b');
    expect(text).toContain('~ description: a\\x1b[2Jb\\nc → d (live)');
  });

  it('shows bidirectional overrides and zero-width characters from names and values as escapes', () => {
    const text = renderPlanText(
      plan([
        guest({ name: 'web\u202e10-bew', changes: [{ key: 'args', from: 'a', to: '-x \u2066hidden\u2069\u200b', impact: 'needs-stop' }] }),
      ]),
    );
    expect(text).not.toMatch(/[\u200b\u202a-\u202e\u2066-\u2069]/);
    expect(text).toContain('lab/web\\u202e10-bew (100101)');
    expect(text).toContain('~ args: a → -x \\u2066hidden\\u2069\\u200b (needs stop)');
  });

  it('says a long value was cut and how long it is, unless its key reaches the host', () => {
    const long = 'y'.repeat(1_000);
    const cut = renderPlanText(plan([guest({ changes: [{ key: 'description', from: long, to: 'd', impact: 'live' }] })]));
    expect(cut).toContain(`~ description: ${'y'.repeat(199)}… (cut: 1,000 characters in all) → d (live)`);
    const whole = renderPlanText(plan([guest({ changes: [{ key: 'hookscript', to: long, impact: 'live', severity: 'host-access' }] })]));
    expect(whole).toContain(`+ hookscript: ${long} (live, host access)`);
  });

  it('colours only when asked', () => {
    const p = plan([guest({ action: 'create' })]);
    expect(renderPlanText(p)).not.toContain('\u001b[');
    const coloured = renderPlanText(p, { color: true });
    expect(coloured).toContain('\u001b[32;1m+\u001b[0m');
    expect(coloured.replace(/\u001b\[[\d;]*m/g, '')).toBe(renderPlanText(p));
  });
});
