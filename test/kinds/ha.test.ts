/**
 * The HA kind against the simulator over HTTP: the adapter's reads and writes, and the kind's
 * observe → plan → execute as the pipeline runs them, with real tokens. What a cluster answers is
 * the simulator's (docs/proxmox-behaviour.md, "HA resources"); nothing of our own is mocked.
 */
import { describe, expect, it } from 'vitest';
import { HA_DIGEST_ATTEMPTS, type HaObserved, haKind } from '../../src/core/kinds/ha/ha-kind.js';
import type { KindObserveInput, KindPlanInput } from '../../src/core/kinds/kind.js';
import type { GuestSpec, ObjectPlan } from '../../src/core/model.js';
import { PermissionDeniedError, PortError } from '../../src/core/port-errors.js';
import { HaAdapter } from '../../src/pve/kinds/ha-adapter.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { makeGuestSpec, makeSpecGuestPlan } from '../helpers/factories.js';
import { useKindSimulator } from './kind-simulator.js';
import { haConfig } from '../../src/pve/sim/kinds/ha/state.js';
import { WEB_CONFIG } from '../sim/helpers.js';

const SOURCE = { file: 'specs/lab.yaml', line: 1, col: 1 };
const LIMITED = 'ops@pve!limited=s3cret';

let sim: RunningSimulator;
let adapter: (token: string, readOnly?: boolean) => HaAdapter;
let writer: HaAdapter;
let reader: HaAdapter;

useKindSimulator(
  {
    storages: ['local-lvm'],
    tokens: [{ id: 'ops@pve!limited', secret: 's3cret', role: 'admin', vmids: [100, 101], guestsOnly: true }],
    guests: [
      { vmid: 100, type: 'qemu', node: 'pve-01', config: WEB_CONFIG },
      { vmid: 101, type: 'qemu', node: 'pve-01', config: 'name: db-01\n' },
      { vmid: 200, type: 'lxc', node: 'pve-01', config: 'hostname: ct-01\n' },
    ],
  },
  (client) => new HaAdapter(client),
  (kit) => {
    ({ sim, writer, reader, adapter } = kit);
  },
);

function guest(vmid: number, name: string, refs?: Record<string, unknown>, type: 'qemu' | 'lxc' = 'qemu'): GuestSpec {
  return makeGuestSpec({ type, vmid, name, ...(refs ? { refs } : {}), source: SOURCE });
}

interface Scope {
  headGuests: GuestSpec[];
  baseGuests?: GuestSpec[];
  hasBase?: boolean;
  full?: boolean;
}

async function planHa(scope: Scope, port: HaAdapter = reader): Promise<ObjectPlan[]> {
  const observeInput: KindObserveInput = {
    cluster: 'lab',
    head: [],
    base: [],
    headGuests: scope.headGuests,
    baseGuests: scope.baseGuests ?? [],
  };
  const observed: HaObserved = await haKind.observe(port, observeInput);
  const input: KindPlanInput<HaObserved> = {
    cluster: 'lab',
    head: [],
    ...(scope.hasBase || scope.baseGuests ? { base: [] } : {}),
    headGuests: scope.headGuests,
    baseGuests: scope.baseGuests ?? [],
    guestPlans: scope.headGuests.map((g) => makeSpecGuestPlan(g)),
    full: scope.full ?? false,
    observed,
  };
  return haKind.plan(input);
}

function only(items: ObjectPlan[]): ObjectPlan {
  expect(items).toHaveLength(1);
  const item = items[0] as ObjectPlan;
  haKind.checkStored(JSON.parse(JSON.stringify(item)) as ObjectPlan);
  return item;
}

describe('the HA adapter over HTTP', () => {
  it('creates, reads with the digest of the whole file, updates and deletes, in Proxmox words when refused', async () => {
    expect(await reader.readResource('vm:100')).toBeUndefined();
    await writer.createResource('vm:100', { state: 'started', max_restart: 2, failback: false, comment: 'web' });
    const read = await reader.readResource('vm:100');
    expect(read?.resource).toEqual({ sid: 'vm:100', state: 'started', max_restart: 2, failback: false, comment: 'web' });
    expect(read?.digest).toMatch(/^[0-9a-f]{40}$/);
    const again = await writer.createResource('vm:100', {}).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(PortError);
    expect((again as Error).message).toBe("create resource failed: resource ID 'vm:100' already defined");
    await writer.updateResource('vm:100', { max_relocate: 0 }, ['comment'], read?.digest as string);
    expect((await reader.readResource('vm:100'))?.resource).toEqual({
      sid: 'vm:100',
      state: 'started',
      max_restart: 2,
      max_relocate: 0,
      failback: false,
    });
    await writer.deleteResource('vm:100');
    expect(await reader.listResources()).toEqual([]);
  });

  it('needs Sys.Audit on / to read and Sys.Console on / to write', async () => {
    const limited = adapter(LIMITED, true);
    const denied = await limited.listResources().catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(PermissionDeniedError);
    expect((denied as Error).message).toContain('/, Sys.Audit');
    const refused = await adapter(sim.auditToken)
      .createResource('vm:100', {})
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PermissionDeniedError);
    expect((refused as Error).message).toContain('/, Sys.Console');
  });
});

