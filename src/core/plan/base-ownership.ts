/**
 * What a pull request's plan may show of guests the base branch does not own (docs/github-app.md,
 * "How pull requests from forks are planned"): ownership is judged by the base's Cluster documents,
 * and an unowned guest's live values are marked withheld before any message names them. Rendering
 * the withheld values is `core/render/withhold-live.ts`.
 */
import { flavourOf } from '../guest-flavours.js';
import { hostAccessOf } from '../key-rules.js';
import type { ClusterSpec, GuestPlan, ListedGuest, ObservedGuest, SpecSet } from '../model.js';
import { hasOwnerTag } from './desired-config.js';
import { toError } from './plan-guest.js';

/**
 * What a pull request is shown instead of a live value of a guest the base branch does not own
 * (docs/github-app.md, "How pull requests from forks are planned").
 */
export const LIVE_WITHHELD = '(live value withheld: not owned by the base branch)';

/** What a pull request is shown instead of the live name of such a guest. */
export const NAME_WITHHELD = '(name withheld)';

/**
 * Whether the base branch owns the guest at `vmid` of `cluster`: the base branch has that Cluster
 * document, the VMID lies inside the document's range, and the guest on the cluster carries the
 * document's owner tag. Judged by the base, never the head: a pull request that widens its
 * Cluster document's range, changes its owner tag or claims a guest with `adopt: true` owns
 * nothing more until it is merged. A tagged guest of the base range without a base spec (an
 * orphan) is the base's: its `prune` would destroy it, and the reviewer must see which guest.
 */
function ownedByBase(baseClusters: ReadonlyMap<string, ClusterSpec>, cluster: string, vmid: number, liveTags: string | undefined): boolean {
  const doc = baseClusters.get(cluster);
  if (!doc || vmid < doc.vmids.lower || vmid >= doc.vmids.upper) return false;
  return hasOwnerTag(liveTags, doc.ownerTag);
}

/** The base's Cluster documents by name, for {@link ownedByBase}. */
export function baseClusterMap(base: SpecSet | undefined): Map<string, ClusterSpec> {
  return new Map((base?.clusters ?? []).map((c) => [c.name, c]));
}

/**
 * Marks an existing guest the base branch does not own as `liveWithheld`, and takes its live
 * name out of its messages and host-access reasons (they are shown on the pull request as they
 * are: annotations, the comment). Its changes, operations, drift and pending values keep their
 * live values, which the apply compares with what it reads then; `withholdLiveValues` hides them
 * from every rendering. A guest that does not exist has no live value to withhold.
 */
export function withholdUnowned(
  guest: GuestPlan,
  base: ReadonlyMap<string, ClusterSpec>,
  live: { listed?: ListedGuest | undefined; observed?: ObservedGuest | undefined },
): void {
  const { listed, observed } = live;
  if (!listed && !observed) return;
  if (ownedByBase(base, guest.cluster, guest.vmid, observed?.current.tags ?? listed?.tags)) return;
  guest.liveWithheld = true;
  if (guest.action === 'destroy') {
    // The head's range or owner tag reached it (prune, or state: absent): a pull request destroys nothing the base does not own.
    toError(
      guest,
      `refusing to destroy guest ${guest.vmid}: the base branch does not own it (outside its Cluster document's range, or without its owner tag); change the range or owner tag in a pull request of its own first`,
    );
  }
  const liveName = observed ? observed.current[flavourOf(observed.type).nameKey] : listed?.name;
  if (!guest.target.spec) guest.name = NAME_WITHHELD;
  if (liveName !== undefined && liveName !== '') {
    const scrub = (message: string): string =>
      message.replaceAll(`'${liveName}'`, `'${NAME_WITHHELD}'`).replaceAll(`(${liveName})`, NAME_WITHHELD);
    guest.errors = guest.errors.map(scrub);
    guest.warnings = guest.warnings.map(scrub);
  }
  for (const item of guest.hostAccess ?? []) {
    // A reason names the value that reaches the host: the spec's is shown, the live one is not.
    const to = guest.changes.find((c) => c.key === item.key)?.to;
    const finding = to !== undefined ? hostAccessOf(guest.type, item.key, to) : undefined;
    item.reason = finding?.reason ?? `has a current value that reaches the host ${LIVE_WITHHELD}`;
  }
}
