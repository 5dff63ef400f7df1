/**
 * The rule pairing and the write sequence, table-driven: every sequence, applied the way Proxmox
 * applies each write, turns the live list into the wanted one, and moves only the rules outside
 * the longest run already in order.
 */
import { describe, expect, it } from 'vitest';
import type { FirewallRule } from './port.js';
import { applyStep, diffRules, ruleSteps } from './rules-diff.js';

const r = (comment: string, extra: Partial<FirewallRule> = {}): FirewallRule => ({
  type: 'in',
  action: 'ACCEPT',
  enable: true,
  comment,
  ...extra,
});
const list = (names: string): FirewallRule[] => names.split('').map((n) => r(n));

describe('ruleSteps', () => {
  it.each([
    { live: 'abcd', want: 'abcd', moves: 0, writes: 0 },
    { live: 'dabc', want: 'abcd', moves: 1, writes: 1 },
    { live: 'bcda', want: 'abcd', moves: 1, writes: 1 },
    { live: 'dcba', want: 'abcd', moves: 3, writes: 3 },
    { live: 'abcd', want: 'acd', moves: 0, writes: 1 },
    { live: 'abc', want: 'abcx', moves: 1, writes: 2 },
    { live: 'abc', want: 'xabc', moves: 0, writes: 1 },
    { live: '', want: 'xyz', moves: 0, writes: 3 },
    { live: 'abc', want: '', moves: 0, writes: 3 },
    { live: 'abcde', want: 'eacdf', moves: 2, writes: 4 },
  ])('$live → $want: $writes writes, $moves of them moves', ({ live, want, moves, writes }) => {
    const from = list(live);
    const to = list(want);
    const steps = ruleSteps(from, to);
    expect(steps.reduce(applyStep, from)).toEqual(to);
    expect(steps.filter((s) => s.op === 'move')).toHaveLength(moves);
    expect(steps).toHaveLength(writes);
  });

  it('edits a rule in place rather than removing and re-adding it', () => {
    const from = [r('ssh', { proto: 'tcp', dport: '22' }), r('web', { proto: 'tcp', dport: '80' })];
    const to = [r('ssh', { proto: 'tcp', dport: '2222' }), r('web', { proto: 'tcp', dport: '80' })];
    expect(ruleSteps(from, to)).toEqual([{ op: 'update', pos: 0, rule: to[0] }]);
    expect(diffRules(from, to).pairs.map((p) => p.changed)).toEqual([true, false]);
  });

  it('pairs no two rules whose comments differ: one goes, the other comes', () => {
    const diff = diffRules([r('ssh')], [r('web')]);
    expect(diff).toEqual({ pairs: [], added: [0], removed: [0] });
  });
});
