import { describe, expect, it } from 'vitest';
import type { Operation } from './model.js';
import { describeOperation, OPERATIONS, sameOperation, summariseOperation } from './operations.js';

const EXAMPLES: { [K in Operation['op']]: Extract<Operation, { op: K }> } = {
  create: { op: 'create', node: 'pve-01', params: { memory: '512', cores: '1' } },
  config: { op: 'config', set: { memory: '1024' }, delete: ['cpulimit'], from: { memory: '512', cpulimit: '2' } },
  resize: { op: 'resize', disk: 'scsi0', size: '64G', from: '32G' },
  'move-disk': { op: 'move-disk', disk: 'scsi0', storage: 'ceph', from: 'local-lvm' },
  start: { op: 'start' },
  shutdown: { op: 'shutdown' },
  stop: { op: 'stop' },
  destroy: { op: 'destroy' },
  clone: {
    op: 'clone',
    node: 'pve-02',
    source: { vmid: 9000, node: 'pve-01', name: 'debian-12-cloud' },
    full: false,
    config: { name: 'debian-12-cloud', template: '1' },
    params: { name: 'web-03' },
  },
  template: { op: 'template' },
  cloudinit: { op: 'cloudinit' },
};

describe('the operation registry', () => {
  it('describes every operation of the model', () => {
    expect(Object.keys(OPERATIONS).sort()).toEqual(Object.keys(EXAMPLES).sort());
  });

  it.each([
    ['create', 'create on node `pve-01`', 'create on pve-01'],
    ['config', undefined, 'set memory, delete cpulimit'],
    ['resize', 'resize `scsi0` from `32G` to `64G` (grows only)', 'resize scsi0 32G → 64G'],
    ['move-disk', 'move `scsi0` from storage `local-lvm` to `ceph`', 'move scsi0 local-lvm → ceph'],
    ['shutdown', 'shut down (clean)', 'shutdown'],
    ['destroy', '**destroy the guest and its disks**', 'destroy'],
    [
      'clone',
      'linked clone of template `debian-12-cloud` (VMID `9000`) on `pve-01` to node `pve-02`',
      'linked clone of debian-12-cloud (9000) to pve-02',
    ],
    ['template', 'convert to a template (never started)', 'convert to template'],
  ] as const)('%s: a reviewer line and a result line', (name, review, result) => {
    const op = EXAMPLES[name];
    expect(describeOperation(op, { value: (v) => `\`${v}\``, emphasise: (t) => `**${t}**` })).toBe(review);
    expect(summariseOperation(op)).toBe(result);
  });

  it('tells a changed step from the reviewed one', () => {
    expect(sameOperation(EXAMPLES.resize, { ...EXAMPLES.resize })).toBe(true);
    expect(sameOperation(EXAMPLES.resize, { ...EXAMPLES.resize, size: '128G' })).toBe(false);
    expect(sameOperation(EXAMPLES['move-disk'], { ...EXAMPLES['move-disk'], from: 'nfs' })).toBe(false);
    expect(sameOperation(EXAMPLES.create, { ...EXAMPLES.create, params: { cores: '1', memory: '512' } })).toBe(true);
    expect(sameOperation(EXAMPLES.create, { ...EXAMPLES.create, params: { memory: '1024', cores: '1' } })).toBe(false);
    expect(sameOperation(EXAMPLES.start, EXAMPLES.stop)).toBe(false);
  });
});
