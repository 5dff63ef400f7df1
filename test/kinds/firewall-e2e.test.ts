/**
 * The guest firewall end to end through the product's own pipeline against the simulator over
 * HTTP: specs loaded from YAML (a VM created in the same plan as its firewall), `runPlan`,
 * `executePlan` (the guest, then its firewall), a re-plan that finds nothing to do, a pull request
 * that reorders rules, a firewall edited on the cluster reported as drift, the privileges
 * `pve-gitops check` asks for, and a spec whose rule names an IPset it does not define.
 */
import { describe, expect, it } from 'vitest';
import { kindPrivileges } from '../../src/core/kinds/registry.js';
import type { SpecSet } from '../../src/core/model.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { changed, labSpecs, LAB_CLUSTER, usePipelineLab } from './pipeline-lab.js';
import { firewallFile } from '../../src/pve/sim/kinds/firewall/state.js';

function specs(rules: string[], extra = ''): SpecSet {
  return labSpecs([
    [
      'kind: VM',
      'name: web-01',
      'cluster: lab',
      'node: pve-01',
      'vmid: 200',
      'config: { memory: 512 }',
      'firewall:',
      '  options: { enable: true, policy_in: DROP }',
      '  ipsets: { admins: [10.0.0.0/24] }',
      '  rules:',
      ...rules.map((r) => `    - ${r}`),
      extra,
    ].join('\n'),
  ]);
}

const SSH = '{ type: in, action: ACCEPT, proto: tcp, dport: 22, source: +admins, comment: ssh }';
const WEB = '{ type: in, macro: HTTPS, action: ACCEPT, comment: web }';
const PING = '{ type: in, macro: Ping, action: ACCEPT, comment: ping }';

const lab = usePipelineLab();

const comments = (): unknown[] => firewallFile(lab.sim.sim, 200).rules.map((r) => r.comment);

describe('the guest firewall through the pipeline', () => {
  it('creates the guest, then its firewall; a re-plan has nothing to do', async () => {
    const head = specs([SSH, WEB]);
    const plan = await runPlan({ head, readers: { lab: lab.reader } });
    expect(plan.errors).toEqual([]);
    expect(plan.objects.find((o) => o.key === 'lab/firewall/200')).toMatchObject({ action: 'update', after: ['lab/200'], warnings: [] });
    expect((await lab.apply(plan)).sort()).toEqual(['lab/200: applied', 'lab/firewall/200: applied']);
    expect(comments()).toEqual(['ssh', 'web']);
    expect(firewallFile(lab.sim.sim, 200).options).toEqual({ enable: 1, policy_in: 'DROP' });
    expect(changed(await runPlan({ head, readers: { lab: lab.reader } }))).toEqual([]);
  });

  it('plans a pull request that reorders and adds rules as one move and one addition', async () => {
    const base = specs([SSH, WEB]);
    await lab.apply(await runPlan({ head: base, readers: { lab: lab.reader } }));
    const head = specs([WEB, SSH, PING]);
    const pr = await runPlan({ head, base, readers: { lab: lab.reader } });
    expect(changed(pr)).toEqual(['lab/firewall/200: update']);
    expect(pr.objects.find((o) => o.key === 'lab/firewall/200')?.changes).toEqual([
      { key: 'firewall.rules #1', from: '#2', to: '#1: IN HTTPS(ACCEPT) # web', impact: 'live' },
      { key: 'firewall.rules #3', to: 'IN Ping(ACCEPT) # ping', impact: 'live' },
    ]);
    expect((await lab.apply(pr)).filter((line) => line.includes('firewall'))).toEqual(['lab/firewall/200: applied']);
    expect(comments()).toEqual(['web', 'ssh', 'ping']);
    expect(changed(await runPlan({ head, readers: { lab: lab.reader } }))).toEqual([]);
  });

  it('reports a firewall edited on the cluster as drift', async () => {
    const head = specs([SSH]);
    await lab.apply(await runPlan({ head, readers: { lab: lab.reader } }));
    await lab.client.request('PUT', '/nodes/pve-01/qemu/200/firewall/options', { policy_in: 'ACCEPT' });
    const { drifted, report } = await lab.drift(head);
    expect(drifted).toEqual([['lab/firewall/200', [{ key: 'firewall.options.policy_in', expected: 'DROP', actual: 'ACCEPT' }]]]);
    expect(report.problems).toEqual([]);
    expect(report.objects?.map((o) => o.key)).toEqual(['lab/firewall/200']);
  });

  it('warns when the firewall is enabled but no network device the spec writes has firewall=1', async () => {
    const head = specs([SSH]);
    const guest = head.guests[0]!;
    guest.config.net0 = 'virtio,bridge=vmbr0';
    const plan = await runPlan({ head, readers: { lab: lab.reader } });
    expect(plan.objects.find((o) => o.key === 'lab/firewall/200')?.warnings).toEqual([
      'the firewall of web-01 is enabled, but none of its network devices (net0) has firewall=1: Proxmox filters only those that do',
    ]);
    guest.config.net0 = 'virtio,bridge=vmbr0,firewall=1';
    expect((await runPlan({ head, readers: { lab: lab.reader } })).objects.find((o) => o.key === 'lab/firewall/200')?.warnings).toEqual([]);
  });

  it('asks check for VM.Audit to plan and VM.Config.Network to apply, on each guest that declares a firewall', () => {
    const head = specs([SSH]);
    const objects = head.objects ?? [];
    expect(kindPrivileges({ objects, guests: head.guests }, 'read')).toEqual([
      { path: '/vms/200', privilege: 'VM.Audit', why: 'to read the firewall of web-01' },
    ]);
    expect(kindPrivileges({ objects, guests: head.guests }, 'apply')).toEqual([
      { path: '/vms/200', privilege: 'VM.Config.Network', why: 'to change the firewall of web-01' },
    ]);
  });

  it('refuses a rule that names an IPset the spec does not define, where it was written', () => {
    const yaml = `${LAB_CLUSTER}---\nkind: VM\nname: web-01\ncluster: lab\nnode: pve-01\nvmid: 200\nconfig: { memory: 512 }\nfirewall:\n  ipsets: {}\n  rules:\n    - ${SSH}\n`;
    const loaded = loadSpecs([{ path: 'lab.yaml', text: yaml }]);
    expect(loaded.errors.map((e) => e.message)).toEqual([
      "firewall rule 1: source names IPset 'admins', which firewall.ipsets does not define",
    ]);
  });
});
