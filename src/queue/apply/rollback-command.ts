/**
 * `/pve rollback` (README "Snapshots first"): rolls the guests (VMs and containers) that a merged
 * pull request's latest apply snapshotted back to those snapshots. The plan worker has checked
 * that the author may write and reacted. Without `confirm` it only answers with what it would do —
 * which guest goes back to which snapshot, and that what changed since is lost; `/pve rollback
 * confirm` does it, one guest after the other (`POST …/snapshot/{name}/rollback`, started again when it was running), and
 * answers with how each ended. A comment is carried out once, whatever deliveries repeat it.
 */
import type { Logger } from 'pino';
import type { GuestProgress } from './apply-store.js';
import { type ApplyCause, type ApplyStore, isFinal, isGuestProgress } from './apply-store.js';
import type { OpenWriter } from './cluster-writers.js';
import type { CommandHandler } from '../plan/plan-worker.js';
import { errorMessage } from '../../util/error-message.js';

/** What the handler needs; constructed by the worker role. */
export interface RollbackDeps {
  store: ApplyStore;
  logger: Logger;
  /** The writer of a cluster for the specs of a repository (`owner/name`). */
  writer: (cluster: string, repository: string) => Promise<OpenWriter>;
}

/** A guest of the run and the snapshot its apply took. */
interface Target {
  guest: GuestProgress;
  snapshot: string;
}

/** The snapshot a guest's apply took (or found taken by an earlier run of it), if any. */
function snapshotOf(guest: GuestProgress): string | undefined {
  const step = guest.steps.find((s) => s.op === 'snapshot' || s.op === 'snapshot-found');
  return step?.detail?.split(',')[0];
}

function line(t: Target): string {
  return `- **${t.guest.cluster}/${t.guest.name}** (${t.guest.vmid}) → \`${t.snapshot}\``;
}

/** The handler of `/pve rollback [confirm]`. */
export function rollbackCommand(deps: RollbackDeps): CommandHandler {
  return async (job, ctx) => {
    const cause: ApplyCause = { comment: job.commentId };
    if ((await deps.store.carriedOut(job.repo.id, cause)) !== undefined) return;
    const who = `@${job.author}`;
    const answer = async (body: string, outcome = 'reply'): Promise<void> => {
      await ctx.reply(body);
      await deps.store.markCarriedOut(job.repo.id, cause, outcome);
    };
    const confirm = job.args.length === 1 && job.args[0] === 'confirm';
    if (job.args.length > 0 && !confirm) {
      await answer(`${who} nothing was rolled back: \`/pve rollback\` takes no argument but \`confirm\`.`);
      return;
    }
    const runId = await deps.store.latestRun(job.repo.id, job.pr);
    const record = runId ? await deps.store.getRun(runId) : undefined;
    if (!runId || !record) {
      await answer(`${who} no apply of this pull request is known any more: nothing to roll back.`);
      return;
    }
    const results = await deps.store.results(runId);
    if ([...results.values()].some((r) => !isFinal(r.status))) {
      await answer(`${who} the apply of this pull request is still going: roll back once it has finished.`);
      return;
    }
    const targets: Target[] = [];
    for (const key of record.run.guests) {
      const guest = results.get(key);
      const snapshot = guest && isGuestProgress(guest) ? snapshotOf(guest) : undefined;
      if (guest && isGuestProgress(guest) && snapshot) targets.push({ guest, snapshot });
    }
    if (targets.length === 0) {
      await answer(`${who} the latest apply of this pull request took no snapshot (\`snapshot:\` in the specs): nothing to roll back.`);
      return;
    }
    const merge = `\`${record.run.mergeSha.slice(0, 7)}\``;
    if (!confirm) {
      await answer(
        `${who} \`/pve rollback confirm\` would roll these guests (VMs and containers) back to the snapshots the apply of ${merge} took before it wrote anything. ` +
          'Each is stopped, its configuration and volumes are put back as the snapshot has them — whatever changed since is lost — and one that was running is started again:\n\n' +
          `${targets.map(line).join('\n')}\n\nThe specs are not changed: revert the pull request too, or the next merge applies its change again.`,
      );
      return;
    }
    const done: string[] = [];
    for (const target of targets) done.push(await rollBack(deps, `${job.repo.owner}/${job.repo.name}`, target));
    deps.logger.info({ run: runId, guests: targets.length }, 'rolled back to the apply snapshots');
    await answer(`${who} rolled back to the snapshots the apply of ${merge} took:\n\n${done.join('\n')}`, runId);
  };
}

/** Rolls one guest back; its line for the answer. */
async function rollBack(deps: RollbackDeps, repository: string, target: Target): Promise<string> {
  const { guest, snapshot } = target;
  try {
    const { writer } = await deps.writer(guest.cluster, repository);
    if (!writer.rollbackSnapshot) throw new Error('this connection cannot roll back snapshots');
    const listed = (await writer.listGuests()).find((g) => g.vmid === guest.vmid);
    if (!listed) throw new Error('the guest is not on the cluster any more');
    const running = listed.status === 'running';
    const result = await writer.rollbackSnapshot(
      { node: listed.node, type: listed.type, vmid: guest.vmid },
      snapshot,
      {},
      { start: running },
    );
    return `${line(target)}: rolled back${running ? ' and started again' : ''}${result.upid ? ` (\`${result.upid}\`)` : ''}`;
  } catch (error) {
    return `${line(target)}: **not rolled back** — ${errorMessage(error)}`;
  }
}
