import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SpecSet } from '../../src/core/model.js';
import { planHasChanges } from '../../src/core/plan/plan-specs.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runDrift, runPlan } from '../../src/engine/run-plan.js';
import { rawValue, startEstate, type Estate } from '../engine/helpers.js';

/**
 * pve-container `API2/LXC.pm`, `create_vm` (since 6.0.7, Proxmox VE 9.0): a container created
 * without `unprivileged` is unprivileged (`$unprivileged = 1 if !defined($unprivileged)`) and its
 * config says `unprivileged: 1`; `unprivileged=0` writes nothing (`$conf->{unprivileged} = 1 if
 * $unprivileged`). The key is read-only afterwards (`update_pct_config`). Whatever the spec says
 * about it, a create followed by a plan has nothing left to do, and nothing is drift.
 */
let estate: Estate;
beforeEach(async () => {
  estate = await startEstate();
});
afterEach(() => estate.close());

function specs(unprivileged: string): SpecSet {
  const text = `kind: Cluster
name: lab
vmids: { lower: 100000, upper: 199999 }
nodes: [pve-01, pve-02]
---
kind: Container
name: ct-01
cluster: lab
node: pve-01
vmid: 100201
create:
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
config:
  memory: 512
${unprivileged}`;
  const loaded = loadSpecs([{ path: 'specs.yaml', text }]);
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  return loaded.specs;
}

describe('containers are unprivileged unless the spec says otherwise', () => {
  it.each([
    ['the spec leaves unprivileged out', '', '1'],
    ['the spec says unprivileged: true', '  unprivileged: true\n', '1'],
    ['the spec says unprivileged: false', '  unprivileged: false\n', undefined],
  ])('%s: created as Proxmox writes it, then no changes and no drift', async (_name, line, written) => {
    const set = specs(line);
    // A privileged container reaches the host: the server's policy has to allow it.
    const access = { lab: { allowHostAccess: ['privileged' as const] } };
    const plan = await runPlan({ head: set, readers: estate.readers, access });
    expect(plan.errors).toEqual([]);
    const result = await executePlan(plan, estate.writers, { lockPollMs: 20, allowHostAccess: { lab: access.lab.allowHostAccess } });
    expect(result.guests.map((g) => g.status)).toEqual(['applied']);
    expect(rawValue(estate.sims.lab, 100201, 'unprivileged')).toBe(written);

    const again = await runPlan({ head: set, readers: estate.readers, access });
    expect(again.guests.map((g) => ({ action: g.action, changes: g.changes, errors: g.errors }))).toEqual([
      { action: 'noop', changes: [], errors: [] },
    ]);
    expect(planHasChanges(again)).toBe(false);
    const drift = await runDrift({ head: set, readers: estate.readers, access });
    expect(drift.guests.flatMap((g) => g.drift)).toEqual([]);
  });
});

describe('container DNS lists as pve-container stores them', () => {
  // pve-container `LXC.pm`, `verify_nameserver_list` / `verify_searchdomain_list`: split on
  // commas, semicolons or spaces, stored space-separated.
  it('a comma-separated nameserver and searchdomain list round-trips without a perpetual diff', async () => {
    const set = specs('  nameserver: 1.1.1.1,9.9.9.9\n  searchdomain: lab.example.net;example.net\n');
    const plan = await runPlan({ head: set, readers: estate.readers });
    const result = await executePlan(plan, estate.writers, { lockPollMs: 20 });
    expect(result.guests.map((g) => g.status)).toEqual(['applied']);
    expect(rawValue(estate.sims.lab, 100201, 'nameserver')).toBe('1.1.1.1 9.9.9.9');
    expect(rawValue(estate.sims.lab, 100201, 'searchdomain')).toBe('lab.example.net example.net');
    const again = await runPlan({ head: set, readers: estate.readers });
    expect(again.guests.map((g) => g.changes)).toEqual([[]]);
  });
});
