import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SpecSet } from '../../src/core/model.js';
import { planHasChanges } from '../../src/core/plan/plan-specs.js';
import { loadSpecs } from '../../src/core/spec/load-specs.js';
import { executePlan } from '../../src/engine/execute-plan.js';
import { runPlan } from '../../src/engine/run-plan.js';
import { startEstate, type Estate } from './helpers.js';

let estate: Estate;
beforeEach(async () => {
  estate = await startEstate();
});
afterEach(async () => {
  await estate.close();
});

const CLUSTER = `kind: Cluster
name: lab
vmids: { lower: 100000, upper: 199999 }
nodes: [pve-01, pve-02]
`;

function specs(guests: string): SpecSet {
  const loaded = loadSpecs([{ path: 'specs.yaml', text: `${CLUSTER}---\n${guests}` }]);
  expect(loaded.errors.map((e) => e.message)).toEqual([]);
  return loaded.specs;
}

/** Creates the guests, then plans again: a perpetual diff here would show on every pull request. */
async function roundTrip(set: SpecSet): Promise<void> {
  const plan = await runPlan({ head: set, readers: estate.readers });
  expect(plan.errors).toEqual([]);
  const result = await executePlan(plan, estate.writers, { lockPollMs: 20 });
  const unhappy = result.guests.filter((g) => g.status !== 'applied');
  expect(unhappy).toEqual([]);
  const again = await runPlan({ head: set, readers: estate.readers });
  const leftovers = again.guests.filter((g) => g.action !== 'noop').map((g) => ({ name: g.name, changes: g.changes, errors: g.errors }));
  expect(leftovers).toEqual([]);
  expect(planHasChanges(again)).toBe(false);
}

describe('create, then plan again: nothing to do', () => {
  it('for VMs with UEFI, TPM, cloud-init, qcow2 on directory storage and several NICs, running and stopped', async () => {
    await roundTrip(
      specs(`kind: VM
name: uefi-01
cluster: lab
node: pve-01
vmid: 100001
power: running
config:
  bios: ovmf
  machine: q35
  ostype: win11
  memory: 8192
  cores: 4
  efidisk0: local-lvm:1,efitype=4m,pre-enrolled-keys=1
  tpmstate0: local-lvm:1,version=v2.0
  scsi0: local:64,format=qcow2,discard=on
  ide2: local:cloudinit
  net0: virtio,bridge=vmbr0
  net1: { model: e1000, bridge: vmbr1, firewall: true, tag: 20 }
  startup: order=2,up=30
  tags: [win, Lab]
---
kind: VM
name: plain-01
cluster: lab
node: pve-02
vmid: 100002
power: stopped
config:
  memory: 1024
  scsi0: local-lvm:8
  ipconfig0: ip=10.0.0.5/24,gw=10.0.0.1
  agent: { enabled: true }
  description: |
    Two lines
    of description.
`),
    );
  });

  it('for containers with mount points, features and defaults Proxmox fills in', async () => {
    await roundTrip(
      specs(`kind: Container
name: ct-01
cluster: lab
node: pve-01
vmid: 100101
power: running
create:
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
config:
  cores: 2
  rootfs: local-lvm:8
  mp0: local-lvm:16,mp=/srv,backup=1
  features: { nesting: true }
  net0: name=eth0,bridge=vmbr0,ip=dhcp
  onboot: true
---
kind: Container
name: ct-02
cluster: lab
node: pve-02
vmid: 100102
create:
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
config:
  hostname: ct-02.example.net
  memory: 256
`),
    );
  });
});
