/**
 * Missing privileges never look like missing guests, over real HTTP against the simulator: a plan
 * token that sees only some guests gets an error naming VM.Audit for the others, never a create,
 * because `GET /cluster/nextid?vmid=N` answers from the cluster's VMID list whatever the token
 * may see (pve-manager `PVE/API2/Cluster.pm`, `nextid`: `PVE::Cluster::get_vmlist()`).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SpecSet } from '../../src/core/model.js';
import { planHasErrors } from '../../src/core/plan/plan-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runDrift, runPlan } from '../../src/engine/run-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { PveAlreadyExistsError } from '../../src/pve/errors.js';
import { byName, type Estate, loadExample, startEstate, withConfig } from '../engine/helpers.js';

let estate: Estate;
let specs: SpecSet;
const clients: PveClient[] = [];

beforeEach(async () => {
  estate = await startEstate({ template: true });
  specs = await loadExample();
  const plan = await runPlan({ head: specs, readers: estate.readers });
  await executePlan(plan, estate.writers, { lockPollMs: 20 });
});

afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  await estate.close();
});

/** A read-only client for lab whose token has VM.Audit only on `vmids`. */
function partialReader(vmids: number[]): { client: PveClient; adapter: PveClusterAdapter } {
  const id = `partial@pve!pl${vmids.join('-')}`;
  estate.sims.lab.sim.tokens.add({ id, secret: 's3cret', role: 'audit', vmids: new Set(vmids) });
  const client = new PveClient({ cluster: 'lab', url: estate.sims.lab.url, token: `${id}=s3cret`, readOnly: true, retries: 0 });
  clients.push(client);
  return { client, adapter: new PveClusterAdapter(client) };
}

describe('a token that sees only some guests', () => {
  it('is told by nextid that a hidden VMID exists, and that a free one is free', async () => {
    const web = byName(await runPlan({ head: specs, readers: estate.readers }))['lab/web-01']!.vmid;
    const { client, adapter } = partialReader([]);
    expect(await client.clusterResources()).toEqual([]);
    await expect(client.nextId(web)).rejects.toBeInstanceOf(PveAlreadyExistsError);
    await expect(client.nextId(web)).rejects.toThrow(`VM ${web} already exists`);
    expect(await adapter.vmidExists(web)).toBe(true);
    expect(await adapter.vmidExists(199_990)).toBe(false);
  });

  it('makes a base guest it cannot see a plan error naming VM.Audit on /vms/N, not a second create', async () => {
    const all = byName(await runPlan({ head: specs, readers: estate.readers }));
    const web = all['lab/web-01']!.vmid;
    const db = all['lab/db-01']!.vmid;
    const { adapter } = partialReader([web]);
    let head = withConfig(specs, 'web-01', 'lab', { memory: '8192' });
    head = withConfig(head, 'db-01', 'lab', { description: 'changed in the pull request' });
    const plan = await runPlan({ head, base: specs, readers: { ...estate.readers, lab: adapter } });
    const guests = byName(plan);
    expect(guests['lab/web-01']?.action).toBe('update');
    expect(guests['lab/db-01']?.action).toBe('error');
    expect(guests['lab/db-01']?.errors.join()).toContain(`lacks VM.Audit on /vms/${db}`);
    expect(plan.summary.create).toBe(0);
    expect(planHasErrors(plan)).toBe(true);
  });

  it('makes the drift report say which owned guests it cannot see, instead of reporting them missing', async () => {
    const all = byName(await runPlan({ head: specs, readers: estate.readers }));
    const { adapter } = partialReader([all['lab/web-01']!.vmid]);
    const drift = await runDrift({ head: specs, readers: { ...estate.readers, lab: adapter } });
    const hidden = drift.guests.filter((g) => g.cluster === 'lab' && g.action === 'error');
    expect(hidden.length).toBeGreaterThan(2);
    for (const g of hidden) expect(g.errors.join()).toContain(`lacks VM.Audit on /vms/${g.vmid}`);
    expect(drift.guests.filter((g) => g.drift.some((d) => d.key === '(guest)'))).toEqual([]);
  });
});

describe('GET /access/permissions in the simulator', () => {
  it('answers each role and each limited token as pve-access-control would', async () => {
    const admin = new PveClient({ cluster: 'lab', url: estate.sims.lab.url, token: estate.sims.lab.token, retries: 0 });
    const audit = new PveClient({ cluster: 'lab', url: estate.sims.lab.url, token: estate.sims.lab.auditToken, retries: 0 });
    clients.push(admin, audit);
    const tree = await admin.request<Record<string, Record<string, number>>>('GET', '/access/permissions');
    expect(tree['/vms']).toMatchObject({ 'VM.Allocate': 1, 'VM.PowerMgmt': 1 });
    const auditTree = await audit.request<Record<string, Record<string, number>>>('GET', '/access/permissions', { path: '/vms' });
    expect(Object.keys(auditTree)).toEqual(['/vms']);
    expect(auditTree['/vms']).toHaveProperty('VM.Audit', 1);
    expect(auditTree['/vms']).not.toHaveProperty('VM.Allocate');
    const { client } = partialReader([100101]);
    const limited = await client.request<Record<string, Record<string, number>>>('GET', '/access/permissions');
    expect(limited['/vms/100101']).toHaveProperty('VM.Audit', 1);
    expect(limited['/vms']).toBeUndefined();
  });
});
