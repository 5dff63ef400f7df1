/**
 * What adopting drift took and left, as a person reads it: plain text for the command line, and
 * markdown for the body of the App's pull request. Values are shown as the drift report showed
 * them; secrets never (they are never adopted either).
 */
import type { Adoption, AdoptedValue } from './adopt-drift.js';

/** One value: `cores: 2 → 4`, `memory: 2048 → (removed)`. */
function change(value: AdoptedValue, code: (s: string) => string): string {
  const from = value.from === undefined ? '(not set)' : code(value.from);
  const to = value.to === undefined ? '(removed)' : code(value.to);
  return `${code(value.key)}: ${from} → ${to}`;
}

/** The adopted values grouped by subject and file, in the order they were found. */
function bySubject(adopted: readonly AdoptedValue[]): Map<string, AdoptedValue[]> {
  const groups = new Map<string, AdoptedValue[]>();
  for (const value of adopted) {
    const label = `${value.subject} (${value.file})`;
    const list = groups.get(label) ?? [];
    list.push(value);
    groups.set(label, list);
  }
  return groups;
}

/** A value inside inline code, one line, no backticks to break out of it. */
function inlineCode(value: string): string {
  const line = value.replace(/\r?\n/g, ' ⏎ ').replace(/`/g, "'");
  return `\`${line.length > 200 ? `${line.slice(0, 199)}…` : line}\``;
}

/** The command line's lines: what was (or, with `dryRun`, would be) written, and what was left. */
export function renderAdoptionText(adoption: Adoption, dryRun: boolean): string {
  const lines: string[] = [];
  const verb = dryRun ? 'would take' : 'took';
  for (const [label, values] of bySubject(adoption.adopted)) {
    lines.push(label);
    for (const value of values) lines.push(`  ${change(value, (s) => s.replace(/\r?\n/g, ' ⏎ '))}`);
  }
  const imported = adoption.imported ?? [];
  if (imported.length > 0) {
    lines.push('', `New spec files (${dryRun ? 'would be ' : ''}imported, as \`pve-gitops import\` writes them):`);
    for (const g of imported) lines.push(`  ${g.subject} (${g.file})${g.remarks.length > 0 ? `: ${g.remarks.join(', ')}` : ''}`);
  }
  if (adoption.notAdopted.length > 0) {
    lines.push('', 'Not adopted:');
    for (const left of adoption.notAdopted) lines.push(`  ${left.subject} ${left.key}: ${left.reason}`);
  }
  if (adoption.unmatched.length > 0) lines.push('', `No finding matched: ${adoption.unmatched.join(', ')}`);
  const files = adoption.files.length - imported.length;
  const values = `${adoption.adopted.length} value${adoption.adopted.length === 1 ? '' : 's'} into ${files} spec file${files === 1 ? '' : 's'}`;
  const guests = `${imported.length} unowned guest${imported.length === 1 ? '' : 's'} into new spec files`;
  lines.push(
    '',
    adoption.adopted.length === 0 && imported.length === 0
      ? 'Nothing to adopt.'
      : `Adopt ${verb} ${[...(adoption.adopted.length > 0 ? [values] : []), ...(imported.length > 0 ? [guests] : [])].join(' and ')}.`,
  );
  return `${lines.join('\n')}\n`;
}

/** The pull request's body: what it takes from the cluster, file by file, and what it leaves. */
export function renderAdoptionMarkdown(adoption: Adoption, report: { ref: string; checkedAt: string; issue?: number }): string {
  const lines: string[] = [
    'This pull request takes values changed on the clusters into the specs, so the plan no longer reverts them.',
    '',
    `From the drift report${report.issue !== undefined ? ` #${report.issue}` : ''}: read ${report.checkedAt} against \`${report.ref.slice(0, 7)}\`.`,
    '',
  ];
  for (const [label, values] of bySubject(adoption.adopted)) {
    lines.push(`**${label.replace(/[*_`[\]<>]/g, '')}**`, '');
    for (const value of values) lines.push(`- ${change(value, inlineCode)}`);
    lines.push('');
  }
  const imported = adoption.imported ?? [];
  if (imported.length > 0) {
    lines.push(
      'New spec files, for guests in range that no spec described (written as `pve-gitops import` writes them, `adopt: true`):',
      '',
    );
    for (const g of imported)
      lines.push(`- ${inlineCode(g.subject)} in ${inlineCode(g.file)}${g.remarks.length > 0 ? `: ${g.remarks.join(', ')}` : ''}`);
    lines.push('');
  }
  if (adoption.notAdopted.length > 0) {
    lines.push('Not taken:', '');
    for (const left of adoption.notAdopted) lines.push(`- ${inlineCode(left.subject)} ${inlineCode(left.key)}: ${left.reason}`);
    lines.push('');
  }
  lines.push(
    `It is planned like any other pull request: the plan should show no change for these keys${imported.length > 0 ? ', and only the adoption (the owner tag) of each new guest' : ''}.`,
  );
  return `${lines.join('\n')}\n`;
}
