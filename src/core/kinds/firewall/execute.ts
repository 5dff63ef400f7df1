/**
 * The firewall kind's executor for one guest. It reads the managed sections first: when they
 * already are what the plan wants it writes nothing; when they are not what was reviewed it
 * returns `conflict` and writes nothing. Then it writes section by section (options, aliases,
 * IPsets, rules; IPsets and aliases that go, last, once no rule names them). Every write that
 * Proxmox checks a digest on carries the digest of a read made just before it; `POST rules` is
 * checked by no digest, so after each rule write the list is read again and must be exactly what
 * that one write makes of it (docs/proxmox-behaviour.md, FW-…). A final read confirms the result.
 */
import type { ApplyStep } from '../../apply-result.js';
import type { ObjectPlan } from '../../model.js';
import type { ObjectApplyOutcome } from '../kind.js';
import { failedOutcome } from '../object-item.js';
import type { FirewallIpEntry, FirewallIpset, FirewallPort, FirewallRule, FirewallTarget } from './port.js';
import { applyStep, ruleSteps } from './rules-diff.js';
import {
  agrees,
  type FirewallState,
  OPTION_NAMES,
  optionText,
  ruleText,
  type Section,
  sameEntry,
  sameRule,
  sameSection,
  sectionBetween,
  sectionsOf,
} from './state.js';

/** Reads the sections `like` manages. */
export async function readManaged(port: FirewallPort, target: FirewallTarget, like: FirewallState): Promise<FirewallState> {
  const sections = sectionsOf(like);
  const state: FirewallState = {};
  await Promise.all(
    sections.map(async (section) => {
      if (section === 'options') state.options = (await port.readOptions(target)).value;
      else if (section === 'rules') state.rules = (await port.readRules(target)).value;
      else if (section === 'aliases') state.aliases = (await port.readAliases(target)).value;
      else state.ipsets = Object.fromEntries(Object.entries(await port.readIpsets(target)).map(([name, d]) => [name, d.value]));
    }),
  );
  return state;
}

/** Whether `live` is one of the lists the rule writes from `from` to `to` pass through. */
function rulesBetween(from: readonly FirewallRule[], to: readonly FirewallRule[]): (live: readonly FirewallRule[]) => boolean {
  return (live) => {
    let list = [...from];
    if (sameList(live, list)) return true;
    for (const step of ruleSteps(from, to)) {
      list = applyStep(list, step);
      if (sameList(live, list)) return true;
    }
    return false;
  };
}

/**
 * The sections that moved between review and apply, one line each: neither as reviewed nor where
 * this item's own earlier apply may have stopped (an unreachable cluster mid-way, then a retry).
 */
function moved(from: FirewallState, to: FirewallState, now: FirewallState, vmid: number): string[] {
  return sectionsOf(from)
    .filter((s) => !sameSection(s, from, now) && !sectionBetween(s, now, from, to, rulesBetween(from.rules ?? [], to.rules ?? [])))
    .map((s: Section) => `the firewall ${s} of guest ${vmid} changed on the cluster after the review`);
}

/** A rule write that did not leave the list as that one write should. */
class RulesMovedError extends Error {
  override name = 'RulesMovedError';
}

async function writeOptions(port: FirewallPort, target: FirewallTarget, to: FirewallState, steps: ApplyStep[]): Promise<void> {
  if (!to.options) return;
  const started = Date.now();
  const live = await port.readOptions(target);
  const set: Record<string, boolean | string> = {};
  const remove: string[] = [];
  for (const name of OPTION_NAMES) {
    if (optionText(live.value[name]) === optionText(to.options[name])) continue;
    const value = to.options[name];
    if (value === undefined) remove.push(name);
    else set[name] = value;
  }
  if (Object.keys(set).length === 0 && remove.length === 0) return;
  await port.setOptions(target, set, remove, live.digest);
  const parts = [...Object.entries(set).map(([k, v]) => `${k}=${optionText(v)}`), ...remove.map((k) => `-${k}`)];
  steps.push({ op: 'fw-options', detail: parts.join(', '), ms: Date.now() - started });
}

async function writeAliases(
  port: FirewallPort,
  target: FirewallTarget,
  to: FirewallState,
  steps: ApplyStep[],
  removals: boolean,
): Promise<void> {
  if (!to.aliases) return;
  const live = await port.readAliases(target);
  let digest = live.digest;
  const refresh = async (): Promise<void> => {
    digest = (await port.readAliases(target)).digest;
  };
  if (removals) {
    for (const [key, alias] of Object.entries(live.value)) {
      if (Object.hasOwn(to.aliases, key)) continue;
      const started = Date.now();
      await port.removeAlias(target, alias.name, digest);
      await refresh();
      steps.push({ op: 'fw-alias', detail: `removed ${alias.name}`, ms: Date.now() - started });
    }
    return;
  }
  for (const [key, alias] of Object.entries(to.aliases)) {
    const now = live.value[key];
    const started = Date.now();
    if (now === undefined) await port.createAlias(target, alias);
    else if (now.cidr !== alias.cidr || (now.comment ?? '') !== (alias.comment ?? ''))
      await port.updateAlias(target, { ...alias, name: now.name }, digest);
    else continue;
    await refresh();
    steps.push({
      op: 'fw-alias',
      detail: `${now === undefined ? 'added' : 'changed'} ${alias.name} ${alias.cidr}`,
      ms: Date.now() - started,
    });
  }
}

