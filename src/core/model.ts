import type { GuestKind, GuestType } from './guest-flavours.js';
import type { HostAccessRule } from './key-rules.js';

/**
 * The shared vocabulary of the pure core: what a spec says, what a cluster looks like when read,
 * and what a plan proposes. Adapters (the Proxmox client, the CLI, the GitHub app) translate to
 * and from these types; nothing here does I/O.
 */

// The guest type is defined with its flavours; it is exported here too because it is the shared
// vocabulary's word, and the modules that read the flavours must not import this file back.

/** Where a spec document came from, so every error can point at `file:line:col`. */
export interface SourceRef {
  file: string;
  line: number;
  col: number;
}

/** A `kind: Cluster` document: policy only, never a URL or credential. */
export interface ClusterSpec {
  name: string;
  vmids: { lower: number; upper: number };
  ownerTag: string;
  nodes: string[];
  storages?: string[];
  bridges?: string[];
  prune: boolean;
  /** Default restart policy of its guests (`core/spec/restart-policy.ts`); absent: `never`. */
  restart?: RestartPolicy;
  /** Restarts in flight at once on the cluster (absent: 1). */
  restartsInFlight?: number;
  /** Apply windows of its guests (`core/spec/apply-windows.ts`); absent: applies any time. */
  windows?: string[];
  /** Snapshot policy of its VMs (`core/plan/plan-snapshot.ts`); absent: never. */
  snapshot?: SnapshotPolicy;
  /** Snapshots this tool keeps per VM (absent: 3). */
  snapshotsKept?: number;
  source: SourceRef;
}

type PowerState = 'running' | 'stopped' | 'ignore';

/** When an apply snapshots a VM first (`snapshot:`, README "Snapshots first"). */
export type SnapshotPolicy = 'always' | 'risky' | 'never';

/** A snapshot the plan announces before the VM's apply (`GuestPlan.snapshot`). */
export interface PlannedSnapshot {
  /** Why, for the reviewer. */
  reason: string;
  /** Snapshots of this tool kept on the VM; the oldest past it are deleted after a new one. */
  keep: number;
}

/** A restart the plan announces (`GuestPlan.restart`). */
export interface PlannedRestart {
  /** Why, for the reviewer: the keys left pending. */
  reason: string;
  /** A hard stop may follow a shutdown that did not finish within `timeout`. */
  force: boolean;
  /** Seconds the clean shutdown may take. */
  timeout: number;
  /** Restarts in flight at once on the guest's cluster, at most (its Cluster document's `restartsInFlight`). */
  inFlight: number;
  /** `restart: in-window`: only inside one of the guest's apply windows; an apply outside one leaves the values pending. */
  inWindow?: boolean;
}

/** A restart policy (`restart:`, README "Restarts"), defaults filled in (`core/spec/restart-policy.ts`). */
export interface RestartPolicy {
  policy: 'never' | 'allowed' | 'in-window';
  /** A hard stop may follow a clean shutdown that did not finish within `timeout`. */
  force: boolean;
  /** Seconds a clean shutdown may take. */
  timeout: number;
}

/**
 * A `kind: VM` or `kind: Container` document after parsing. `config` holds Proxmox option names
 * with values already in Proxmox's wire syntax (strings), e.g. `{ memory: '8192', tags: 'a;b' }`.
 */
/** Where a guest is cloned from (`create.clone`): a template's name or VMID on the guest's cluster, and how. */
export interface CloneSource {
  /** The template's name, or its VMID written as digits. */
  template: string;
  /** A full copy; Proxmox's default for a template is a linked clone. */
  full?: boolean;
  /** Target storage of a full clone. */
  storage?: string;
  /** Disk format of a full clone of a VM. */
  format?: string;
}

export interface GuestSpec {
  kind: GuestKind;
  type: GuestType;
  name: string;
  cluster: string;
  node: string;
  /** The identity. Always set after loading: pinned in the spec or derived from `cluster/name`. */
  vmid: number;
  /** True when the VMID was derived rather than written in the spec. */
  vmidDerived: boolean;
  power: PowerState;
  state: 'present' | 'absent';
  adopt: boolean;
  ignore: string[];
  config: Record<string, string>;
  /**
   * Top-level keys that another kind adds to guest documents (a guest's `pool:`), by key, as its
   * kind's schema read them (`ObjectKind.guestKeys`): that kind plans and applies them. JSON values.
   */
  refs?: Record<string, unknown>;
  /**
   * Parameters Proxmox takes only when creating the guest (a container's `ostemplate`, say): sent
   * with the create, never compared afterwards.
   */
  createOptions?: Record<string, string>;
  /** The guest's own restart policy; absent: its cluster's. */
  restart?: RestartPolicy;
  /** Names of guests of the same cluster that apply before this one. */
  dependsOn?: string[];
  /** `create.clone`: the guest is created as a clone of a template on its cluster, not from scratch. */
  clone?: CloneSource;
  /** `template: true`: converted to a template once created, never started. */
  template?: boolean;
  /** `cloudinit: regenerate`: a running VM's cloud-init drive is generated again after a cloud-init change. */
  regenerateCloudinit?: boolean;
  /** The guest's own apply windows, in place of its cluster's (`core/spec/apply-windows.ts`). */
  windows?: string[];
  /** The VM's own snapshot policy, in place of its cluster's. */
  snapshot?: SnapshotPolicy;
  source: SourceRef;
  /** Source positions of individual config keys, for annotations on the YAML line. */
  keySources?: Record<string, SourceRef>;
}

