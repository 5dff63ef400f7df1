/**
 * Rule lists compared the way a reviewer reads them, and the fewest position-addressed writes
 * that turn one into the other. Proxmox addresses a guest's rules by position only
 * (docs/proxmox-behaviour.md, FW-…): a plan that said "rule 3 becomes rule 4's text" for every
 * rule below an insertion would hide the one change that was made. So rules are first paired
 * (identical ones, then ones that are plainly the same rule edited), and only what is left is
 * added or removed; a pair out of order is a move. Pure.
 */
import { RULE_FIELDS, type FirewallRule } from './port.js';
import { sameRule } from './state.js';

/** A live rule and the desired rule it becomes. */
export interface RulePair {
  live: number;
  desired: number;
  changed: boolean;
  moved: boolean;
}

export interface RuleDiff {
  pairs: RulePair[];
  /** Desired positions with no live rule. */
  added: number[];
  /** Live positions with no desired rule. */
  removed: number[];
}

/** One write, in the order it runs: positions are those of the list as it is just before it. */
export type RuleStep =
  | { op: 'delete'; pos: number }
  | { op: 'update'; pos: number; rule: FirewallRule }
  | { op: 'create'; rule: FirewallRule }
  | { op: 'move'; pos: number; moveto: number };

const COMPARED = ['type', 'action', ...RULE_FIELDS] as const;

/** How alike two rules are: the fields they agree on; a differing comment on both sides is another rule. */
function likeness(a: FirewallRule, b: FirewallRule): number {
  if (a.comment && b.comment && a.comment !== b.comment) return 0;
  if (a.type !== b.type) return 0;
  return COMPARED.filter((f) => (a[f] ?? '').toLowerCase() === (b[f] ?? '').toLowerCase()).length;
}

/** The indices (into `values`) of one longest strictly increasing subsequence. */
function longestIncreasing(values: readonly number[]): Set<number> {
  const tails: number[] = [];
  const previous: number[] = new Array(values.length).fill(-1);
  for (let i = 0; i < values.length; i++) {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((values[tails[mid] as number] as number) < (values[i] as number)) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) previous[i] = tails[lo - 1] as number;
    tails[lo] = i;
  }
  const keep = new Set<number>();
  for (let i = tails.at(-1) ?? -1; i >= 0; i = previous[i] as number) keep.add(i);
  return keep;
}

/** Pairs live rules with desired ones: identical first, then the most alike (at least all but three fields). */
export function diffRules(live: readonly FirewallRule[], desired: readonly FirewallRule[]): RuleDiff {
  const liveUsed = new Set<number>();
  const pairOf = new Map<number, { live: number; changed: boolean }>();
  desired.forEach((rule, d) => {
    const l = live.findIndex((other, i) => !liveUsed.has(i) && sameRule(other, rule));
    if (l >= 0) {
      liveUsed.add(l);
      pairOf.set(d, { live: l, changed: false });
    }
  });
  desired.forEach((rule, d) => {
    if (pairOf.has(d)) return;
    let best = -1;
    let bestScore = COMPARED.length - 3;
    live.forEach((other, i) => {
      if (liveUsed.has(i)) return;
      const score = likeness(other, rule);
      if (score >= bestScore && (best < 0 || score > bestScore)) {
        best = i;
        bestScore = score;
      }
    });
    if (best >= 0) {
      liveUsed.add(best);
      pairOf.set(d, { live: best, changed: true });
    }
  });
  const ordered = [...pairOf.entries()].sort((a, b) => a[0] - b[0]);
  const inOrder = longestIncreasing(ordered.map(([, p]) => p.live));
  const pairs = ordered.map(([d, p], i) => ({ live: p.live, desired: d, changed: p.changed, moved: !inOrder.has(i) }));
  return {
    pairs,
    added: desired.map((_, d) => d).filter((d) => !pairOf.has(d)),
    removed: live.map((_, l) => l).filter((l) => !liveUsed.has(l)),
  };
}

/**
 * The writes that turn `live` into `desired`: removals from the bottom up, edits in place, new
 * rules (each `POST` lands at position 0, so they go in last-first), then one `moveto` for each
 * rule outside the longest run already in order.
 */
export function ruleSteps(live: readonly FirewallRule[], desired: readonly FirewallRule[]): RuleStep[] {
  const diff = diffRules(live, desired);
  const steps: RuleStep[] = [];
  // Identity of each rule in the working list: `l<i>` for a live rule, `d<i>` for a new one.
  let current = live.map((_, i) => `l${i}`);
  for (const pos of [...diff.removed].sort((a, b) => b - a)) {
    steps.push({ op: 'delete', pos });
    current.splice(pos, 1);
  }
  const target = desired.map((_, d) => `d${d}`);
  for (const pair of diff.pairs) {
    target[pair.desired] = `l${pair.live}`;
    if (pair.changed) steps.push({ op: 'update', pos: current.indexOf(`l${pair.live}`), rule: desired[pair.desired] as FirewallRule });
  }
  for (const d of [...diff.added].reverse()) {
    steps.push({ op: 'create', rule: desired[d] as FirewallRule });
    current = [`d${d}`, ...current];
  }
  const stable = longestIncreasing(target.map((id) => current.indexOf(id)));
  target.forEach((id, d) => {
    if (stable.has(d)) return;
    const pos = current.indexOf(id);
    current.splice(pos, 1);
    const at = d === 0 ? 0 : current.indexOf(target[d - 1] as string) + 1;
    steps.push({ op: 'move', pos, moveto: at < pos ? at : at + 1 });
    current.splice(at, 0, id);
  });
  return steps;
}

/** A step applied to a list the way Proxmox applies it (to confirm each write by a re-read). */
export function applyStep(rules: readonly FirewallRule[], step: RuleStep): FirewallRule[] {
  const out = [...rules];
  if (step.op === 'delete') out.splice(step.pos, 1);
  else if (step.op === 'update') out[step.pos] = step.rule;
  else if (step.op === 'create') out.unshift(step.rule);
  else {
    const [rule] = out.splice(step.pos, 1);
    const at = step.moveto > step.pos ? step.moveto - 1 : step.moveto;
    out.splice(Math.min(at, out.length), 0, rule as FirewallRule);
  }
  return out;
}
