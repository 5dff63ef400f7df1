/**
 * The guest kind: VMs and containers, two flavours of one kind (`core/guest-flavours.ts`). Its
 * loading, planning and apply are the product's own pipeline (`core/spec`, `core/plan/plan-guest.ts`,
 * `engine/apply-guest.ts`), older than the registry; this module states the facts the registry and
 * its conformance test need, so the guest is checked like every other kind.
 */
import { OPERATIONS } from '../../operations.js';
import { ContainerDocument, VmDocument } from '../../spec/schema.js';
import { type KindFacts, SAMPLE_CLUSTER } from '../kind.js';
import { GUEST_KIND } from '../resource-key.js';

export const guestKind: KindFacts = {
  name: GUEST_KIND,
  documents: [
    { name: 'VM', schema: VmDocument },
    { name: 'Container', schema: ContainerDocument },
  ],
  phase: 'guests',
  hasNode: true,
  operations: Object.keys(OPERATIONS),
  simRoutes: ['vm', 'container'],
  testFactory: () => ({
    yaml: [
      ...SAMPLE_CLUSTER,
      'kind: VM',
      'name: app-01',
      'cluster: lab',
      'node: pve-01',
      'config: { memory: 2048, cores: 2 }',
      '---',
      'kind: Container',
      'name: ct-01',
      'cluster: lab',
      'node: pve-01',
      'create: { ostemplate: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst" }',
      'config: { memory: 512, rootfs: "local-lvm:8" }',
      '',
    ].join('\n'),
  }),
};