/**
 * A document of a kind other than the guest (a `kind: Pool`, say) after loading: the envelope
 * every kind shares, and the kind's own fields, already checked by its schema. Its kind module
 * (`core/kinds/`) is the only code that reads `fields`.
 */
export interface ObjectSpec {
  /** The kind's registry name (`pool`), not the document name. */
  kind: string;
  /** The document name as written (`Pool`). */
  document: string;
  cluster: string;
  /** The object's identifier within its kind on the cluster (a pool's id). */
  id: string;
  state: 'present' | 'absent';
  fields: Record<string, unknown>;
  source: SourceRef;
}

/** Every spec document of a repository at one revision, already validated. */
export interface SpecSet {
  clusters: ClusterSpec[];
  guests: GuestSpec[];
  /** Documents of the other kinds (core/kinds/registry.ts), in file order. Absent: none. */
  objects?: ObjectSpec[];
}

/** One line of `GET /cluster/resources?type=vm`, the cheap cluster-wide listing. */
export interface ListedGuest {
  vmid: number;
  type: GuestType;
  node: string;
  name?: string;
  status?: string;
  /** Raw tag string as Proxmox stores it (`a;b`), from the live config. */
  tags?: string;
  lock?: string;
  template?: boolean;
  /** The HA manager's service state of an HA-managed guest (`/cluster/resources` `hastate`, HA-15). */
  hastate?: string;
}

/**
 * One guest as read for planning: `GET …/pending` gives current values, queued pending values,
 * pending deletions and the digest in a single call, so the digest guards exactly what was read.
 */
export interface ObservedGuest {
  vmid: number;
  type: GuestType;
  node: string;
  /** `running`, `stopped`, … from status/current or the listing. */
  status: string;
  digest: string;
  /** Values in effect now (the main config section), stringified as Proxmox returns them. */
  current: Record<string, string>;
  /** Values queued for the next restart (`[PENDING]`). */
  pending: Record<string, string>;
  /** Keys queued for deletion at the next restart. */
  pendingDelete: string[];
  /**
   * Set when the guest is HA-managed (`status/current`'s `ha`): its power is the HA manager's,
   * whose start and stop tasks end before the guest changes state (docs/proxmox-behaviour.md, HAP-…).
   */
  ha?: { state?: string };
}

/** What the planner knows about one cluster: its listing and the guests read in full. */
export interface ObservedCluster {
  name: string;
  /** Nodes the API reported (online or not). */
  nodes: string[];
  listing: ListedGuest[];
  /** Guests read in full, by VMID. Only guests in scope need to be here. */
  guests: Record<number, ObservedGuest>;
  /** Guests whose read failed, by VMID, with the reason. */
  readErrors?: Record<number, string>;
  /**
   * VMIDs in scope that the listing does not show, with Proxmox's cluster-wide answer whether
   * they exist (`GET /cluster/nextid?vmid=N`): true means a guest holds the VMID but the token
   * cannot see it. A VMID missing here was not asked about.
   */
  unlisted?: Record<number, boolean>;
  /**
   * Each storage's plugin type by id, read when a guest in scope may be snapshotted
   * (`core/plan/plan-snapshot.ts`); absent: not read. A storage the token may not see is not in it.
   */
  storageTypes?: Record<string, string>;
  /** Why the storages could not be read, when they were asked for and the read failed. */
  storageTypesError?: string;
  /** What each kind other than the guest read for the plan, by kind name (`KindModule.observe`). */
  objects?: Record<string, unknown>;
  /** Kinds whose read failed, with the reason. */
  objectErrors?: Record<string, string>;
}

export interface ObservedState {
  clusters: Record<string, ObservedCluster>;
  /** Clusters that could not be read at all, with the reason. */
  errors?: Record<string, string>;
}

