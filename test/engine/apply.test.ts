import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countApplyResult } from '../../src/core/apply-result.js';
import type { ListedGuest, SpecSet } from '../../src/core/model.js';
import { planErrorLines, planHasChanges, planHasErrors } from '../../src/core/plan/plan-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runDrift, runPlan } from '../../src/engine/run-plan.js';
import type { GuestRef } from '../../src/core/ports.js';
import { PveClient } from '../../src/pve/client.js';
import { byName, loadExample, rawValue, startEstate, withConfig, writes, type Estate } from './helpers.js';

let estate: Estate;
let specs: SpecSet;

beforeEach(async () => {
  estate = await startEstate({ template: true });
  specs = await loadExample();
});

afterEach(async () => {
  await estate.close();
});

const fast = { lockPollMs: 20 };

/** Plans and applies the example so later steps start from a converged estate. */
async function converge(): Promise<void> {
  const plan = await runPlan({ head: specs, readers: estate.readers });
  const result = await executePlan(plan, estate.writers, fast);
  expect(result.guests.filter((g) => g.status !== 'applied' && g.status !== 'unchanged')).toEqual([]);
}

describe('apply against the simulator', () => {
  it('applies specs-example to empty clusters, then plans nothing and writes nothing', async () => {
    const plan = await runPlan({ head: specs, readers: estate.readers });
    expect(planHasErrors(plan)).toBe(false);
    // Every guest but the retired one (state: absent, nothing to destroy) is created.
    expect(plan.summary).toMatchObject({ create: 13, update: 0, destroy: 0, noop: 2, error: 0 });

    const result = await executePlan(plan, estate.writers, fast);
    expect(countApplyResult(result.guests)).toEqual({ applied: 13, unchanged: 2, conflict: 0, failed: 0, skipped: 0 });
    const created = result.guests.find((g) => g.name === 'db-01' && g.cluster === 'lab');
    expect(created?.steps.map((s) => s.op)).toEqual(['create', 'start']);
    expect(created?.steps[0]?.upid).toMatch(/^UPID:pve-01:[0-9A-F]{8}:[0-9A-F]{8,9}:[0-9A-F]{8}:qmcreate:100201:/);
    // The task's own exit status, as Proxmox reports it when the task ends.
    expect(created?.steps[0]?.exitStatus).toBe('OK');

    const again = await runPlan({ head: specs, readers: estate.readers });
    expect(planHasChanges(again)).toBe(false);
    expect(again.summary).toMatchObject({ noop: 15, create: 0, update: 0, destroy: 0, error: 0 });
    expect(again.guests.flatMap((g) => g.changes)).toEqual([]);

    const before = writes(estate);
    const second = await executePlan(again, estate.writers, fast);
    expect(countApplyResult(second.guests).unchanged).toBe(15);
    // The first, now stale, plan applied once more: every guest is re-read, nothing is written.
    const replay = await executePlan(plan, estate.writers, fast);
    expect(countApplyResult(replay.guests)).toMatchObject({ unchanged: 15, applied: 0, conflict: 0 });
    expect(writes(estate)).toBe(before);

    // One writer per guest, ever.
    for (const sim of Object.values(estate.sims)) {
      for (const [vmid, g] of Object.entries(sim.sim.stats().guests)) {
        expect({ vmid, max: g.maxConcurrentWrites }).toEqual({ vmid, max: 1 });
      }
    }
  });

  it('plans nothing right after an apply although the listing still shows old power states (RRD lag)', async () => {
    for (const sim of Object.values(estate.sims)) sim.sim.setRrdLag(60_000);
    // The template is listed without its name too: the clones find it by the name its config holds.
    const plan = await runPlan({ head: specs, readers: estate.readers });
    const result = await executePlan(plan, estate.writers, fast);
    expect(countApplyResult(result.guests).applied).toBe(13);
    // Every guest was created after the listing's last publish: listed as `unknown`, no name.
    const listed = await estate.readers.lab!.listGuests();
    expect(new Set(listed.map((l) => l.status))).toEqual(new Set(['unknown']));
    const again = await runPlan({ head: specs, readers: estate.readers });
    expect(again.guests.filter((g) => g.action !== 'noop').map((g) => [g.name, g.operations])).toEqual([]);

    // A guest published as stopped and started since: the plan asks the node, not the listing.
    estate.sims.lab.sim.setRrdLag(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    estate.sims.lab.sim.setRunning(100102, false);
    await estate.readers.lab!.listGuests();
    estate.sims.lab.sim.setRrdLag(60_000);
    estate.sims.lab.sim.setRunning(100102, true);
    expect((await estate.readers.lab!.listGuests()).find((l) => l.vmid === 100102)?.status).toBe('stopped');
    const third = await runPlan({ head: specs, readers: estate.readers });
    expect(byName(third)['lab/web-02']?.operations).toEqual([]);
  });

  it('reports an operator edit between plan and apply as a conflict, and the operator value survives', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { memory: '16384' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    expect(byName(plan)['lab/build-01']?.changes.map((c) => [c.key, c.from, c.to])).toEqual([['memory', '8192', '16384']]);

    estate.sims.lab.sim.operatorEdit(100301, { set: { memory: '6144' } });
    const before = writes(estate);
    const result = await executePlan(plan, estate.writers, fast);
    const build = result.guests.find((g) => g.name === 'build-01');
    expect(build?.status).toBe('conflict');
    expect(build?.conflict).toEqual([{ key: 'memory', reviewed: { from: '8192', to: '16384' }, now: { from: '6144', to: '16384' } }]);
    expect(writes(estate)).toBe(before);
    expect(rawValue(estate.sims.lab, 100301, 'memory')).toBe('6144');
  });

  it('refuses the write when the operator edit lands between its read and its write', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { cores: '12' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    estate.sims.lab.sim.editAfterNextRead(100301, { set: { cores: '16' } });
    const result = await executePlan(plan, estate.writers, fast);
    const build = result.guests.find((g) => g.name === 'build-01');
    expect(build?.status).toBe('conflict');
    expect(build?.steps.map((s) => s.op)).toEqual(['digest-conflict']);
    expect(build?.conflict?.[0]).toMatchObject({ key: 'cores', now: { from: '16', to: '12' } });
    expect(rawValue(estate.sims.lab, 100301, 'cores')).toBe('16');
  });

  it('goes through a digest change that moved no owned value (a description edit, ignored by the spec)', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { cores: '12' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    estate.sims.lab.sim.editAfterNextRead(100301, { set: { description: 'patched by hand' } });
    const result = await executePlan(plan, estate.writers, fast);
    const build = result.guests.find((g) => g.name === 'build-01');
    expect(build?.status).toBe('applied');
    expect(build?.steps.map((s) => s.op)).toEqual(['digest-conflict', 'config']);
    expect(rawValue(estate.sims.lab, 100301, 'cores')).toBe('12');
  });

  it('treats a backup lock set and cleared between plan and apply as no conflict', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { memory: '12288' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    const digestBefore = estate.sims.lab.sim.getGuest(100301)?.digest;
    const cycle = estate.sims.lab.sim.holdLock(100301, 'backup', 30);
    expect(estate.sims.lab.sim.getGuest(100301)?.digest).not.toBe(digestBefore);
    await cycle;
    const result = await executePlan(plan, estate.writers, fast);
    expect(result.guests.find((g) => g.name === 'build-01')?.status).toBe('applied');
    expect(rawValue(estate.sims.lab, 100301, 'memory')).toBe('12288');
  });

  it('waits out a lock held during the apply, without clearing it', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { memory: '12288' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    const released = estate.sims.lab.sim.holdLock(100301, 'backup', 300);
    const result = await executePlan(plan, estate.writers, fast);
    await released;
    const build = result.guests.find((g) => g.name === 'build-01');
    expect(build?.status).toBe('applied');
    expect(build?.steps.map((s) => s.op)).toEqual(['wait-lock', 'config']);
    expect(build?.steps[0]?.detail).toMatch(/locked \(backup\)/);
  });

  it("waits for a task still running on the guest (an earlier run's write) before writing", async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { memory: '12288' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    estate.sims.lab.sim.setTaskMs(300);
    const client = new PveClient({ cluster: 'lab', url: estate.sims.lab.url, token: estate.sims.lab.token });
    try {
      // An asynchronous config write of a key the spec ignores, still running.
      await client.request('POST', '/nodes/pve-02/qemu/100301/config', { description: 'maintenance window' });
      estate.sims.lab.sim.setTaskMs(5);
      const result = await executePlan(plan, estate.writers, fast);
      const build = result.guests.find((g) => g.name === 'build-01');
      expect(build?.status).toBe('applied');
      expect(build?.steps.map((s) => s.op)).toEqual(['wait-task', 'config']);
      expect(build?.steps[0]?.detail).toMatch(/task qmconfig still running/);
    } finally {
      await client.close();
    }
  });

  it('reports a lock that outlasts the limit and leaves it in place', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { memory: '12288' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    const released = estate.sims.lab.sim.holdLock(100301, 'backup', 1500);
    const result = await executePlan(plan, estate.writers, { lockPollMs: 20, lockWaitMs: 200 });
    const build = result.guests.find((g) => g.name === 'build-01');
    expect(build?.status).toBe('failed');
    expect(build?.error).toMatch(/still locked \(backup\).*never cleared/);
    expect(rawValue(estate.sims.lab, 100301, 'lock')).toBe('backup');
    expect(rawValue(estate.sims.lab, 100301, 'memory')).toBe('8192');
    await released;
  });

  it('finds a guest that migrated after the plan and applies it where it lives now', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { memory: '12288' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    expect(byName(plan)['lab/build-01']?.node).toBe('pve-02');
    // The migration finishes between the apply's listing and its first read of the guest.
    let migrated = false;
    const lab = new Proxy(estate.writers.lab!, {
      get(target, prop) {
        if (prop === 'readGuestForApply') {
          return async (ref: GuestRef) => {
            if (!migrated) estate.sims.lab.sim.migrate(100301, 'pve-01');
            migrated = true;
            return target.readGuestForApply(ref);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const result = await executePlan(plan, { ...estate.writers, lab }, fast);
    const build = result.guests.find((g) => g.name === 'build-01');
    expect(build?.status).toBe('applied');
    expect(build?.node).toBe('pve-01');
    expect(build?.steps.map((s) => s.op)).toEqual(['relocated', 'config']);
    expect(estate.sims.lab.sim.getGuest(100301)?.node).toBe('pve-01');
    expect(rawValue(estate.sims.lab, 100301, 'memory')).toBe('12288');
  });

  it('plans a guest that migrated between the listing and its read where it lives now', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { memory: '12288' });
    let migrated = false;
    const lab = new Proxy(estate.readers.lab!, {
      get(target, prop) {
        if (prop === 'readGuest') {
          return async (listed: ListedGuest, options?: { liveStatus?: boolean }) => {
            if (!migrated) estate.sims.lab.sim.migrate(100301, 'pve-01');
            migrated = true;
            return target.readGuest(listed, options);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const plan = await runPlan({ head, base: specs, readers: { ...estate.readers, lab } });
    const build = byName(plan)['lab/build-01'];
    expect(build?.errors).toEqual([]);
    expect(build?.node).toBe('pve-01');
    expect(build?.action).toBe('update');
  });

  it('reports a recurring digest conflict instead of retrying forever', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { cores: '12' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    for (let i = 0; i < 5; i++) estate.sims.lab.sim.editAfterNextRead(100301, { set: { description: `edit ${i}` } });
    const result = await executePlan(plan, estate.writers, { ...fast, maxDigestConflicts: 3 });
    const build = result.guests.find((g) => g.name === 'build-01');
    expect(build?.status).toBe('conflict');
    expect(build?.error).toMatch(/digest moved 3 times/);
    expect(rawValue(estate.sims.lab, 100301, 'cores')).toBe('8');
  });

  it('grows a disk, keeps a NIC MAC, deletes a removed key and labels a running VM change pending', async () => {
    await converge();
    const macBefore = rawValue(estate.sims.lab, 100101, 'net0');
    const changed: SpecSet = {
      clusters: specs.clusters,
      guests: specs.guests.map((g) => {
        if (g.cluster !== 'lab' || g.name !== 'web-01') return g;
        const { searchdomain: _dropped, ...config } = g.config;
        return {
          ...g,
          config: { ...config, scsi0: 'local-lvm:48,discard=on,iothread=1,ssd=1', net0: 'virtio,bridge=vmbr1,firewall=1', cores: '4' },
        };
      }),
    };
    const plan = await runPlan({ head: changed, base: specs, readers: estate.readers });
    const web = byName(plan)['lab/web-01'];
    expect(web?.changes.map((c) => [c.key, c.impact])).toEqual([
      ['cores', 'pending-restart'],
      ['net0', 'live'],
      ['scsi0', 'live'],
      // A cloud-init option reaches the VM only with its cloud-init drive generated again.
      ['searchdomain', 'pending-restart'],
    ]);
    const result = await executePlan(plan, estate.writers, fast);
    const web01 = result.guests.find((g) => g.name === 'web-01' && g.cluster === 'lab');
    expect(web01?.steps.map((s) => s.op)).toEqual(['config', 'resize']);
    // Accepted, not in effect: the result says so instead of reporting it done.
    expect(web01?.pending).toEqual(['cores']);
    expect(rawValue(estate.sims.lab, 100101, 'net0')).toBe(macBefore?.replace('vmbr0', 'vmbr1'));
    expect(rawValue(estate.sims.lab, 100101, 'searchdomain')).toBeUndefined();
    expect(rawValue(estate.sims.lab, 100101, 'scsi0')).toMatch(/size=48G/);
    // Running VM: cores waits for a restart, and the next plan says so instead of planning it again.
    expect(rawValue(estate.sims.lab, 100101, 'cores')).toBe('2');
    const after = await runPlan({ head: changed, base: specs, readers: estate.readers });
    expect(byName(after)['lab/web-01']?.action).toBe('noop');
    expect(byName(after)['lab/web-01']?.pending).toEqual([{ key: 'cores', current: '2', pending: '4' }]);
  });

  it('reports drift made outside git without writing anything', async () => {
    await converge();
    estate.sims.lab.sim.operatorEdit(100102, { set: { cpulimit: '2' } });
    const before = estate.sims.lab.sim.stats().writes.total;
    const report = await runDrift({ head: specs, readers: estate.readers });
    expect(byName(report)['lab/web-02']?.drift).toEqual([{ key: 'cpulimit', actual: '2' }]);
    expect(report.guests.filter((g) => g.drift.length > 0).map((g) => g.name)).toEqual(['web-02']);
    expect(estate.sims.lab.sim.stats().writes.total).toBe(before);
  });

  it('refuses to destroy a protected guest and never lifts protection', async () => {
    await converge();
    const retired: SpecSet = {
      clusters: specs.clusters,
      guests: specs.guests.map((g) => (g.name === 'db-01' ? { ...g, state: 'absent' } : g)),
    };
    const plan = await runPlan({ head: retired, base: specs, readers: estate.readers });
    const db = byName(plan)['lab/db-01'];
    expect(db?.action).toBe('error');
    expect(db?.errors[0]).toMatch(/protection blocks destroy/);
    const result = await executePlan(plan, estate.writers, fast);
    expect(result.guests.find((g) => g.name === 'db-01')?.status).toBe('skipped');
    expect(rawValue(estate.sims.lab, 100201, 'protection')).toBe('1');
  });

  it('two concurrent applies of one plan both succeed: what the other run created is no collision', async () => {
    const plan = await runPlan({ head: specs, readers: estate.readers });
    const [first, second] = await Promise.all([executePlan(plan, estate.writers, fast), executePlan(plan, estate.writers, fast)]);
    for (const result of [first, second]) {
      const unhappy = result.guests.filter((g) => g.status === 'conflict' || g.status === 'failed');
      expect(unhappy, JSON.stringify(unhappy, null, 2)).toEqual([]);
    }
    // Every create the second run found taken was this plan's own guest, and it says so.
    const taken = [...first.guests, ...second.guests].filter((g) => g.steps.some((s) => s.op === 'vmid-taken'));
    expect(taken.length).toBeGreaterThan(0);
    for (const g of taken) {
      expect(g.steps.find((x) => x.op === 'vmid-taken')?.detail).toMatch(
        /(already exists on node .*|config file already exists); looking at the guest that holds it/,
      );
    }
    for (const g of specs.guests.filter((x) => x.state === 'present')) {
      expect(estate.sims[g.cluster as 'lab' | 'prod'].sim.getGuest(g.vmid), `${g.cluster}/${g.name}`).toBeDefined();
    }
    expect(planHasChanges(await runPlan({ head: specs, readers: estate.readers }))).toBe(false);
  });

  it('a guest deleted during the apply is reported, never created again', async () => {
    await converge();
    const head = withConfig(specs, 'build-01', 'lab', { memory: '12288' });
    const plan = await runPlan({ head, base: specs, readers: estate.readers });
    const client = new PveClient({ cluster: 'lab', url: estate.sims.lab.url, token: estate.sims.lab.token });
    // Someone destroys the guest between the apply's read and its write.
    const lab = new Proxy(estate.writers.lab!, {
      get(target, prop) {
        if (prop === 'updateConfig') {
          return async (...args: Parameters<typeof target.updateConfig>) => {
            await client.waitForTask('pve-02', await client.destroyGuest('pve-02', 'qemu', 100301, { purge: true }));
            return target.updateConfig(...args);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    try {
      const result = await executePlan(plan, { ...estate.writers, lab }, fast);
      const build = result.guests.find((g) => g.name === 'build-01');
      expect(build?.status).toBe('conflict');
      expect(build?.error).toMatch(/^guest 100301 disappeared during apply/);
      expect(estate.sims.lab.sim.getGuest(100301)).toBeUndefined();
      expect(estate.sims.lab.sim.stats().requests.byRoute['POST /nodes/{node}/qemu'] ?? 0).toBe(
        // The template is there already and the clones are made by `POST …/clone`: only the others are created.
        specs.guests.filter((g) => g.cluster === 'lab' && g.type === 'qemu' && g.state === 'present' && !g.clone && !g.template).length,
      );
    } finally {
      await client.close();
    }
  });

  it('an apply run again while the create of a killed run still runs (lock: create) plans that create and waits for it, no collision', async () => {
    const first = await runPlan({ head: specs, readers: estate.readers });
    const web = first.guests.find((g) => g.name === 'web-01' && g.cluster === 'lab');
    const create = web?.operations[0];
    if (!web || create?.op !== 'create') throw new Error('the example plan creates lab/web-01');
    // The create the killed run sent: Proxmox is still carrying it out.
    estate.sims.lab.sim.setTaskMs(400);
    const client = new PveClient({ cluster: 'lab', url: estate.sims.lab.url, token: estate.sims.lab.token });
    try {
      await client.createGuest(create.node, web.type, web.vmid, create.params);
      expect(rawValue(estate.sims.lab, web.vmid, 'lock')).toBe('create');
      estate.sims.lab.sim.setTaskMs(5);
      // Run again (`apply --specs`): planned afresh while the guest is still in `lock: create`.
      const again = await runPlan({ head: specs, readers: estate.readers });
      expect(planErrorLines(again)).toEqual([]);
      const planned = byName(again)['lab/web-01'];
      expect(planned?.action).toBe('create');
      expect(planned?.warnings.join('\n')).toMatch(/is being created right now \(lock: create\)/);
      const result = await executePlan({ ...again, guests: [planned!] }, estate.writers, fast);
      const [guest] = result.guests;
      expect(guest?.status, JSON.stringify(guest, null, 2)).toBe('applied');
      expect(guest?.steps.map((s) => s.op)).toEqual(['wait-lock', 'start']);
      expect(guest?.steps[0]?.detail).toMatch(/locked \(create\)/);
      expect(estate.sims.lab.sim.stats().requests.byRoute['POST /nodes/{node}/qemu']).toBe(1);
      expect(rawValue(estate.sims.lab, web.vmid, 'name')).toBe('web-01');
      expect(rawValue(estate.sims.lab, web.vmid, 'lock')).toBeUndefined();
    } finally {
      await client.close();
    }
  });

  it('a guest someone else was creating (lock: create) that ends without the owner tag is a conflict, and nothing is written to it', async () => {
    const first = await runPlan({ head: specs, readers: estate.readers });
    const web = first.guests.find((g) => g.name === 'web-01' && g.cluster === 'lab');
    if (!web) throw new Error('the example plan creates lab/web-01');
    estate.sims.lab.sim.setTaskMs(400);
    const client = new PveClient({ cluster: 'lab', url: estate.sims.lab.url, token: estate.sims.lab.token });
    try {
      await client.createGuest('pve-01', 'qemu', web.vmid, { name: 'intruder', memory: '512' });
      estate.sims.lab.sim.setTaskMs(5);
      const again = await runPlan({ head: specs, readers: estate.readers });
      const planned = byName(again)['lab/web-01']!;
      expect(planned.action).toBe('create');
      const writesBefore = writes(estate);
      const [guest] = (await executePlan({ ...again, guests: [planned] }, estate.writers, fast)).guests;
      expect(guest?.status).toBe('conflict');
      expect(writes(estate)).toBe(writesBefore);
      expect(rawValue(estate.sims.lab, web.vmid, 'name')).toBe('intruder');
    } finally {
      await client.close();
    }
  });

  it('makes a create collision visible when someone took the VMID after the plan', async () => {
    const plan = await runPlan({ head: specs, readers: estate.readers });
    estate.sims.lab.sim.addGuest({ vmid: 100101, type: 'qemu', node: 'pve-02', config: { name: 'intruder', memory: '512' } });
    const result = await executePlan(plan, estate.writers, fast);
    const web = result.guests.find((g) => g.name === 'web-01' && g.cluster === 'lab');
    expect(web?.status).toBe('conflict');
    expect(rawValue(estate.sims.lab, 100101, 'name')).toBe('intruder');
  });
});
