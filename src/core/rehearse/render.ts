/**
 * A rehearsal as text for the terminal and as a markdown section for the plan comment. Both say
 * that this is a rehearsal on a model, not a guarantee, and point to docs/rehearsal.md.
 */
import { codeSpan, escapeText, markdownTable } from '../render/markdown-format.js';
import { anyRefused, noteLine, notes, objectRefusals, refusals, rehearsalHeadline, rehearsalItems, type Rehearsal } from './outcome.js';

/** What every rendering says about the model. */
export const REHEARSAL_CAVEAT =
  'This is a rehearsal of the apply on a simulated copy of the guests and the cluster facts they depend on — a model, not a guarantee. What the model does not cover: docs/rehearsal.md.';

/** Terminal lines. */
export function renderRehearsalText(rehearsal: Rehearsal): string {
  const lines = [rehearsalHeadline(rehearsal)];
  for (const { mark, text } of rehearsalItems(rehearsal)) lines.push(`  ${mark === 'refused' ? '✗' : '-'} ${text}`);
  lines.push(`  (${REHEARSAL_CAVEAT})`);
  return `${lines.join('\n')}\n`;
}

/** Refusals listed in the comment at most: the plan comment must stay under GitHub's limit. */
const MAX_ROWS = 50;

/** The plan comment's section. */
export function renderRehearsalMarkdown(rehearsal: Rehearsal): string {
  const refused = [
    ...refusals(rehearsal).map((g) => [`${escapeText(`${g.cluster}/${g.name}`)} (${g.vmid})`, g.step, g.error] as const),
    ...objectRefusals(rehearsal).map((o) => [escapeText(`${o.cluster}/${o.label}`), o.step, o.error] as const),
  ];
  const lines = [`### ${anyRefused(rehearsal) ? '❌' : '✅'} ${rehearsalHeadline(rehearsal)}`, ''];
  if (refused.length > 0) {
    const rows = refused.slice(0, MAX_ROWS).map(([what, step, error]) => [what, escapeText(step ?? 'apply'), codeSpan(error ?? '')]);
    lines.push(markdownTable(['guest or object', 'step', 'Proxmox answered'], rows), '');
    if (refused.length > MAX_ROWS) lines.push(`…and ${refused.length - MAX_ROWS} more refusals (the check run annotates them).`, '');
  }
  for (const guest of notes(rehearsal)) lines.push(`- ${escapeText(noteLine(guest))}`);
  for (const [cluster, why] of Object.entries(rehearsal.skipped))
    lines.push(`- cluster ${escapeText(cluster)} not rehearsed: ${escapeText(why)}`);
  lines.push(`_${REHEARSAL_CAVEAT}_`, '');
  return lines.join('\n');
}

/**
 * A rendered plan with its rehearsal after it, as the plan's output (and a file it is written to)
 * keeps it: the terminal lines after text, the comment's section after markdown; JSON is left as
 * it is (it must stay one document).
 */
export function withRehearsalRendered(rendered: string, format: 'text' | 'markdown' | 'json', rehearsal: Rehearsal | undefined): string {
  if (!rehearsal || format === 'json') return rendered;
  if (format === 'markdown') return `${rendered.trimEnd()}\n\n${renderRehearsalMarkdown(rehearsal)}`;
  return `${rendered}${renderRehearsalText(rehearsal)}`;
}
