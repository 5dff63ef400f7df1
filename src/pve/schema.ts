/**
 * Shapes of the Proxmox responses the client reads. Loose objects: Proxmox adds fields between
 * versions and the client must not break on them; only what the client uses is checked.
 */
import { z } from 'zod';

/** Proxmox emits integers and booleans as numbers, most other values as strings. */
const Scalar = z.union([z.string(), z.number()]);

/** `{"data": …}` — every JSON response; `total` on paged lists (task log). */
export const Envelope = z.looseObject({
  data: z.unknown(),
  total: z.number().optional(),
});
export type Envelope = z.infer<typeof Envelope>;

/** `GET /version`. */
export const PveVersion = z.looseObject({
  version: z.string(),
  release: z.string().optional(),
  repoid: z.string().optional(),
});
export type PveVersion = z.infer<typeof PveVersion>;

/** One entry of `GET /nodes`. */
export const PveNode = z.looseObject({
  node: z.string(),
  status: z.string().optional(),
});
export type PveNode = z.infer<typeof PveNode>;

/** One entry of `GET /cluster/resources` (any type; the client keeps qemu/lxc). */
export const ClusterResource = z.looseObject({
  type: z.string(),
  vmid: z.number().optional(),
  node: z.string().optional(),
  name: z.string().optional(),
  status: z.string().optional(),
  tags: z.string().optional(),
  lock: z.string().optional(),
  template: Scalar.optional(),
  hastate: z.string().optional(),
});
export type ClusterResource = z.infer<typeof ClusterResource>;

/** One entry of `GET /nodes/{node}/qemu` or `/lxc`. */
export const NodeGuest = z.looseObject({
  vmid: z.union([z.number(), z.string()]),
  status: z.string().optional(),
  name: z.string().optional(),
  tags: z.string().optional(),
  lock: z.string().optional(),
  template: Scalar.optional(),
});
export type NodeGuest = z.infer<typeof NodeGuest>;

/** One entry of `GET …/pending`: `value` current, `pending` queued, `delete` 1 or 2 (forced). */
export const PendingEntry = z.looseObject({
  key: z.string(),
  value: Scalar.optional(),
  pending: Scalar.optional(),
  delete: z.number().optional(),
});
export type PendingEntry = z.infer<typeof PendingEntry>;

/** `GET …/config`: option → value; non-scalar entries (lxc raw `lxc` pairs) are dropped. */
export const GuestConfig = z.record(z.string(), z.unknown());

/** `GET …/status/current`. */
export const GuestStatus = z.looseObject({
  status: z.string(),
  qmpstatus: z.string().optional(),
  lock: z.string().optional(),
  /** `get_service_status`: `managed` 1 with the HA manager's service state, or 0. */
  ha: z.looseObject({ managed: z.union([z.number(), z.boolean()]).optional(), state: z.string().optional() }).optional(),
});
export type GuestStatus = z.infer<typeof GuestStatus>;

/** `GET /nodes/{node}/tasks/{upid}/status`; `exitstatus` only once stopped. */
export const TaskStatus = z.looseObject({
  upid: z.string(),
  node: z.string().optional(),
  type: z.string().optional(),
  id: z.union([z.string(), z.number()]).optional(),
  user: z.string().optional(),
  status: z.string(),
  exitstatus: z.string().optional(),
  starttime: z.number().optional(),
});
export type TaskStatus = z.infer<typeof TaskStatus>;

/** One entry of `GET /nodes/{node}/tasks`; `status` is the exit status once the task ended. */
export const TaskListEntry = z.looseObject({
  upid: z.string(),
  type: z.string().optional(),
  id: z.union([z.string(), z.number()]).optional(),
  user: z.string().optional(),
  status: z.string().optional(),
});
export type TaskListEntry = z.infer<typeof TaskListEntry>;

/** One line of `GET /nodes/{node}/tasks/{upid}/log`. */
export const TaskLogLine = z.looseObject({
  n: z.number(),
  t: z.string(),
});
export type TaskLogLine = z.infer<typeof TaskLogLine>;

/** A UPID string (create, power, destroy, move, qemu config POST). */
export const Upid = z.string().startsWith('UPID:');

/** One entry of `GET …/qemu/{vmid}/snapshot` (`snapshot_list`): a snapshot, or `current`. */
export const SnapshotEntry = z.looseObject({
  name: z.string(),
  snaptime: z.number().optional(),
  description: z.string().optional(),
  parent: z.string().optional(),
});

/** One entry of `GET /cluster/resources?type=storage` (`extract_storage_stats`): what the plan reads of it. */
export const StorageResource = z.looseObject({
  storage: z.string(),
  plugintype: z.string().optional(),
});

/** `GET /cluster/nextid`: a JSON string in real PVE although the schema says integer. */
export const NextId = z.union([z.number().int(), z.string().regex(/^\d+$/)]).transform(Number);