describe('the HA kind: plan and apply over HTTP', () => {
  it('adds a resource, then plans nothing', async () => {
    const db = guest(101, 'db-01', { ha: { state: 'started', max_restart: 1, max_relocate: 1, failback: true, comment: 'primary db' } });
    const item = only(await planHa({ headGuests: [db] }));
    expect(item.key).toBe('lab/ha/101');
    expect(item.after).toEqual(['lab/101']);
    expect(item.operations).toEqual([
      {
        op: 'add-ha',
        vmid: 101,
        sid: 'vm:101',
        set: { state: 'started', max_restart: 1, max_relocate: 1, failback: true, comment: 'primary db' },
      },
    ]);
    expect(item.severity).toBe('service-impact');
    expect(item.changes).toContainEqual({ key: 'ha.comment', to: 'primary db', impact: 'live' });
    expect(await haKind.execute(item, writer, {})).toMatchObject({ status: 'applied' });
    expect(haConfig(sim.sim).ids.get('vm:101')?.options).toEqual({
      state: 'started',
      max_restart: '1',
      max_relocate: '1',
      failback: '1',
      comment: 'primary db',
    });
    expect(only(await planHa({ headGuests: [db] })).action).toBe('noop');
  });

  it('names a container ct:, and a guest without ha: is not planned', async () => {
    const ct = guest(200, 'ct-01', { ha: {} }, 'lxc');
    const item = only(await planHa({ headGuests: [ct, guest(100, 'web-01')] }));
    expect(item.operations[0]).toMatchObject({ op: 'add-ha', sid: 'ct:200', set: {} });
    expect(await haKind.execute(item, writer, {})).toMatchObject({ status: 'applied' });
    expect([...haConfig(sim.sim).ids.keys()]).toEqual(['ct:200']);
  });

  it('updates only the fields that changed, deletes a field left out, and keeps what an operator set outside them', async () => {
    await writer.createResource('vm:101', { state: 'started', comment: 'old', max_restart: 3 });
    haConfig(sim.sim).ids.get('vm:101')!.options.group = 'legacy';
    const db = guest(101, 'db-01', { ha: { state: 'stopped', max_restart: 3 } });
    const item = only(await planHa({ headGuests: [db] }));
    expect(item.operations).toEqual([
      {
        op: 'update-ha',
        vmid: 101,
        sid: 'vm:101',
        from: { state: 'started', max_restart: 3, comment: 'old' },
        set: { state: 'stopped' },
        delete: ['comment'],
      },
    ]);
    expect(item.changes).toEqual([
      { key: 'ha.state', from: 'started', to: 'stopped', impact: 'needs-stop' },
      { key: 'ha.comment', from: 'old', impact: 'live' },
    ]);
    expect(item.severity).toBe('service-impact');
    expect(await haKind.execute(item, writer, {})).toMatchObject({ status: 'applied' });
    expect(haConfig(sim.sim).ids.get('vm:101')?.options).toEqual({ state: 'stopped', max_restart: '3', group: 'legacy' });
    expect(only(await planHa({ headGuests: [db] })).action).toBe('noop');
  });

  it('a comment change is configuration, not service impact', async () => {
    await writer.createResource('vm:101', { comment: 'old' });
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: { comment: 'new' } })] }));
    expect(item.changes).toEqual([{ key: 'ha.comment', from: 'old', to: 'new', impact: 'live' }]);
    expect(item.severity).toBe('configuration');
  });

  it('removes the resource for ha: null, and nothing when there is none', async () => {
    await writer.createResource('vm:101', { state: 'started' });
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: null })] }));
    expect(item.operations).toEqual([{ op: 'remove-ha', vmid: 101, sid: 'vm:101', from: { state: 'started' } }]);
    expect(await haKind.execute(item, writer, {})).toMatchObject({ status: 'applied' });
    expect(haConfig(sim.sim).ids.size).toBe(0);
    expect(only(await planHa({ headGuests: [guest(100, 'web-01', { ha: null })] })).action).toBe('noop');
  });

  it('is a conflict, with nothing written, when the resource was edited since the review', async () => {
    await writer.createResource('vm:101', { state: 'started' });
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: { state: 'stopped' } })] }));
    await writer.updateResource('vm:101', { max_restart: 5 }, [], '');
    const outcome = await haKind.execute(item, writer, {});
    expect(outcome.status).toBe('conflict');
    expect(outcome.conflict).toEqual(['HA resource vm:101 max_restart: reviewed 1, now 5']);
    expect(haConfig(sim.sim).ids.get('vm:101')?.options).toEqual({ state: 'started', max_restart: '5' });
  });

  it('is a conflict when the resource was added since a review that planned its creation', async () => {
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: { state: 'stopped' } })] }));
    await writer.createResource('vm:101', { state: 'started' });
    expect(await haKind.execute(item, writer, {})).toMatchObject({ status: 'conflict' });
    expect(haConfig(sim.sim).ids.get('vm:101')?.options).toEqual({ state: 'started' });
  });

  it("re-reads and retries when another guest's HA edit makes the digest stale", async () => {
    await writer.createResource('vm:101', { state: 'started' });
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: { state: 'stopped' } })] }));
    const config = haConfig(sim.sim);
    config.afterRead.push(() => config.ids.set('vm:100', { type: 'vm', options: { comment: 'operator' } }));
    const outcome = await haKind.execute(item, writer, {});
    expect(outcome.status).toBe('applied');
    expect(config.ids.get('vm:101')?.options).toEqual({ state: 'stopped' });
    expect(config.ids.get('vm:100')?.options).toEqual({ comment: 'operator' });
  });

  it(`reports after ${HA_DIGEST_ATTEMPTS} stale digests in a row, retryable, with nothing written`, async () => {
    await writer.createResource('vm:101', { state: 'started' });
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: { state: 'stopped' } })] }));
    const config = haConfig(sim.sim);
    for (let i = 0; i < HA_DIGEST_ATTEMPTS; i++) config.afterRead.push(() => config.ids.set(`vm:${300 + i}`, { type: 'vm', options: {} }));
    const outcome = await haKind.execute(item, writer, {});
    expect(outcome).toMatchObject({ status: 'failed', retryable: true });
    expect(outcome.error).toContain('detected modified configuration - file changed by other user? Try again.');
    expect(config.ids.get('vm:101')?.options).toEqual({ state: 'started' });
  });

  it('is a conflict, not a retry, when the stale digest came from an edit of this very resource', async () => {
    await writer.createResource('vm:101', { state: 'started' });
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: { state: 'stopped' } })] }));
    const config = haConfig(sim.sim);
    config.afterRead.push(() => {
      (config.ids.get('vm:101') as { options: Record<string, string> }).options.comment = 'operator';
    });
    const outcome = await haKind.execute(item, writer, {});
    expect(outcome.status).toBe('conflict');
    expect(outcome.conflict).toEqual(['HA resource vm:101 comment: reviewed none, now operator']);
    expect(config.ids.get('vm:101')?.options).toEqual({ state: 'started', comment: 'operator' });
  });

  it('reports drift when the live resource differs from the base spec', async () => {
    await writer.createResource('vm:101', { state: 'stopped', max_relocate: 4 });
    const db = guest(101, 'db-01', { ha: { state: 'started' } });
    const item = only(await planHa({ headGuests: [db], baseGuests: [db], full: true }));
    expect(item.drift).toEqual([
      { key: 'ha.state', expected: 'started', actual: 'stopped' },
      { key: 'ha.max_relocate', expected: '1', actual: '4' },
    ]);
    // A pull request that leaves ha: alone does not plan it.
    expect(await planHa({ headGuests: [db], baseGuests: [db] })).toEqual([]);
  });

  it('a token without Sys.Audit on / makes the item an error that names the privilege', async () => {
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: { state: 'started' } })] }, adapter(LIMITED, true)));
    expect(item.action).toBe('error');
    expect(item.operations).toEqual([]);
    expect(item.errors[0]).toMatch(/^cannot read HA resources: the token lacks Sys.Audit on \/ \(.*\/, Sys\.Audit.*\)$/);
  });

  it('an update Proxmox refuses for a service in error state fails with its words', async () => {
    await writer.createResource('vm:101', { state: 'started' });
    const item = only(await planHa({ headGuests: [guest(101, 'db-01', { ha: { state: 'stopped' } })] }));
    haConfig(sim.sim).errorState.add('vm:101');
    const outcome = await haKind.execute(item, writer, {});
    expect(outcome).toMatchObject({ status: 'failed', error: "service 'vm:101' in error state, must be disabled and fixed first" });
  });

  it('asks for Sys.Audit on / to plan and Sys.Console on / to apply, only where a guest writes ha:', () => {
    const guests = [guest(101, 'db-01', { ha: null })];
    expect(haKind.requiredPrivileges?.({ objects: [], guests }, 'read')).toEqual([
      { path: '/', privilege: 'Sys.Audit', why: 'to read HA resources' },
    ]);
    expect(haKind.requiredPrivileges?.({ objects: [], guests }, 'apply')).toEqual([
      { path: '/', privilege: 'Sys.Console', why: 'to add, change and remove HA resources' },
    ]);
    expect(haKind.requiredPrivileges?.({ objects: [], guests: [guest(100, 'web-01')] }, 'read')).toEqual([]);
  });
});
