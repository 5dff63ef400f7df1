/**
 * The firewall kind against the simulator over HTTP: the adapter's reads and writes, and the
 * kind's observe → plan → execute as the pipeline runs them, with real tokens. What a cluster
 * answers is the simulator's (docs/proxmox-behaviour.md, "Guest firewall"); nothing of our own is
 * mocked. Operator edits go through the API with the admin token, as a person's would.
 */
import { describe, expect, it } from 'vitest';
import { type FirewallObserved, firewallKind } from '../../src/core/kinds/firewall/firewall-kind.js';
import type { FirewallRule, FirewallTarget } from '../../src/core/kinds/firewall/port.js';
import type { KindObserveInput, KindPlanInput } from '../../src/core/kinds/kind.js';
import type { GuestSpec, ObjectPlan } from '../../src/core/model.js';
import { PermissionDeniedError } from '../../src/core/port-errors.js';
import { FirewallAdapter } from '../../src/pve/kinds/firewall-adapter.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { makeGuestSpec, makeSpecGuestPlan } from '../helpers/factories.js';
import { useKindSimulator } from './kind-simulator.js';
import { copyFirewall, dropFirewall } from '../../src/pve/sim/kinds/firewall/state.js';
import { WEB_CONFIG } from '../sim/helpers.js';

const SOURCE = { file: 'specs/lab.yaml', line: 1, col: 1 };
const LIMITED = 'ops@pve!limited=s3cret';
const VM: FirewallTarget = { node: 'pve-01', type: 'qemu', vmid: 100 };
const CT: FirewallTarget = { node: 'pve-01', type: 'lxc', vmid: 200 };

let sim: RunningSimulator;
let adapter: (token: string, readOnly?: boolean) => FirewallAdapter;
let writer: FirewallAdapter;
let reader: FirewallAdapter;

useKindSimulator(
  {
    storages: ['local-lvm'],
    tokens: [{ id: 'ops@pve!limited', secret: 's3cret', role: 'admin', vmids: [200], guestsOnly: true }],
    guests: [
      { vmid: 100, type: 'qemu', node: 'pve-01', config: WEB_CONFIG },
      { vmid: 200, type: 'lxc', node: 'pve-01', config: 'hostname: ct-01\n' },
    ],
  },
  (client) => new FirewallAdapter(client),
  (kit) => {
    ({ sim, writer, reader, adapter } = kit);
  },
);

function guest(vmid: number, firewall: unknown, type: 'qemu' | 'lxc' = 'qemu'): GuestSpec {
  return makeGuestSpec({ type, vmid, name: type === 'qemu' ? 'web-01' : 'ct-01', refs: { firewall }, source: SOURCE });
}

/** Plans one guest's firewall the way the pipeline does: observe, then plan; `base` makes it a pull request's. */
async function planOne(spec: GuestSpec, options: { base?: GuestSpec; port?: FirewallAdapter } = {}): Promise<ObjectPlan> {
  const observeInput: KindObserveInput = {
    cluster: 'lab',
    head: [],
    base: [],
    headGuests: [spec],
    baseGuests: options.base ? [options.base] : [],
  };
  const observed: FirewallObserved = await firewallKind.observe(options.port ?? reader, observeInput);
  const input: KindPlanInput<FirewallObserved> = {
    cluster: 'lab',
    head: [],
    ...(options.base ? { base: [] } : {}),
    headGuests: [spec],
    baseGuests: options.base ? [options.base] : [],
    guestPlans: [makeSpecGuestPlan(spec)],
    full: options.base !== undefined,
    observed,
  };
  const items = firewallKind.plan(input);
  expect(items).toHaveLength(1);
  const item = items[0] as ObjectPlan;
  // What the App stores and reads back before applying.
  const stored = JSON.parse(JSON.stringify(item)) as ObjectPlan;
  firewallKind.checkStored(stored);
  return stored;
}

const rule = (comment: string, extra: Partial<FirewallRule> = {}): FirewallRule => ({
  type: 'in',
  action: 'ACCEPT',
  enable: true,
  comment,
  ...extra,
});

