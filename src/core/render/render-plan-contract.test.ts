/**
 * What every plan renderer promises: the table's totals are the plan's summary, host-access
 * changes come first, an insecure connection is shown to the reviewer, and the stored JSON keeps
 * all of it.
 */
import { describe, expect, it } from 'vitest';
import { makeClusterSpec, makeObservedVm, makeVmSpec } from '../../../test/helpers/factories.js';
import type { GuestSpec, ObservedGuest, Plan, PlanSummary } from '../model.js';
import { planSpecs } from '../plan/plan-specs.js';
import { parsePlanJson, renderPlanJson } from './render-json.js';
import { renderPlanMarkdown } from './render-markdown.js';
import { renderPlanText } from './render-text.js';

const lab = makeClusterSpec();

const vm = makeVmSpec;

function running(name: string, vmid: number, current: Record<string, string>, pending: Record<string, string> = {}): ObservedGuest {
  return makeObservedVm(name, vmid, current, { status: 'running', pending });
}

function planOf(specs: GuestSpec[], live: ObservedGuest[], access?: Plan['insecureConnections']): Plan {
  return planSpecs({
    head: { clusters: [lab], guests: specs },
    observed: {
      clusters: {
        lab: {
          name: 'lab',
          nodes: ['pve-01'],
          listing: live.map((g) => ({ vmid: g.vmid, type: g.type, node: g.node, status: g.status, tags: g.current.tags })),
          guests: Object.fromEntries(live.map((g) => [g.vmid, g])),
          unlisted: Object.fromEntries(specs.filter((s) => !live.some((g) => g.vmid === s.vmid)).map((s) => [s.vmid, false])),
        },
      },
    },
    now: new Date('2025-01-01T00:00:00.000Z'),
    access: { lab: { allowHostAccess: ['args'], ...(access?.[0] ? { insecure: access[0].transport } : {}) } },
  });
}

/** The markdown summary table's Total row (or the single cluster row) as numbers by column title. */
function tableTotals(markdown: string): Record<string, number> {
  const lines = markdown.split('\n').filter((l) => l.startsWith('|'));
  const titles = (lines[0] ?? '').split('|').map((c) => c.trim());
  const row = lines.find((l) => l.startsWith('| **Total**')) ?? lines[2] ?? '';
  const cells = row.split('|').map((c) => c.trim());
  return Object.fromEntries(titles.map((t, i) => [t, Number(cells[i])]).filter(([t]) => t !== '' && t !== 'Cluster'));
}

function expectTableEqualsSummary(plan: Plan): void {
  const table = tableTotals(renderPlanMarkdown(plan));
  const s: PlanSummary = plan.summary;
  expect(table).toEqual({
    Create: s.create,
    Update: s.update,
    Destroy: s.destroy,
    'No-op': s.noop,
    Orphan: s.orphan,
    // Plan-level errors (an unreachable cluster) count in the table, which has no other place.
    Error: s.error + plan.errors.length,
    Drift: s.drifted,
    Pending: s.pending,
  });
}

describe('the summary table and plan.summary', () => {
  it('count a running VM whose change waits for a restart as pending in both', () => {
    // `cores` on a running VM is not hot-pluggable without the cpu hotplug feature: pending restart.
    const plan = planOf([vm('web-01', 100101, { cores: '4' })], [running('web-01', 100101, { cores: '2' })]);
    expect(plan.guests[0]?.changes[0]?.impact).toBe('pending-restart');
    expect(plan.summary.pending).toBe(1);
    expect(tableTotals(renderPlanMarkdown(plan)).Pending).toBe(1);
    expectTableEqualsSummary(plan);
  });

  it('agree for a mixed plan with values already pending, creates, no-ops and errors', () => {
    const plan = planOf(
      [
        vm('web-01', 100101, { cores: '4' }),
        vm('web-02', 100102, { memory: '2048' }),
        vm('web-03', 100103, { memory: '1024' }),
        vm('web-04', 100104, { hostpci0: '0000:01:00.0' }),
        vm('web-05', 100105, {}),
      ],
      [
        running('web-01', 100101, { cores: '2' }),
        running('web-02', 100102, { memory: '2048' }, { memory: '4096' }),
        running('web-03', 100103, { memory: '1024' }),
        running('web-04', 100104, {}),
      ],
    );
    expect(plan.summary).toMatchObject({ update: 2, create: 1, noop: 1, error: 1 });
    expectTableEqualsSummary(plan);
  });
});

describe('host access and insecure connections in the output', () => {
  const plan = planOf(
    [vm('gpu-01', 100101, { hostpci0: '0000:01:00.0' }), vm('web-01', 100102, { args: '-cpu host', memory: '8192' })],
    [running('gpu-01', 100101, {}), running('web-01', 100102, { memory: '4096' })],
    [{ cluster: 'lab', transport: 'http' }],
  );

  it('shows host-access changes first in the comment, with the insecure connection above the table', () => {
    const md = renderPlanMarkdown(plan);
    const hostAccess = md.indexOf('### 🔓 Host access: 2 changes');
    expect(hostAccess).toBeGreaterThan(0);
    expect(hostAccess).toBeLessThan(md.indexOf('### ❌'));
    expect(md).toContain(
      "hostpci0: passes the host's PCI device 0000:01:00.0 through to the guest (hostpci; not allowed by the server's policy",
    );
    expect(md).toContain("args: passes raw arguments to the QEMU process on the host (args; allowed by the server's policy");
    expect(md.indexOf('Insecure connection')).toBeLessThan(md.indexOf('| Cluster |'));
    expect(md).toContain('> ⚠️ **Insecure connection**: cluster `lab` was read over plain http:// — the API token travelled unencrypted.');
    expect(md).toMatch(/`args` \| \*\(unset\)\* \| `-cpu host` \| pending restart · 🔓 \*\*host access\*\*/);
  });

  it('shows them first in the terminal too', () => {
    const text = renderPlanText(plan);
    const lines = text.split('\n');
    expect(lines[0]).toBe('Insecure connection: cluster lab was read over plain http:// — the API token travelled unencrypted');
    expect(lines[2]).toBe('Host access (changes reaching beyond the guest):');
    expect(text.indexOf('Host access')).toBeLessThan(text.indexOf('! error'));
    expect(text).toContain('[HOST ACCESS]');
  });

  it('keeps them in the stored plan', () => {
    const back = parsePlanJson(renderPlanJson(plan));
    expect(back.insecureConnections).toEqual([{ cluster: 'lab', transport: 'http' }]);
    expect(back.guests.flatMap((g) => g.hostAccess ?? []).map((h) => [h.key, h.allowed])).toEqual(
      expect.arrayContaining([
        ['hostpci0', false],
        ['args', true],
      ]),
    );
    expect(back).toEqual(plan);
  });

  it('reads a plan stored before these fields existed', () => {
    const old = JSON.parse(renderPlanJson(planOf([vm('web-01', 100101, {})], [running('web-01', 100101, {})]))) as Record<string, unknown>;
    expect(old.insecureConnections).toBeUndefined();
    expect(parsePlanJson(JSON.stringify(old)).version).toBe(2);
  });
});
