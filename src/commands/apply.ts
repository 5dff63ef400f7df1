/**
 * `pve-gitops apply`: carries out a plan saved with `plan --save`, or a fresh plan after showing it
 * and asking (or with `--yes`), and reports each guest's result. A guest whose read failed stops only
 * itself; any other plan error stops the whole apply. How a guest is applied is the engine's
 * (`src/engine/apply-guest.ts`); this file only decides whether to start and what to print.
 */
import { clusterNames } from '../connections/connect.js';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import type { ApplyResult } from '../core/apply-result.js';
import { allResults, countApplyResult } from '../core/apply-result.js';
import type { Plan } from '../core/model.js';
import { planErrorLines, planHasChanges, planHasErrors } from '../core/plan/plan-specs.js';
import { renderApplyMarkdown, renderApplyText } from '../core/render/render-apply.js';
import { parsePlanJson } from '../core/render/render-json.js';
import { formatSpecError } from '../core/spec/errors.js';
import { validateStoredPlan } from '../core/spec/validate-stored-plan.js';
import type { ApplyEvent } from '../engine/apply-guest.js';
import { executePlan } from '../engine/execute-plan.js';
import { observePlan, unreadGuests } from '../engine/run-plan.js';
import { intFlag, parseFlags, UsageError } from './args.js';
import { emit, parseFormat, renderPlan, useColor } from './plan-output.js';
import { connect, loadSpecDir, note, progress, reportInvalidSpecs } from './shared.js';
import type { Command, CommandIO } from './types.js';

async function confirm(io: CommandIO, question: string): Promise<boolean> {
  const rl = createInterface({ input: io.stdin, output: io.stderr, terminal: false });
  try {
    const answer = await rl.question(question);
    return answer.trim().toLowerCase() === 'yes';
  } finally {
    rl.close();
  }
}

function isInteractive(io: CommandIO): boolean {
  return 'isTTY' in io.stdin && Boolean((io.stdin as { isTTY?: boolean }).isTTY);
}

/** One stderr line per step, so a long apply shows what it is doing. */
function reportEvent(io: CommandIO): (event: ApplyEvent) => void {
  return (event) => {
    if (event.type === 'notice') {
      note(io, `${event.cluster}: ${event.message}`);
      return;
    }
    const who = `${event.guest.cluster}/${event.guest.name} (${event.guest.vmid})`;
    if (event.type === 'step') {
      note(
        io,
        `${who}: ${event.step.op}${event.step.detail ? ` — ${event.step.detail}` : ''}${event.step.upid ? ` [${event.step.upid}]` : ''}`,
      );
    } else if (event.type === 'guest-done') {
      note(io, `${who}: ${event.result.status}${event.result.error ? ` — ${event.result.error}` : ''}`);
    }
  };
}

/** A plan to apply, and the guests of a fresh plan whose read failed (`cluster/vmid`). */
interface ObtainedPlan {
  plan: Plan;
  unread: ReadonlySet<string>;
}

