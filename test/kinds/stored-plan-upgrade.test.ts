/**
 * Plans stored by the previous version (plan format 1, written by the build before kinds existed:
 * test/fixtures/plan-v1.json) still load, and apply exactly what they say; a plan holding an item
 * of a kind this build does not know, or from a newer format, is refused with a request to plan
 * again (docs/adding-a-kind.md, "Stored plans across versions").
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlanFormatError, PlanVersionError } from '../../src/core/render/plan-errors.js';
import { parsePlanJson, renderPlanJson } from '../../src/core/render/render-json.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { PveClient } from '../../src/pve/client.js';
import { PveClusterAdapter } from '../../src/pve/cluster-adapter.js';
import { type RunningSimulator, startSimulator } from '../../src/pve/sim/index.js';

const V1 = new URL('../fixtures/plan-v1.json', import.meta.url);

describe('a plan stored by format 1', () => {
  let text: string;
  let sim: RunningSimulator;
  let client: PveClient;
  beforeAll(async () => {
    text = await readFile(V1, 'utf8');
    sim = await startSimulator({ port: 0, nodes: ['pve-01', 'pve-02'], taskMs: 1, clusterName: 'lab' });
    client = new PveClient({ cluster: 'lab', url: sim.url, token: sim.token, retries: 0 });
  });
  afterAll(async () => {
    await client?.close();
    await sim?.close();
  });

  it('loads as format 2: each guest gains its kind and key, nothing else changes', () => {
    const raw = JSON.parse(text) as { version: number; guests: Record<string, unknown>[] };
    expect(raw.version).toBe(1);
    const plan = parsePlanJson(text);
    expect(plan.version).toBe(2);
    expect(plan.objects).toEqual([]);
    expect(plan.guests).toHaveLength(raw.guests.length);
    plan.guests.forEach((guest, index) => {
      const { kind, key, ...rest } = guest;
      expect(kind).toBe('guest');
      expect(key).toBe(`${guest.cluster}/${guest.vmid}`);
      expect(JSON.parse(JSON.stringify(rest))).toEqual(raw.guests[index]);
    });
    // Written again, it is a format-2 plan that reads back the same.
    expect(parsePlanJson(renderPlanJson(plan))).toEqual(plan);
  });

  it('applies what it says after the upgrade: the guest it creates exists with its config', async () => {
    const plan = parsePlanJson(text);
    const create = plan.guests.find((g) => g.action === 'create');
    expect(create).toBeDefined();
    const result = await executePlan(plan, { lab: new PveClusterAdapter(client, { wait: { intervalMs: 5 } }) });
    expect(result.guests.map((g) => [g.vmid, g.status])).toEqual(
      plan.guests.map((g) => [g.vmid, g.action === 'noop' ? 'unchanged' : 'applied']),
    );
    const config = sim.sim.getGuest(create!.vmid)?.rawConfig ?? '';
    const op = create!.operations.find((o) => o.op === 'create');
    expect(op?.op).toBe('create');
    // Values Proxmox stores as sent (disks and NICs are completed by Proxmox, and compared by the next plan).
    const asSent = ['name', 'memory', 'cores', 'description'];
    if (op?.op === 'create') {
      const checked = Object.entries(op.params).filter(([key]) => asSent.includes(key));
      expect(checked.length).toBeGreaterThan(1);
      for (const [key, value] of checked) expect(config).toContain(`${key}: ${value}`);
    }
  });

  it('is refused when a format-1 guest holds a field format 2 does not know', () => {
    const raw = JSON.parse(text) as { guests: Record<string, unknown>[] };
    (raw.guests[0] as Record<string, unknown>).restartPolicy = 'always';
    expect(() => parsePlanJson(JSON.stringify(raw))).toThrow(PlanFormatError);
  });
});

describe('a plan this build must not apply', () => {
  it('names an unknown kind and asks for a new plan', () => {
    const plan = parsePlanJson(readFileSyncText());
    const withUnknown = {
      ...JSON.parse(renderPlanJson(plan)),
      objects: [
        {
          kind: 'widget',
          key: 'lab/widget/nightly',
          cluster: 'lab',
          name: 'nightly',
          action: 'create',
          changes: [],
          operations: [{ op: 'create-job' }],
          drift: [],
          errors: [],
          warnings: [],
          severity: 'configuration',
          payload: {},
        },
      ],
    };
    expect(() => parsePlanJson(JSON.stringify(withUnknown))).toThrow(
      "plan is malformed at objects[0].kind: this pve-gitops does not know the kind 'widget'; plan again with this version (comment /pve plan)",
    );
  });

  it('refuses a newer format before reading anything else, asking for a new plan', () => {
    expect(() => parsePlanJson(JSON.stringify({ version: 3, items: [] }))).toThrow(PlanVersionError);
    expect(() => parsePlanJson(JSON.stringify({ version: 3, items: [] }))).toThrow(/plan again with this version/);
  });
});

function readFileSyncText(): string {
  return readFileSync(V1, 'utf8');
}