/** Puts rules on a guest so they read in this order. */
async function liveRules(target: FirewallTarget, rules: FirewallRule[]): Promise<void> {
  for (const r of [...rules].reverse()) await writer.createRule(target, r);
}

async function comments(target: FirewallTarget = VM): Promise<(string | undefined)[]> {
  return (await reader.readRules(target)).value.map((r) => r.comment);
}

const SPEC = {
  options: { enable: true, policy_in: 'DROP', policy_out: 'ACCEPT', ipfilter: true, log_level_in: 'info' },
  rules: [
    { type: 'in', action: 'ACCEPT', proto: 'tcp', dport: '22', source: '+admins', comment: 'ssh' },
    { type: 'in', macro: 'HTTPS', action: 'ACCEPT' },
  ],
  ipsets: { admins: ['10.0.0.0/24', { cidr: '10.1.0.5', comment: 'bastion' }] },
  aliases: { bastion: { cidr: '10.1.0.5', comment: 'jump host' } },
};

describe('the firewall adapter over HTTP', () => {
  it('reads each section with its digest and writes a rule whole: enable sent, missing fields deleted', async () => {
    await writer.createRule(VM, { type: 'in', action: 'ACCEPT', enable: true, proto: 'tcp', dport: '22', comment: 'ssh' });
    const read = await reader.readRules(VM);
    expect(read.value).toEqual([{ type: 'in', action: 'ACCEPT', enable: true, proto: 'tcp', dport: '22', comment: 'ssh' }]);
    expect(read.digest).toMatch(/^[0-9a-f]{40}$/);
    await writer.updateRule(VM, 0, { type: 'in', action: 'DROP', enable: false }, read.digest);
    expect((await reader.readRules(VM)).value).toEqual([{ type: 'in', action: 'DROP', enable: false }]);
    await writer.setOptions(VM, { enable: true, policy_in: 'DROP' }, [], (await reader.readOptions(VM)).digest);
    expect((await reader.readOptions(VM)).value).toEqual({ enable: true, policy_in: 'DROP' });
    await writer.createAlias(VM, { name: 'Bastion', cidr: '10.1.0.5/32' });
    expect((await reader.readAliases(VM)).value).toEqual({ bastion: { name: 'Bastion', cidr: '10.1.0.5' } });
    await writer.createIpset(VM, 'admins', 'ops');
    await writer.addIp(VM, 'admins', { cidr: '10.0.0.0/24', nomatch: true });
    expect((await reader.readIpsets(VM)).admins?.value).toEqual({ comment: 'ops', entries: [{ cidr: '10.0.0.0/24', nomatch: true }] });
  });

  it('refuses a stale digest with Proxmox words, and a write without VM.Config.Network', async () => {
    await writer.createRule(VM, rule('a'));
    const stale = (await reader.readRules(VM)).digest;
    await writer.createRule(VM, rule('b'));
    const refused = await writer.deleteRule(VM, 0, stale).catch((e: unknown) => e);
    expect((refused as Error).name).toBe('DigestConflictError');
    expect((refused as Error).message).toContain('detected modified configuration');
    const denied = await adapter(sim.auditToken)
      .createRule(VM, rule('c'))
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(PermissionDeniedError);
    expect((denied as Error).message).toContain('/vms/100, VM.Config.Network');
    expect(await comments()).toEqual(['b', 'a']);
  });
});

