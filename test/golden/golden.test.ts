/**
 * Golden files: a small plan comment and an apply comment, compared whole, so any change to what
 * a reviewer reads shows up as a diff of the file. After an intended change, regenerate them with
 * `UPDATE_GOLDEN=1 npx vitest run --config test/vitest.config.ts test/golden` and review the diff.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ApplyResult } from '../../src/core/apply-result.js';
import type { ClusterSpec, GuestSpec, ObservedGuest, Plan } from '../../src/core/model.js';
import { planScope, planSpecs } from '../../src/core/plan/plan-specs.js';
import { APPLY_MARKER, renderApplyMarkdown } from '../../src/core/render/render-apply.js';
import { PLAN_MARKER, renderPlanMarkdown } from '../../src/core/render/render-markdown.js';
import { makeClusterSpec, makeObservedVm, makeVmSpec } from '../helpers/factories.js';

const UPDATE = process.env.UPDATE_GOLDEN === '1';

/** Compares `actual` with the golden file, or rewrites the file when UPDATE_GOLDEN=1. */
async function expectGolden(name: string, actual: string): Promise<void> {
  const path = fileURLToPath(new URL(name, import.meta.url));
  if (UPDATE) {
    await writeFile(path, actual);
    return;
  }
  const expected = await readFile(path, 'utf8');
  expect(actual).toBe(expected);
}

const lab: ClusterSpec = makeClusterSpec({
  nodes: ['pve-01', 'pve-02'],
  prune: true,
  source: { file: 'lab/cluster.yaml', line: 1, col: 1 },
});

function vm(name: string, vmid: number, config: Record<string, string>, extra: Partial<GuestSpec> = {}): GuestSpec {
  return makeVmSpec(name, vmid, config, { source: { file: `lab/${name}.yaml`, line: 1, col: 1 }, ...extra });
}

function live(name: string, vmid: number, status: string, current: Record<string, string>): ObservedGuest {
  return makeObservedVm(name, vmid, current, { status, digest: `${vmid}`.padEnd(40, '0') });
}

/** A create, an update pending a restart with drift, a destroy by prune, and a no-op. */
function smallPlan(): Plan {
  const base = [
    vm('web-01', 100101, { memory: '2048', cores: '2' }),
    vm('db-01', 100102, { memory: '8192' }),
    vm('old-01', 100103, { memory: '1024' }),
  ];
  const head = [
    vm('web-01', 100101, { memory: '4096', cores: '4' }),
    vm('db-01', 100102, { memory: '8192' }),
    vm('app-01', 100104, { memory: '2048', scsi0: 'local-lvm:32', net0: 'virtio,bridge=vmbr0' }, { power: 'running', vmidDerived: true }),
  ];
  const guests = [
    live('web-01', 100101, 'running', { memory: '2048', cores: '2', cpulimit: '1' }),
    live('db-01', 100102, 'running', { memory: '8192' }),
    live('old-01', 100103, 'stopped', { memory: '1024' }),
  ];
  const headSet = { clusters: [lab], guests: head };
  return planSpecs({
    head: headSet,
    base: { clusters: [lab], guests: base },
    scope: planScope(headSet),
    observed: {
      clusters: {
        lab: {
          name: 'lab',
          nodes: ['pve-01', 'pve-02'],
          listing: guests.map((g) => ({ vmid: g.vmid, type: g.type, node: g.node, status: g.status, tags: g.current.tags })),
          guests: Object.fromEntries(guests.map((g) => [g.vmid, g])),
          unlisted: { 100104: false },
        },
      },
    },
    ref: 'abc1234',
    now: new Date('2025-01-01T00:00:00.000Z'),
  });
}

const UPID = (node: string, type: string, vmid: number): string =>
  `UPID:${node}:0000A1B2:0001C3D4:65A1B2C3:${type}:${vmid}:gitops@pve!apply:`;

function smallApply(): ApplyResult {
  return {
    version: 1,
    startedAt: '2025-01-01T00:10:00.000Z',
    finishedAt: '2025-01-01T00:10:42.250Z',
    ref: 'abc1234',
    guests: [
      {
        cluster: 'lab',
        name: 'app-01',
        vmid: 100104,
        node: 'pve-01',
        status: 'applied',
        steps: [
          { op: 'create', detail: 'create on pve-01', upid: UPID('pve-01', 'qmcreate', 100104), exitStatus: 'OK', ms: 2300 },
          { op: 'start', upid: UPID('pve-01', 'qmstart', 100104), exitStatus: 'OK', ms: 1200 },
        ],
      },
      {
        cluster: 'lab',
        name: 'web-01',
        vmid: 100101,
        node: 'pve-01',
        status: 'applied',
        steps: [{ op: 'config', detail: 'set cores, memory', ms: 180 }],
        pending: ['cores'],
      },
      {
        cluster: 'lab',
        name: 'old-01',
        vmid: 100103,
        node: 'pve-01',
        status: 'conflict',
        steps: [],
        conflict: [{ key: 'protection', now: { to: '1' } }],
      },
      {
        cluster: 'lab',
        name: 'db-01',
        vmid: 100102,
        node: 'pve-01',
        status: 'failed',
        steps: [{ op: 'wait-lock', detail: 'locked (backup)', ms: 600000 }],
        error: 'VM is locked (backup): waited 600 s',
      },
    ],
  };
}

describe('golden comments', () => {
  it('plan comment (test/golden/plan-comment.md)', async () => {
    await expectGolden('plan-comment.md', `${renderPlanMarkdown(smallPlan(), { marker: PLAN_MARKER })}\n`);
  });

  it('apply comment (test/golden/apply-comment.md)', async () => {
    await expectGolden('apply-comment.md', `${renderApplyMarkdown(smallApply(), { marker: APPLY_MARKER })}\n`);
  });
});