async function writeIpset(port: FirewallPort, target: FirewallTarget, name: string, set: FirewallIpset, steps: ApplyStep[]): Promise<void> {
  const started = Date.now();
  const all = await port.readIpsets(target);
  let live = all[name];
  const done: string[] = [];
  if (!live) {
    await port.createIpset(target, name, set.comment);
    done.push('created');
    live = { value: { entries: [] }, digest: '' };
  } else if ((live.value.comment ?? '') !== (set.comment ?? '')) {
    await port.setIpsetComment(target, name, set.comment ?? '');
    done.push('comment');
  }
  const digestOf = async (): Promise<string> => (await port.readIpsets(target))[name]?.digest ?? '';
  for (const entry of live.value.entries) {
    if (set.entries.some((e) => e.cidr === entry.cidr)) continue;
    await port.removeIp(target, name, entry.cidr, await digestOf());
    done.push(`-${entry.cidr}`);
  }
  for (const entry of set.entries) {
    const now = live.value.entries.find((e) => e.cidr === entry.cidr);
    if (now === undefined) {
      await port.addIp(target, name, entry);
      done.push(`+${entry.cidr}`);
    } else if (!sameEntry(now, entry as FirewallIpEntry)) {
      await port.updateIp(target, name, entry, await digestOf());
      done.push(`~${entry.cidr}`);
    }
  }
  if (done.length > 0) steps.push({ op: 'fw-ipset', detail: `${name}: ${done.join(', ')}`, ms: Date.now() - started });
}

async function writeIpsets(
  port: FirewallPort,
  target: FirewallTarget,
  to: FirewallState,
  steps: ApplyStep[],
  removals: boolean,
): Promise<void> {
  if (!to.ipsets) return;
  if (removals) {
    for (const name of Object.keys(await port.readIpsets(target))) {
      if (Object.hasOwn(to.ipsets, name)) continue;
      const started = Date.now();
      await port.deleteIpset(target, name);
      steps.push({ op: 'fw-ipset', detail: `removed ${name}`, ms: Date.now() - started });
    }
    return;
  }
  for (const [name, set] of Object.entries(to.ipsets)) await writeIpset(port, target, name, set, steps);
}

function sameList(a: readonly FirewallRule[], b: readonly FirewallRule[]): boolean {
  return a.length === b.length && a.every((rule, i) => sameRule(rule, b[i] as FirewallRule));
}

function stepText(step: ReturnType<typeof ruleSteps>[number]): string {
  if (step.op === 'delete') return `removed #${step.pos + 1}`;
  if (step.op === 'update') return `changed #${step.pos + 1} to ${ruleText(step.rule)}`;
  if (step.op === 'create') return `added ${ruleText(step.rule)} at #1`;
  return `moved #${step.pos + 1} (moveto ${step.moveto})`;
}

async function writeRules(port: FirewallPort, target: FirewallTarget, to: FirewallState, steps: ApplyStep[]): Promise<void> {
  if (!to.rules) return;
  let live = await port.readRules(target);
  for (const step of ruleSteps(live.value, to.rules)) {
    const started = Date.now();
    if (step.op === 'delete') await port.deleteRule(target, step.pos, live.digest);
    else if (step.op === 'update') await port.updateRule(target, step.pos, step.rule, live.digest);
    else if (step.op === 'create') await port.createRule(target, step.rule);
    else await port.moveRule(target, step.pos, step.moveto, live.digest);
    const expected = applyStep(live.value, step);
    live = await port.readRules(target);
    if (!sameList(live.value, expected))
      throw new RulesMovedError(
        `the firewall rules of guest ${target.vmid} changed on the cluster during the apply (after: ${stepText(step)})`,
      );
    steps.push({ op: 'fw-rule', detail: stepText(step), ms: Date.now() - started });
  }
}

/** Carries out one stored item (its payload holds the target, `from` and `to`). */
export async function executeFirewall(stored: ObjectPlan, port: FirewallPort): Promise<ObjectApplyOutcome> {
  const steps: ApplyStep[] = [];
  const payload = stored.payload as { vmid: number; node: string; type: 'qemu' | 'lxc'; from: FirewallState; to: FirewallState };
  const target: FirewallTarget = { node: payload.node, type: payload.type, vmid: payload.vmid };
  if (stored.operations.length === 0) return { status: 'unchanged', steps };
  try {
    const now = await readManaged(port, target, payload.to);
    if (agrees(payload.to, now)) return { status: 'unchanged', steps };
    const conflict = moved(payload.from, payload.to, now, payload.vmid);
    if (conflict.length > 0) return { status: 'conflict', steps, conflict };
    await writeOptions(port, target, payload.to, steps);
    await writeAliases(port, target, payload.to, steps, false);
    await writeIpsets(port, target, payload.to, steps, false);
    await writeRules(port, target, payload.to, steps);
    await writeIpsets(port, target, payload.to, steps, true);
    await writeAliases(port, target, payload.to, steps, true);
    const after = await readManaged(port, target, payload.to);
    if (!agrees(payload.to, after))
      return { status: 'failed', steps, error: `the firewall of guest ${payload.vmid} is not as planned after the apply` };
    return { status: 'applied', steps };
  } catch (err) {
    if (err instanceof RulesMovedError) return { status: 'failed', steps, error: err.message };
    return failedOutcome(err, steps);
  }
}