/** How a change reaches the running guest. */
export type Impact = 'live' | 'pending-restart' | 'needs-stop' | 'data-loss';

/**
 * Severity classes, in rising order. `host-access` is the highest: the change reaches beyond the
 * guest into its host (see `key-rules.ts`), and only a server-side policy allows it.
 */
export type Severity = 'read-only' | 'configuration' | 'service-impact' | 'data-loss' | 'host-access';

/** One config key change: `from` undefined means added, `to` undefined means deleted. */
export interface KeyChange {
  key: string;
  from?: string;
  to?: string;
  impact: Impact;
  /** Set when the old or the new value reaches the host (see {@link HostAccessItem}). */
  severity?: 'host-access';
}

/** A change of one key whose old or new value reaches beyond the guest into its host. */
export interface HostAccessItem {
  key: string;
  /** The kind of option, as the server's `allowHostAccess` policy names it. */
  rule: HostAccessRule;
  /** What the value does to the host. */
  reason: string;
  /** What Proxmox demands of whoever writes it (`root@pam`, or a privilege). */
  requires: string;
  /** A form an API token may set, when Proxmox offers one. */
  alternative?: string;
  /** Whether the server's policy for the cluster allows it (set when the plan checked the policy). */
  allowed?: boolean;
}

/**
 * The steps the executor carries out for one guest, in order. Each step is precise enough that
 * re-planning after a partial apply yields exactly the steps not yet done.
 */
export type Operation =
  | { op: 'create'; node: string; params: Record<string, string> }
  | {
      op: 'config';
      set: Record<string, string>;
      delete: string[];
      /** Each touched key's value when planned (absent: not set), so apply can tell what moved. */
      from: Record<string, string>;
    }
  | { op: 'resize'; disk: string; size: string; from: string }
  | { op: 'move-disk'; disk: string; storage: string; from: string }
  | { op: 'start' }
  | { op: 'shutdown' }
  | { op: 'stop' }
  | { op: 'destroy' }
  | {
      /**
       * Creates the guest as a clone of a template (`POST …/clone` on the template's node):
       * `source` is the template as the plan saw it, `config` its config then, `params` what the
       * clone call takes besides (`name`/`hostname`, `pool`, `target`, `full`, `storage`, `format`).
       */
      op: 'clone';
      node: string;
      source: { vmid: number; node: string; name: string };
      full: boolean;
      config: Record<string, string>;
      params: Record<string, string>;
    }
  /** Converts the guest to a template (`POST …/template`); it is never started afterwards. */
  | { op: 'template' }
  /** Generates a running VM's cloud-init drive again (`PUT …/cloudinit`), with the config write before it. */
  | { op: 'cloudinit' };

/** A key where the cluster differs from the base branch's spec: changed outside git. */
export interface DriftItem {
  key: string;
  /** Value the base spec wants (undefined: the base spec does not set it). */
  expected?: string;
  /** Value on the cluster (undefined: not set). */
  actual?: string;
}

/** A value accepted by Proxmox but not yet in effect (running guest, not restarted). */
export interface PendingItem {
  key: string;
  current?: string;
  pending?: string;
  delete?: boolean;
}

export type GuestAction = 'create' | 'update' | 'destroy' | 'noop' | 'orphan' | 'error';

/**
 * What every plan item says, whatever its kind (docs/adding-a-kind.md): renderers, the queue and
 * the stored-plan check read only these fields; the rest of an item is its kind's payload.
 */
export interface ItemEnvelope<Op = unknown> {
  /** The kind's registry name (`guest`, `pool`). */
  kind: string;
  /** The object's key as text (`core/kinds/resource-key.ts`): unique in a plan. */
  key: string;
  cluster: string;
  /** What a person calls the object (a guest's name, a pool's id). */
  name: string;
  action: GuestAction;
  changes: KeyChange[];
  operations: Op[];
  /** Changes made outside git that this item would revert. */
  drift: DriftItem[];
  errors: string[];
  warnings: string[];
  severity: Severity;
  source?: SourceRef;
}

/** One step of an object of a kind other than the guest; the kind declares its `op` names. */
export interface ObjectOperation {
  op: string;
  [field: string]: unknown;
}

/**
 * The plan for one object of a kind other than the guest: the envelope around the kind's payload,
 * which holds what its executor needs and nothing a renderer reads.
 */
export interface ObjectPlan extends ItemEnvelope<ObjectOperation> {
  /** Keys of items that must have applied before this one (a pool member's guest). */
  after?: string[];
  /**
   * The apply windows of the item's cluster (`core/spec/apply-windows.ts`): objects of other kinds
   * have none of their own. Absent: applies any time.
   */
  windows?: string[];
  /**
   * Set on a pull request's plan when the item follows a guest whose live values are withheld
   * (`GuestPlan.liveWithheld`): renderings for the pull request withhold its live values too.
   */
  liveWithheld?: boolean;
  payload: Record<string, unknown>;
}

