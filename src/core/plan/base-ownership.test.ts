/**
 * No live value of a guest the base branch does not own reaches a pull request: ownership is
 * judged by the base's Cluster documents (range and owner tag), whatever the head claims.
 */
import { describe, expect, it } from 'vitest';
import { makeClusterSpec, makeObservedVm, makeVmSpec } from '../../../test/helpers/factories.js';
import type { ClusterSpec, GuestSpec, ObservedCluster, ObservedGuest, Plan, SpecSet } from '../model.js';
import { renderPlanMarkdown } from '../render/render-markdown.js';
import { withholdLiveValues } from '../render/withhold-live.js';
import { LIVE_WITHHELD, NAME_WITHHELD } from './base-ownership.js';
import { planSpecs } from './plan-specs.js';

const base = makeClusterSpec();
const SECRET = 'hunter2-secret-text';

function live(name: string, vmid: number, tags: string | undefined, current: Record<string, string> = {}): ObservedGuest {
  const guest = makeObservedVm(name, vmid, { memory: '2048', description: SECRET, ...current });
  if (tags === undefined) delete guest.current.tags;
  else guest.current.tags = tags;
  return guest;
}

function cluster(guests: ObservedGuest[]): ObservedCluster {
  return {
    name: 'lab',
    nodes: ['pve-01'],
    listing: guests.map((g) => ({
      vmid: g.vmid,
      type: g.type,
      node: g.node,
      status: g.status,
      tags: g.current.tags,
      name: g.current.name,
    })),
    guests: Object.fromEntries(guests.map((g) => [g.vmid, g])),
  };
}

const set = (clusters: ClusterSpec[], ...guests: GuestSpec[]): SpecSet => ({ clusters, guests });

function planWith(head: SpecSet, baseSet: SpecSet, guests: ObservedGuest[]): Plan {
  return planSpecs({ head, base: baseSet, observed: { clusters: { lab: cluster(guests) } }, withholdUnowned: true });
}

describe('which guests the base branch owns', () => {
  it.each([
    {
      what: 'an adoption inside the base range (the guest has no owner tag yet)',
      head: set([base], makeVmSpec('db-01', 100200, { memory: '4096' }, { adopt: true })),
      baseSet: set([base]),
      guest: live('db-01', 100200, undefined),
      withheld: true,
    },
    {
      what: 'a tagged guest outside the base range, reached by widening the range in the head',
      head: set([makeClusterSpec({ vmids: { lower: 100000, upper: 300000 } })], makeVmSpec('other', 250000, { memory: '4096' })),
      baseSet: set([base]),
      guest: live('other', 250000, 'pve-gitops'),
      withheld: true,
    },
    {
      what: "a guest carrying the head's new owner tag, not the base's",
      head: set([makeClusterSpec({ ownerTag: 'team-b' })], makeVmSpec('theirs', 100300, { memory: '4096' })),
      baseSet: set([base], makeVmSpec('theirs', 100300, { memory: '2048' })),
      guest: live('theirs', 100300, 'team-b'),
      withheld: true,
    },
    {
      what: 'a guest of the base range with the owner tag and a base spec',
      head: set([base], makeVmSpec('web-01', 100101, { memory: '4096' })),
      baseSet: set([base], makeVmSpec('web-01', 100101, { memory: '2048' })),
      guest: live('web-01', 100101, 'pve-gitops'),
      withheld: false,
    },
  ])('$what: withheld $withheld', ({ head, baseSet, guest, withheld }) => {
    const plan = planWith(head, baseSet, [guest]);
    const [planned] = plan.guests;
    expect(planned?.liveWithheld === true).toBe(withheld);
    // The stored plan keeps the live values: apply compares them with what it reads then.
    expect(JSON.stringify(plan)).toContain(SECRET);
    const shown = renderPlanMarkdown(withholdLiveValues(plan));
    if (withheld) {
      expect(shown).not.toContain(SECRET);
      expect(shown).toContain(LIVE_WITHHELD);
    } else {
      expect(shown).toContain(SECRET);
    }
  });

  it('names no live name in the messages of a guest the base does not own (they become annotations)', () => {
    const plan = planWith(
      set(
        [makeClusterSpec({ vmids: { lower: 100000, upper: 300000 } })],
        makeVmSpec('probe', 250001, {}),
        makeVmSpec('guess', 250002, {}, { adopt: true }),
      ),
      set([base]),
      [live('payroll-db', 250001, undefined), live('hr-vault', 250002, undefined)],
    );
    const messages = plan.guests.flatMap((g) => [...g.errors, ...g.warnings]);
    expect(messages).toEqual([
      `adopt: guest 250002 is named '${NAME_WITHHELD}', the spec says 'guess'; adoption needs the same VMID and name`,
      `collision: VMID 250001 already exists on pve-01 ${NAME_WITHHELD} without the owner tag 'pve-gitops'; choose another vmid, or set adopt: true to take it over`,
    ]);
    expect(JSON.stringify(plan)).not.toMatch(/payroll-db|hr-vault/);
  });

  it('lists a tagged guest the head range reaches but the base range does not without its name', () => {
    const plan = planWith(set([makeClusterSpec({ vmids: { lower: 100000, upper: 300000 } })]), set([base]), [
      live('someone-elses', 250003, 'pve-gitops'),
    ]);
    expect(plan.guests.map((g) => [g.vmid, g.action, g.name, g.liveWithheld])).toEqual([[250003, 'orphan', NAME_WITHHELD, true]]);
  });

  it("keeps the live value out of a host-access reason and refusal, where the value is the guest's and not the spec's", () => {
    const plan = planWith(set([base], makeVmSpec('gpu-01', 100400, { memory: '2048' }, { adopt: true })), set([base]), [
      live('gpu-01', 100400, undefined, { hostpci0: '0000:41:00.0' }),
    ]);
    const [guest] = plan.guests;
    expect(guest?.action).toBe('error');
    expect(JSON.stringify(guest?.errors)).not.toContain('0000:41:00.0');
    expect(guest?.errors[0]).toContain(`hostpci0 reaches the host: it has a current value that reaches the host ${LIVE_WITHHELD}`);
    expect(guest?.hostAccess?.map((item) => item.reason)).toEqual([`has a current value that reaches the host ${LIVE_WITHHELD}`]);
  });

  it.each([
    {
      what: 'prune reaching past the base range, widened in the head',
      head: set([makeClusterSpec({ vmids: { lower: 100000, upper: 300000 }, prune: true })]),
      guest: live('someone-elses', 250004, 'pve-gitops'),
    },
    {
      what: "state: absent on a guest carrying only the head's new owner tag",
      head: set([makeClusterSpec({ ownerTag: 'team-b' })], makeVmSpec('theirs', 100500, {}, { state: 'absent' })),
      guest: live('theirs', 100500, 'team-b'),
    },
  ])('destroys nothing the base does not own: $what', ({ head, guest }) => {
    const plan = planWith(head, set([base]), [guest]);
    expect(plan.guests.map((g) => [g.vmid, g.action, g.operations])).toEqual([[guest.vmid, 'error', []]]);
    expect(plan.guests[0]?.errors[0]).toMatch(/^refusing to destroy guest \d+: the base branch does not own it/);
  });
});
