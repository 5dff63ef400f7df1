/**
 * The firewall kind's plan for one guest: live against wanted, section by section, as a
 * reviewer reads it — an option from → to, an alias or IPset added, changed or removed, and rules
 * added, removed, changed or moved (never "every rule below shifted by one"). Each difference is
 * one row of the change table and one operation; the item keeps the reviewed live sections
 * (`from`) and the wanted ones (`to`), which is all the executor needs. Pure.
 */
import type { DriftItem, KeyChange, ObjectOperation } from '../../model.js';
import type { FirewallAlias, FirewallIpset, FirewallRule } from './port.js';
import { diffRules } from './rules-diff.js';
import { aliasText, type FirewallState, ipsetText, OPTION_NAMES, optionText, ruleText, sameAlias, sameIpset } from './state.js';

/** What one guest's firewall changes: the table rows and the operations. */
export interface FirewallChanges {
  changes: KeyChange[];
  operations: ObjectOperation[];
  /** Whether a change can cut or open traffic to the guest (rules, `enable`, a policy). */
  reachesTraffic: boolean;
}

function change(key: string, from: string | undefined, to: string | undefined): KeyChange {
  return { key, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}), impact: 'live' };
}

function optionChanges(live: FirewallState, want: FirewallState, out: FirewallChanges): void {
  if (!want.options) return;
  const set: Record<string, boolean | string> = {};
  const remove: string[] = [];
  for (const name of OPTION_NAMES) {
    const from = optionText(live.options?.[name]);
    const to = optionText(want.options[name]);
    if (from === to) continue;
    out.changes.push(change(`firewall.options.${name}`, from, to));
    const value = want.options[name];
    if (value === undefined) remove.push(name);
    else set[name] = value;
    if (name === 'enable' || name.startsWith('policy_')) out.reachesTraffic = true;
  }
  if (Object.keys(set).length > 0 || remove.length > 0) out.operations.push({ op: 'set-fw-options', set, delete: remove });
}

function recordChanges<T>(
  what: 'alias' | 'ipset',
  live: Record<string, T>,
  want: Record<string, T> | undefined,
  same: (a: T, b: T) => boolean,
  text: (value: T) => string,
  out: FirewallChanges,
): void {
  if (!want) return;
  const key = what === 'alias' ? 'aliases' : 'ipsets';
  for (const [name, value] of Object.entries(want)) {
    const now = live[name];
    const shown = what === 'alias' ? (value as FirewallAlias).name : name;
    if (now === undefined) {
      out.changes.push(change(`firewall.${key}.${shown}`, undefined, text(value)));
      out.operations.push({ op: `add-fw-${what}`, name, value });
    } else if (!same(now, value)) {
      out.changes.push(change(`firewall.${key}.${shown}`, text(now), text(value)));
      out.operations.push({ op: `change-fw-${what}`, name, from: now, value });
    }
  }
  for (const [name, now] of Object.entries(live)) {
    if (Object.hasOwn(want, name)) continue;
    const shown = what === 'alias' ? (now as FirewallAlias).name : name;
    out.changes.push(change(`firewall.${key}.${shown}`, text(now), undefined));
    out.operations.push({ op: `remove-fw-${what}`, name, from: now });
  }
}

function ruleChanges(live: readonly FirewallRule[], want: readonly FirewallRule[] | undefined, out: FirewallChanges): void {
  if (!want) return;
  const diff = diffRules(live, want);
  const rows: { at: number; change: KeyChange; op: ObjectOperation }[] = [];
  for (const pair of diff.pairs) {
    const at = pair.desired + 1;
    const was = pair.live + 1;
    const rule = want[pair.desired] as FirewallRule;
    const from = live[pair.live] as FirewallRule;
    if (pair.changed) {
      const moved = pair.moved ? ` (was #${was})` : '';
      rows.push({
        at,
        change: change(`firewall.rules #${at}${moved}`, ruleText(from), ruleText(rule)),
        op: { op: 'change-fw-rule', at, was, from, rule },
      });
    } else if (pair.moved) {
      rows.push({
        at,
        change: change(`firewall.rules #${at}`, `#${was}`, `#${at}: ${ruleText(rule)}`),
        op: { op: 'move-fw-rule', at, was, rule },
      });
    }
  }
  for (const d of diff.added) {
    const rule = want[d] as FirewallRule;
    rows.push({
      at: d + 1,
      change: change(`firewall.rules #${d + 1}`, undefined, ruleText(rule)),
      op: { op: 'add-fw-rule', at: d + 1, rule },
    });
  }
  for (const l of diff.removed) {
    const rule = live[l] as FirewallRule;
    rows.push({
      at: l + 1,
      change: change(`firewall.rules (was #${l + 1})`, ruleText(rule), undefined),
      op: { op: 'remove-fw-rule', was: l + 1, rule },
    });
  }
  rows.sort((a, b) => a.at - b.at);
  for (const row of rows) {
    out.changes.push(row.change);
    out.operations.push(row.op);
  }
  if (rows.length > 0) out.reachesTraffic = true;
}

/** Every difference between `live` and what `want` manages. */
export function firewallChanges(live: FirewallState, want: FirewallState): FirewallChanges {
  const out: FirewallChanges = { changes: [], operations: [], reachesTraffic: false };
  optionChanges(live, want, out);
  recordChanges<FirewallAlias>('alias', live.aliases ?? {}, want.aliases, sameAlias, aliasText, out);
  recordChanges<FirewallIpset>('ipset', live.ipsets ?? {}, want.ipsets, sameIpset, ipsetText, out);
  ruleChanges(live.rules ?? [], want.rules, out);
  return out;
}

/** The drift rows of a guest whose spec did not change: the spec's value against the cluster's. */
export function driftOf(changes: readonly KeyChange[]): DriftItem[] {
  return changes.map((c) => ({
    key: c.key,
    ...(c.to !== undefined ? { expected: c.to } : {}),
    ...(c.from !== undefined ? { actual: c.from } : {}),
  }));
}