/** Loads a stored plan, or plans the specs afresh and asks before applying. */
async function obtainPlan(
  flags: { plan?: string; specs: string; yes?: boolean; clusters?: string },
  io: CommandIO,
): Promise<ObtainedPlan | undefined> {
  if (flags.plan !== undefined) {
    let text: string;
    try {
      text = await readFile(resolve(io.cwd, flags.plan), 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read plan ${flags.plan}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    let plan: Plan;
    try {
      plan = parsePlanJson(text);
    } catch (err) {
      throw new UsageError(`${flags.plan}: ${(err as Error).message}`);
    }
    // A stored plan is a file anyone with the artifacts could edit: its specs must pass validate.
    const invalid = validateStoredPlan(plan).map(formatSpecError);
    // A stored plan does not say which errors were failed reads: any error stops it, as in the App.
    if (invalid.length === 0) return { plan, unread: new Set() };
    for (const line of invalid) io.stdout.write(`${line}\n`);
    note(io, `the specs stored in ${flags.plan} do not pass validate: nothing was applied`);
    return undefined;
  }
  const { specs, errorLines } = await loadSpecDir(flags.specs, io);
  if (reportInvalidSpecs(io, errorLines, 'nothing was planned or applied')) return undefined;
  const open = await connect(clusterNames(specs), 'read', io, flags.clusters);
  try {
    const { plan, observed } = await observePlan({
      head: specs,
      readers: open.clusters,
      access: open.access,
      ref: flags.specs,
      onProgress: progress(io),
    });
    io.stdout.write(await renderPlan(plan, 'text', io, false));
    return { plan, unread: unreadGuests(plan, observed) };
  } finally {
    await open.close();
  }
}

export const applyCommand: Command = {
  name: 'apply',
  summary: 'apply a stored plan, or a fresh one after showing it and asking',
  usage:
    'pve-gitops apply [--specs DIR] [--plan FILE] [--yes] [--now] [--format text|markdown|json] [--out FILE] [--lock-wait SECONDS] [--clusters FILE]',
  async run(args, io) {
    const flags = parseFlags(args, {
      specs: { type: 'string', default: '.' },
      plan: { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
      format: { type: 'string', default: 'text' },
      out: { type: 'string' },
      'lock-wait': { type: 'string' },
      clusters: { type: 'string' },
      now: { type: 'boolean' },
    });
    const format = parseFormat(flags.format);
    const lockWaitMs = intFlag(flags['lock-wait'], 'lock-wait', 600) * 1000;
    const obtained = await obtainPlan(flags, io);
    if (!obtained) return 1;
    const { plan, unread } = obtained;
    // A guest whose read failed is that guest's trouble only: the others apply, it is reported
    // (README "How apply decides"). Any other error — a cluster unread, a collision, a policy
    // refusal, invalid specs — may concern every guest, and stops the apply.
    const onlyUnread = plan.errors.length === 0 && plan.guests.every((g) => g.action !== 'error' || unread.has(g.key));
    if (planHasErrors(plan) && !(onlyUnread && planHasChanges(plan))) {
      for (const line of planErrorLines(plan)) io.stdout.write(`error: ${line}\n`);
      note(io, 'the plan has errors: nothing was applied');
      return 1;
    }
    if (unread.size > 0) {
      note(io, `${unread.size} guest${unread.size === 1 ? '' : 's'} could not be read and will not be applied; the others will be`);
    }
    if (!planHasChanges(plan)) {
      note(io, 'No changes: nothing to apply.');
      return 0;
    }
    if (flags.plan === undefined && !flags.yes) {
      if (!isInteractive(io)) {
        note(io, 'refusing to apply without confirmation: pass --yes, or apply a stored plan with --plan FILE');
        return 1;
      }
      if (!(await confirm(io, 'Apply these changes? Only "yes" is accepted: '))) {
        note(io, 'Apply cancelled.');
        return 1;
      }
    }
    const open = await connect(plan.clusters, 'write', io, flags.clusters);
    let result: ApplyResult;
    try {
      result = await executePlan(plan, open.clusters, {
        lockWaitMs,
        onEvent: reportEvent(io),
        ref: plan.ref,
        unread,
        // Guests outside their apply windows are held unless --now (README "Apply windows").
        windows: { clock: io.clock ?? Date.now, now: flags.now === true },
        allowHostAccess: Object.fromEntries(Object.entries(open.access).map(([name, access]) => [name, access.allowHostAccess])),
      });
    } finally {
      await open.close();
    }
    const text =
      format === 'json'
        ? `${JSON.stringify(result, null, 2)}\n`
        : format === 'markdown'
          ? `${renderApplyMarkdown(result)}\n`
          : renderApplyText(result, { color: useColor(io, flags.out !== undefined) });
    await emit(text, flags.out, io);
    const counts = countApplyResult(allResults(result));
    return counts.conflict + counts.failed > 0 ? 1 : 0;
  },
};
