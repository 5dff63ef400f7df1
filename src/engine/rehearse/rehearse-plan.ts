/**
 * The apply rehearsal (docs/rehearsal.md): after a plan, the plan's own apply — `executePlan`,
 * unchanged — is run against a simulated copy of the guests and objects it touches and of the
 * cluster facts their apply depends on, and what Proxmox would refuse is recorded guest by guest
 * and object by object. The copy's
 * facts are read through the reader port (`readFacts`, a bounded number of requests per cluster);
 * the copy itself is served by a sandbox the caller opens (the Proxmox adapter's simulator).
 */
import type { HostAccessRule } from '../../core/key-rules.js';
import type { ObservedState, Plan } from '../../core/model.js';
import type { ClusterReader, OpenSandbox } from '../../core/ports.js';
import { buildClusterCopy, type ClusterCopy, touchedNodes, waitedOutLocks } from '../../core/rehearse/copy.js';
import { factsOptions } from '../../core/rehearse/kinds-copy.js';
import { type Rehearsal, rehearsalOf } from '../../core/rehearse/outcome.js';
import { errorMessage } from '../../util/error-message.js';
import { executePlan } from '../execute-plan.js';
import { skippingClock } from './skipping-clock.js';

/** Guests applied at once on the copy. */
const REHEARSAL_CONCURRENCY = 32;

/** Inputs of {@link rehearsePlan}. */
export interface RehearseInput {
  plan: Plan;
  /** What the plan was made from: the guests of the copy are these reads. */
  observed: ObservedState;
  readers: Readonly<Record<string, ClusterReader>>;
  openSandbox: OpenSandbox;
  /** Per cluster, the host-reaching options the server's policy allows (as the real apply gets them). */
  allowHostAccess?: Readonly<Record<string, readonly HostAccessRule[]>>;
  /** Milliseconds, for the rehearsal's own time; default `Date.now`. */
  now?: () => number;
}

/**
 * Rehearses the apply of `plan`: its guests and its items of other kinds, in their phases, as
 * `executePlan` carries them out. A cluster whose facts cannot be read is reported as not
 * rehearsed, never as applied.
 */
export async function rehearsePlan(input: RehearseInput): Promise<Rehearsal> {
  const now = input.now ?? Date.now;
  const started = now();
  const skipped: Record<string, string> = {};
  const copies: ClusterCopy[] = [];
  let requests = 0;
  await Promise.all(
    [...touchedNodes(input.plan)].map(async ([cluster, nodes]) => {
      const reader = input.readers[cluster];
      const observed = input.observed.clusters[cluster];
      if (!reader?.readFacts || !observed) {
        skipped[cluster] = observed ? 'its connection cannot read cluster facts' : 'the cluster was not read for the plan';
        return;
      }
      try {
        const facts = await reader.readFacts([...nodes].sort(), factsOptions(input.plan, cluster));
        requests += facts.requests;
        copies.push(buildClusterCopy(input.plan, observed, facts));
      } catch (err) {
        skipped[cluster] = `its facts could not be read (${errorMessage(err)})`;
      }
    }),
  );
  const copied = new Set(copies.map((c) => c.cluster));
  const plan: Plan = {
    ...input.plan,
    guests: input.plan.guests.filter((g) => copied.has(g.cluster)),
    objects: input.plan.objects.filter((o) => copied.has(o.cluster)),
  };
  if (plan.guests.length === 0 && plan.objects.length === 0)
    return rehearsalOf(plan, emptyResult(), { skipped, requests, ms: now() - started });
  const locked: Record<string, string> = {};
  for (const copy of copies) for (const [vmid, lock] of waitedOutLocks(copy)) locked[`${copy.cluster}/${vmid}`] = lock;
  const sandbox = await input.openSandbox(copies);
  try {
    const result = await executePlan(plan, sandbox.writers, {
      ...(input.allowHostAccess ? { allowHostAccess: input.allowHostAccess } : {}),
      // The apply waits out a lock the plan saw (it never clears one): on the copy the wait
      // skips ahead and the lock ends as the job that holds it would.
      clock: skippingClock((ms) => sandbox.skip(ms)),
      // The per-cluster and per-node limits protect a real cluster; the copy has none to protect,
      // and each guest's steps stay strictly in order whatever the limits.
      clusterConcurrency: REHEARSAL_CONCURRENCY,
      nodeConcurrency: REHEARSAL_CONCURRENCY,
    });
    return rehearsalOf(plan, result, { skipped, requests, ms: now() - started, locked });
  } finally {
    await sandbox.close();
  }
}

function emptyResult(): Parameters<typeof rehearsalOf>[1] {
  const at = new Date(0).toISOString();
  return { version: 1, startedAt: at, finishedAt: at, guests: [] };
}
