/**
 * zod schemas of the simulator's fixture files (documented in fixture.ts). Loose on input types
 * where TypeScript's view of an imported JSON file would otherwise not be assignable.
 */
import { poolIdProblem } from '../../core/kinds/pool/pool-id.js';
import { z } from 'zod';

const NODE_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;

const ConfigValue = z.union([z.string(), z.number(), z.boolean()]);

/** One guest of a fixture. */
const SimFixtureGuest = z.strictObject({
  vmid: z.number().int().min(100).max(999_999_999),
  // A plain string on input so JSON imported with `type: string` is assignable; checked here.
  type: z.string().pipe(z.enum(['qemu', 'lxc'])),
  node: z.string().regex(NODE_NAME, 'invalid node name'),
  running: z.boolean().optional(),
  // Values may be absent so TypeScript's view of an imported JSON fixture (`key?: undefined` for
  // keys other guests have) is assignable.
  config: z.union([z.string(), z.record(z.string().regex(/^[a-z][a-z0-9_-]*$/i, 'invalid config key'), ConfigValue.optional())]),
  lock: z.string().optional(),
});

/** An API token of a fixture. */
const SimFixtureToken = z.strictObject({
  id: z.string().regex(/^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+![A-Za-z][A-Za-z0-9.\-_]+$/, 'expected USER@REALM!TOKENID'),
  secret: z.string().min(1),
  role: z.string().pipe(z.enum(['admin', 'audit'])),
  vmids: z.array(z.number().int()).optional(),
  guestsOnly: z.boolean().optional(),
});

const STORAGE_ID = /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i;
const CONTENT_TYPE = z.enum(['backup', 'images', 'import', 'iso', 'rootdir', 'snippets', 'vztmpl']);

/** A storage of a fixture: an id, or its `storage.cfg` entry. */
const SimFixtureStorage = z.union([
  z.string().regex(STORAGE_ID, 'invalid storage id'),
  z.strictObject({
    storage: z.string().regex(STORAGE_ID, 'invalid storage id'),
    type: z.string().min(1).optional(),
    content: z.array(z.string().pipe(CONTENT_TYPE)).optional(),
    shared: z.boolean().optional(),
    nodes: z.array(z.string().regex(NODE_NAME, 'invalid node name')).min(1).optional(),
    /** Capacity and bytes in use at start (a rehearsal's copy: `maxdisk` and `disk` of `/cluster/resources`). */
    total: z.number().int().nonnegative().optional(),
    used: z.number().int().nonnegative().optional(),
    vgname: z.string().min(1).optional(),
  }),
]);

/** A file (template, ISO, snippet, backup) on a storage. */
const SimFixtureFile = z.strictObject({
  volid: z.string().regex(/^[a-z][a-z0-9\-_.]*[a-z0-9]:(vztmpl|iso|snippets|backup|import)\/[^/]+$/i, 'expected STORAGE:TYPE/NAME'),
  size: z.number().int().min(0).optional(),
  ctime: z.number().int().min(0).optional(),
});

/** A resource pool of a fixture: its id, or the pool with its comment and members. */
const SimFixturePool = z.union([
  z.string().refine((id) => poolIdProblem(id) === undefined, 'invalid pool id'),
  z.strictObject({
    poolid: z.string().refine((id) => poolIdProblem(id) === undefined, 'invalid pool id'),
    comment: z.string().optional(),
    vmids: z.array(z.number().int()).optional(),
    storage: z.array(z.string()).optional(),
  }),
]);

/** A whole fixture. */
export const SimFixture = z.strictObject({
  clusterName: z.string().optional(),
  nodes: z.array(z.string().regex(NODE_NAME, 'invalid node name')).min(1).optional(),
  storages: z.array(SimFixtureStorage).min(1).optional(),
  files: z.array(SimFixtureFile).optional(),
  pools: z.array(SimFixturePool).optional(),
  /** Bridges (and VNets) per node; a node not named here has every bridge (RHS-5). */
  bridges: z.record(z.string(), z.array(z.string())).optional(),
  /** CPUs per node (default 32); a VM start above them is refused (RHS-4). */
  nodeCpus: z.record(z.string(), z.number().int().min(1)).optional(),
  nextId: z.strictObject({ lower: z.number().int().min(100), upper: z.number().int() }).optional(),
  tokens: z.array(SimFixtureToken).optional(),
  guests: z.array(SimFixtureGuest).default([]),
});
export type SimFixture = z.input<typeof SimFixture>;
/** A fixture after validation and defaults. */
export type ParsedSimFixture = z.output<typeof SimFixture>;
