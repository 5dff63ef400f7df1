/**
 * The apply rehearsal where the reviewer looks (docs/rehearsal.md): a section of the plan comment
 * and, in the `pve-gitops/plan` check run, the verdict line, one annotation per refusal on the
 * guest's spec (on the key it is about, when one can be told) or the object's document, and — unless the repository chose `rehearsal: warn` — a failed check when
 * Proxmox would refuse a step.
 */
import type { Annotation, CheckResult } from './check-runs.js';
import { anyRefused, objectRefusals, refusals, rehearsalHeadline, rehearsalItems, type Rehearsal } from '../core/rehearse/outcome.js';
import { REHEARSAL_CAVEAT, withRehearsalRendered } from '../core/rehearse/render.js';
import { escapeText } from '../core/render/markdown-format.js';
import type { GuestSpec, SourceRef } from '../core/model.js';
import { refusalSource } from '../core/rehearse/refused-key.js';

/** What a refusal does to the check: `fail` (the default), `warn`, or `off` (no rehearsal). */
export type RehearsalMode = 'fail' | 'warn' | 'off';

/** The plan comment with the rehearsal's section at its end. */
export function withRehearsalSection(body: string, rehearsal: Rehearsal | undefined): string {
  return withRehearsalRendered(body, 'markdown', rehearsal);
}

/** The plan's check result with the rehearsal's verdict, annotations and, in `fail` mode, its failure. */
export function withRehearsalCheck(
  result: CheckResult,
  rehearsal: Rehearsal | undefined,
  mode: RehearsalMode,
  repoPath: (file: string) => string,
  specs: readonly GuestSpec[] = [],
): CheckResult {
  if (!rehearsal) return result;
  const refused = refusals(rehearsal);
  const level = mode === 'warn' ? 'warning' : 'failure';
  const byKey = new Map(specs.map((s) => [`${s.cluster}/${s.vmid}`, s]));
  const objects = objectRefusals(rehearsal);
  const annotate = (at: SourceRef | undefined, title: string, message: string | undefined): Annotation[] =>
    at
      ? [
          {
            path: repoPath(at.file),
            start_line: at.line,
            end_line: at.line,
            annotation_level: level,
            title,
            message: message ?? 'refused',
          },
        ]
      : [];
  const annotations: Annotation[] = [
    ...refused.flatMap((g) =>
      annotate(
        refusalSource(g, byKey.get(`${g.cluster}/${g.vmid}`)),
        `${g.cluster}/${g.name}: rehearsal refused ${g.step ?? 'the apply'}`,
        g.error,
      ),
    ),
    ...objects.flatMap((o) => annotate(o.source, `${o.cluster}/${o.label}: rehearsal refused ${o.step ?? 'the apply'}`, o.error)),
  ];
  const marks = { refused: '❌ ', note: '', skipped: '⚠️ ' } as const;
  const lines = [
    `**${rehearsalHeadline(rehearsal)}**`,
    ...rehearsalItems(rehearsal).map(({ mark, text }) => `- ${marks[mark]}${escapeText(text)}`),
    '',
    `_${REHEARSAL_CAVEAT}_`,
  ];
  const failing = anyRefused(rehearsal) && mode === 'fail' && result.conclusion === 'success';
  return {
    ...result,
    ...(failing ? { conclusion: 'failure' as const, title: rehearsalHeadline(rehearsal) } : {}),
    summary: `${result.summary}\n\n${lines.join('\n')}`,
    annotations: [...(result.annotations ?? []), ...annotations],
  };
}
