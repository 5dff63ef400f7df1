/**
 * A guest's firewall drift taken into its spec's `firewall:`. The drift finding names what moved
 * (`firewall.options.policy_in`, `firewall.aliases.bastion`, `firewall.ipsets.admins`,
 * `firewall.rules #2`); the live value comes from the drift plan's firewall item, which keeps the
 * live sections it compared (`payload.from`). An option, an alias or an IPset is edited on its
 * own, so the rest of the section keeps its comments; the rules are one ordered list, so a rule
 * that moved, came or went replaces the list. Each value is written in the form the firewall kind
 * compares (`kinds/firewall/document.ts`), so the plan afterwards shows no firewall change. Pure.
 */
import type { DriftFinding } from '../drift/drift-report.js';
import type { GuestSpec, ObjectPlan } from '../model.js';
import { aliasDocument, ipsetDocument } from '../kinds/firewall/document.js';
import { sectionDocument } from '../kinds/firewall/document.js';
import type { FirewallState } from '../kinds/firewall/state.js';
import type { DocumentEdit, SpecValue } from './yaml-edit.js';

/** The live sections a firewall item compared, when it carries them. */
export function liveFirewall(item: ObjectPlan | undefined): FirewallState | undefined {
  const from = item?.payload.from;
  return typeof from === 'object' && from !== null ? (from as FirewallState) : undefined;
}

/** The key the spec writes for a name of a section keyed by name (aliases are matched without regard to case). */
function writtenName(guest: GuestSpec, section: 'aliases' | 'ipsets', name: string): string {
  const written = (guest.refs?.firewall as Record<string, unknown> | undefined)?.[section];
  const keys = typeof written === 'object' && written !== null ? Object.keys(written) : [];
  if (section === 'ipsets') return name;
  return keys.find((k) => k.toLowerCase() === name.toLowerCase()) ?? name;
}

/** Whether the live section holds nothing: then the spec's section becomes empty, not absent (absent is not managed). */
function emptySection(live: FirewallState, section: 'options' | 'aliases' | 'ipsets'): boolean {
  return Object.keys(live[section] ?? {}).length === 0;
}

/** The edit that takes one firewall finding into the guest's spec, or why it cannot be taken. */
export function firewallEdit(finding: DriftFinding, guest: GuestSpec, live: FirewallState | undefined): DocumentEdit | { reason: string } {
  if (!live) return { reason: "the drift read did not keep the guest's live firewall: run drift again" };
  const key = finding.key;
  if (key === 'firewall.rules' || key.startsWith('firewall.rules ')) {
    return { path: ['firewall', 'rules'], value: sectionDocument('rules', live) as SpecValue };
  }
  const m = /^firewall\.(options|aliases|ipsets)\.(.+)$/.exec(key);
  if (!m) return { reason: `a firewall difference in ${key} cannot be adopted: edit firewall: by hand` };
  const section = m[1] as 'options' | 'aliases' | 'ipsets';
  const name = m[2] as string;
  if (emptySection(live, section)) return { path: ['firewall', section], value: {} };
  if (section === 'options') {
    const value = live.options?.[name];
    return value === undefined ? { path: ['firewall', 'options', name] } : { path: ['firewall', 'options', name], value };
  }
  const path = ['firewall', section, writtenName(guest, section, name)];
  if (section === 'aliases') {
    const alias = live.aliases?.[name.toLowerCase()];
    return alias === undefined ? { path } : { path, value: aliasDocument(alias) as SpecValue };
  }
  const set = live.ipsets?.[name];
  return set === undefined ? { path } : { path, value: ipsetDocument(set) as SpecValue };
}