describe('the firewall kind: plan and apply over HTTP', () => {
  it('plans a whole firewall, applies it, then plans nothing', async () => {
    const spec = guest(100, SPEC);
    const planned = await planOne(spec);
    expect(planned.action).toBe('update');
    expect(planned.severity).toBe('service-impact');
    expect(planned.after).toEqual(['lab/100']);
    expect(planned.changes.map((c) => c.key)).toEqual([
      'firewall.options.enable',
      'firewall.options.policy_in',
      'firewall.options.policy_out',
      'firewall.options.ipfilter',
      'firewall.options.log_level_in',
      'firewall.aliases.bastion',
      'firewall.ipsets.admins',
      'firewall.rules #1',
      'firewall.rules #2',
    ]);
    expect(planned.operations.map((op) => firewallKind.describe(op))).toContain(
      'add firewall rule #1: IN ACCEPT -source +admins -p tcp -dport 22 # ssh',
    );
    const outcome = await firewallKind.execute(planned, writer, {});
    expect(outcome.status, outcome.error).toBe('applied');
    expect(await comments()).toEqual(['ssh', undefined]);
    const rules = (await reader.readRules(VM)).value;
    expect(rules.every((r) => r.enable)).toBe(true);
    expect((await reader.readIpsets(VM)).admins?.value.entries).toEqual([
      { cidr: '10.0.0.0/24' },
      { cidr: '10.1.0.5', comment: 'bastion' },
    ]);
    const again = await planOne(spec);
    expect(again.action).toBe('noop');
    expect(again.changes).toEqual([]);
    expect((await firewallKind.execute(again, writer, {})).status).toBe('unchanged');
  });

  it('reads rules added, removed, changed and moved as a reviewer does, and writes the fewest position moves', async () => {
    await liveRules(VM, [rule('a'), rule('b'), rule('c', { proto: 'tcp', dport: '80' }), rule('d'), rule('e')]);
    // Wanted: `e` moved to the top, `b` removed, `c` on another port, `f` added at the end.
    const spec = guest(100, {
      rules: [
        { type: 'in', action: 'ACCEPT', comment: 'e' },
        { type: 'in', action: 'ACCEPT', comment: 'a' },
        { type: 'in', action: 'ACCEPT', proto: 'tcp', dport: '8080', comment: 'c' },
        { type: 'in', action: 'ACCEPT', comment: 'd' },
        { type: 'in', action: 'DROP', comment: 'f' },
      ],
    });
    const planned = await planOne(spec);
    expect(planned.operations.map((op) => firewallKind.describe(op))).toEqual([
      'move firewall rule #5 to #1: IN ACCEPT # e',
      'remove firewall rule #2: IN ACCEPT # b',
      'change firewall rule #3 to IN ACCEPT -p tcp -dport 8080 # c',
      'add firewall rule #5: IN DROP # f',
    ]);
    const outcome = await firewallKind.execute(planned, writer, {});
    expect(outcome.status, outcome.error).toBe('applied');
    expect(outcome.steps.filter((s) => s.op === 'fw-rule').map((s) => (s.detail ?? '').split(' ')[0])).toEqual([
      'removed',
      'changed',
      'added',
      'moved',
      'moved',
    ]);
    expect(await comments()).toEqual(['e', 'a', 'c', 'd', 'f']);
    expect((await reader.readRules(VM)).value[2]?.dport).toBe('8080');
    expect((await planOne(spec)).action).toBe('noop');
  });

  it('changes IPsets and aliases entry by entry, and removes those the spec no longer has', async () => {
    await writer.createAlias(VM, { name: 'bastion', cidr: '10.1.0.5' });
    await writer.createAlias(VM, { name: 'old', cidr: '10.9.9.9' });
    await writer.createIpset(VM, 'admins', undefined);
    await writer.addIp(VM, 'admins', { cidr: '10.0.0.0/24' });
    await writer.addIp(VM, 'admins', { cidr: '10.2.0.0/24' });
    await writer.createIpset(VM, 'gone', undefined);
    await writer.addIp(VM, 'gone', { cidr: '192.168.0.0/16' });
    const spec = guest(100, {
      aliases: { bastion: { cidr: '10.1.0.6', comment: 'new jump host' } },
      ipsets: { admins: { comment: 'ops', entries: ['10.0.0.0/24', { cidr: '10.3.0.0/24', nomatch: true }] } },
    });
    const planned = await planOne(spec);
    expect(planned.severity).toBe('configuration');
    expect(planned.changes).toEqual([
      { key: 'firewall.aliases.bastion', from: '10.1.0.5', to: '10.1.0.6 # new jump host', impact: 'live' },
      { key: 'firewall.aliases.old', from: '10.9.9.9', impact: 'live' },
      { key: 'firewall.ipsets.admins', from: '[10.0.0.0/24, 10.2.0.0/24]', to: '(ops) [10.0.0.0/24, !10.3.0.0/24]', impact: 'live' },
      { key: 'firewall.ipsets.gone', from: '[192.168.0.0/16]', impact: 'live' },
    ]);
    const outcome = await firewallKind.execute(planned, writer, {});
    expect(outcome.status, outcome.error).toBe('applied');
    expect((await reader.readAliases(VM)).value).toEqual({ bastion: { name: 'bastion', cidr: '10.1.0.6', comment: 'new jump host' } });
    const sets = await reader.readIpsets(VM);
    expect(Object.keys(sets)).toEqual(['admins']);
    expect(sets.admins?.value).toEqual({ comment: 'ops', entries: [{ cidr: '10.0.0.0/24' }, { cidr: '10.3.0.0/24', nomatch: true }] });
    expect((await planOne(spec)).action).toBe('noop');
  });

  it('returns an option the spec leaves out to its default, on a container too', async () => {
    await writer.setOptions(CT, { enable: true, dhcp: true, policy_out: 'REJECT' }, [], (await reader.readOptions(CT)).digest);
    const spec = guest(200, { options: { enable: true, policy_out: 'ACCEPT' } }, 'lxc');
    const planned = await planOne(spec);
    expect(planned.changes).toEqual([
      { key: 'firewall.options.policy_out', from: 'REJECT', to: 'ACCEPT', impact: 'live' },
      { key: 'firewall.options.dhcp', from: '1', impact: 'live' },
    ]);
    expect(firewallKind.describe(planned.operations[0] as ObjectPlan['operations'][number])).toBe(
      'set firewall options policy_out=ACCEPT, dhcp back to default',
    );
    expect((await firewallKind.execute(planned, writer, {})).status).toBe('applied');
    expect((await reader.readOptions(CT)).value).toEqual({ enable: true, policy_out: 'ACCEPT' });
  });

  it('leaves sections the spec does not write alone', async () => {
    await liveRules(VM, [rule('operator')]);
    const planned = await planOne(guest(100, { options: { enable: true } }));
    expect(planned.changes.map((c) => c.key)).toEqual(['firewall.options.enable']);
    expect((await firewallKind.execute(planned, writer, {})).status).toBe('applied');
    expect(await comments()).toEqual(['operator']);
  });

  it('fails a token without VM.Config.Network with its message and writes nothing', async () => {
    const planned = await planOne(guest(100, SPEC));
    const outcome = await firewallKind.execute(planned, adapter(sim.auditToken), {});
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toContain('/vms/100, VM.Config.Network');
    expect(await comments()).toEqual([]);
    expect((await reader.readOptions(VM)).value).toEqual({});
  });

  it('reports a guest whose firewall the token cannot read, instead of planning it as empty', async () => {
    const planned = await planOne(guest(100, SPEC), { port: adapter(LIMITED, true) });
    expect(planned.action).toBe('error');
    expect(planned.errors).toEqual([
      'guest 100 is not on the cluster or the token lacks VM.Audit on /vms/100, so its firewall cannot be planned',
    ]);
    expect(planned.operations).toEqual([]);
  });

  it('finishes on a second run after an apply that stopped half-way, instead of calling its own writes a conflict', async () => {
    await liveRules(VM, [rule('a'), rule('b'), rule('c')]);
    await writer.createAlias(VM, { name: 'old', cidr: '10.9.9.9' });
    const spec = guest(100, {
      aliases: { bastion: '10.1.0.5' },
      rules: [
        { type: 'in', action: 'ACCEPT', comment: 'c' },
        { type: 'in', action: 'ACCEPT', comment: 'a' },
        { type: 'in', action: 'DROP', comment: 'new' },
      ],
    });
    const planned = await planOne(spec);
    // The cluster goes away after the first rule write: the alias is added, `b` removed, nothing moved yet.
    let writes = 0;
    const flaky = new Proxy(writer, {
      get(target, prop) {
        const method = (Reflect.get(target, prop) as (...args: unknown[]) => Promise<unknown>).bind(target);
        if (!['deleteRule', 'createRule', 'moveRule', 'updateRule'].includes(String(prop))) return method;
        return async (...args: unknown[]) => {
          writes += 1;
          if (writes > 1) throw new Error('connect ECONNREFUSED');
          return method(...args);
        };
      },
    });
    const first = await firewallKind.execute(planned, flaky, {});
    expect(first.status).toBe('failed');
    expect(await comments()).toEqual(['a', 'c']);
    const second = await firewallKind.execute(planned, writer, {});
    expect(second.status, second.error).toBe('applied');
    expect(await comments()).toEqual(['c', 'a', 'new']);
    expect(Object.keys((await reader.readAliases(VM)).value)).toEqual(['bastion']);
    expect((await planOne(spec)).action).toBe('noop');
  });

  it('returns conflict for an operator edit between plan and apply, and keeps the edit', async () => {
    await liveRules(VM, [rule('a'), rule('b')]);
    const planned = await planOne(guest(100, { rules: [{ type: 'in', action: 'ACCEPT', comment: 'b' }] }));
    // The operator adds a rule after the review.
    await writer.createRule(VM, rule('operator'));
    const outcome = await firewallKind.execute(planned, writer, {});
    expect(outcome.status).toBe('conflict');
    expect(outcome.conflict).toEqual(['the firewall rules of guest 100 changed on the cluster after the review']);
    expect(outcome.steps).toEqual([]);
    expect(await comments()).toEqual(['operator', 'a', 'b']);
  });

  it('stops when the rules move under a write that Proxmox checks no digest on, and says after which write', async () => {
    await liveRules(VM, [rule('a')]);
    const planned = await planOne(
      guest(100, {
        rules: [
          { type: 'in', action: 'ACCEPT', comment: 'new' },
          { type: 'in', action: 'ACCEPT', comment: 'a' },
        ],
      }),
    );
    // Another client's rule lands right after our POST, before our re-read.
    const racing = new Proxy(writer, {
      get(target, prop) {
        // The adapter's private fields need the adapter itself as `this`.
        if (prop !== 'createRule') return (Reflect.get(target, prop) as (...args: unknown[]) => unknown).bind(target);
        return async (where: FirewallTarget, r: FirewallRule) => {
          await target.createRule(where, r);
          await target.createRule(where, rule('racer'));
        };
      },
    });
    const outcome = await firewallKind.execute(planned, racing, {});
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toBe(
      'the firewall rules of guest 100 changed on the cluster during the apply (after: added IN ACCEPT # new at #1)',
    );
    expect(await comments()).toEqual(['racer', 'new', 'a']);
  });

  it("copies a guest's file to another VMID as a clone does, and drops it as a destroy does", async () => {
    await liveRules(VM, [rule('a')]);
    await writer.setOptions(VM, { enable: true }, [], (await reader.readOptions(VM)).digest);
    copyFirewall(sim.sim, 100, 300);
    const copy: FirewallTarget = { node: 'pve-01', type: 'qemu', vmid: 300 };
    expect((await reader.readRules(copy)).value).toEqual([rule('a')]);
    expect((await reader.readOptions(copy)).value).toEqual({ enable: true });
    dropFirewall(sim.sim, 300);
    expect((await reader.readRules(copy)).value).toEqual([]);
    expect(await comments()).toEqual(['a']);
  });

  it('shows drift when the spec did not change and the cluster did', async () => {
    const spec = guest(100, SPEC);
    expect((await firewallKind.execute(await planOne(spec), writer, {})).status).toBe('applied');
    const ssh = (await reader.readRules(VM)).value[0] as FirewallRule;
    await writer.updateRule(VM, 0, { ...ssh, dport: '2222' }, (await reader.readRules(VM)).digest);
    const drifted = await planOne(spec, { base: spec });
    expect(drifted.drift).toEqual([
      {
        key: 'firewall.rules #1',
        expected: 'IN ACCEPT -source +admins -p tcp -dport 22 # ssh',
        actual: 'IN ACCEPT -source +admins -p tcp -dport 2222 # ssh',
      },
    ]);
    expect((await firewallKind.execute(drifted, writer, {})).status).toBe('applied');
    expect((await reader.readRules(VM)).value[0]?.dport).toBe('22');
  });
});