/**
 * The plan for one guest. Its envelope fields sit beside the guest's own: they predate the
 * envelope, and every stored plan and renderer reads them there.
 */
export interface GuestPlan extends ItemEnvelope<Operation> {
  kind: 'guest';
  cluster: string;
  name: string;
  vmid: number;
  vmidDerived: boolean;
  type: GuestType;
  /** Node the guest lives on now, or the spec's node for a create. */
  node: string;
  action: GuestAction;
  /** Digest of the read the plan was made from (absent for creates and unread guests). */
  digest?: string;
  /** Set when the spec adopts an unowned guest: the plan adds the owner tag. */
  adopt?: boolean;
  /**
   * Set on a pull request's plan when the base branch does not own this existing guest
   * (docs/github-app.md, "How pull requests from forks are planned"): its live values are kept
   * here for the apply's comparison, but every rendering for the pull request withholds them
   * (`withholdLiveValues`), and its messages already name no live value.
   */
  liveWithheld?: boolean;
  changes: KeyChange[];
  operations: Operation[];
  drift: DriftItem[];
  pending: PendingItem[];
  errors: string[];
  warnings: string[];
  /** Changes that reach the host, whether the server's policy allows them or not. */
  hostAccess?: HostAccessItem[];
  impact?: Impact;
  severity: Severity;
  /** Spec file of the guest, when there is one. */
  source?: SourceRef;
  /** Keys (`cluster/vmid`) of the guests its spec `dependsOn`: it applies after them, held if one did not apply. */
  after?: string[];
  /**
   * Set when the apply will restart the guest (its policy is `allowed` and the change leaves
   * values pending): why, and how it is shut down.
   */
  restart?: PlannedRestart;
  /**
   * The apply windows in force for the guest (its own, else its cluster's; `core/spec/apply-windows.ts`):
   * the App's queue and the CLI apply it only inside one, unless told `--now`.
   */
  windows?: string[];
  /** Set when the apply snapshots the VM before its first write (`core/plan/plan-snapshot.ts`). */
  snapshot?: PlannedSnapshot;
  /**
   * What the executor needs to recompute this guest's change at apply time without the spec
   * files: the head spec (absent for orphans and removed specs) and the cluster's ownership policy.
   */
  target: { spec?: GuestSpec; ownerTag: string; prune: boolean };
}

export interface PlanSummary {
  create: number;
  update: number;
  destroy: number;
  noop: number;
  orphan: number;
  error: number;
  drifted: number;
  pending: number;
}

/**
 * A plan is data: versioned JSON that can be stored and applied later. Version 2 added the item
 * envelope (`kind`, `key`) and `objects`; `core/plan/stored-plan.ts` says how an older one loads.
 */
export interface Plan {
  version: 2;
  createdAt: string;
  /** Free-form label of what was planned: a git SHA, a directory. */
  ref?: string;
  clusters: string[];
  /**
   * The Cluster documents of the planned clusters, as the head branch has them: with each guest's
   * `target.spec`, what `validateStoredPlan` checks exactly as `validate` would before an apply.
   * Absent in plans that predate it (such a plan with guest specs is refused by that check).
   */
  clusterSpecs?: ClusterSpec[];
  guests: GuestPlan[];
  /** Items of the other kinds, in apply-phase order (core/kinds/registry.ts). */
  objects: ObjectPlan[];
  /** Errors not tied to one guest (an empty listing, an unreachable cluster). */
  errors: { cluster?: string; message: string }[];
  /** Notes not tied to one guest that a reviewer should see (e.g. an empty listing on a new cluster). */
  warnings: { cluster?: string; message: string }[];
  /**
   * Clusters read over a connection that does not protect the token: plain `http://`, or TLS
   * without verification. Recorded so the reviewer sees it, not only the operator's terminal.
   */
  insecureConnections?: InsecureConnection[];
  summary: PlanSummary;
}

/** How a connection fails to protect what it carries. */
export type InsecureTransport = 'http' | 'tls-unverified';

/** A cluster reached over an insecure connection. */
interface InsecureConnection {
  cluster: string;
  transport: InsecureTransport;
}

/**
 * What the server's connection configuration (never the spec repository) says about one cluster,
 * as far as planning is concerned.
 */
export interface ClusterAccess {
  /** Kinds of host-reaching options the server allows on this cluster. */
  allowHostAccess: readonly HostAccessRule[];
  /** Set when the connection is insecure. */
  insecure?: InsecureTransport;
}
