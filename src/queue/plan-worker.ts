/**
 * The plan queue's worker: runs the jobs webhook handlers enqueued. Job data is parsed back with
 * the queue's schemas first, so a malformed job fails with a clear error instead of half-running.
 */
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { NewestHeads } from './newest-head.js';
import { PlanQueueJob } from './schema.js';

/** What the plan worker needs; constructed by the composition root (`src/server/serve.ts`). */
export interface PlanWorkerDeps {
  logger: Logger;
  heads: NewestHeads;
}

/** The processor BullMQ calls for each plan-queue job. */
export function createPlanProcessor(deps: PlanWorkerDeps): (job: Job) => Promise<void> {
  return async (job) => {
    const data = PlanQueueJob.parse(job.data);
    const log = deps.logger.child({ job: job.id, delivery: data.deliveryId, kind: data.kind, pr: data.pr });
    if (data.kind === 'plan' && !(await deps.heads.isNewest(data.repo.id, data.pr, data.headSha))) {
      log.info({ head: data.headSha }, 'a newer head of this pull request is known: not planned');
      return;
    }
    log.info('job received');
  };
}
