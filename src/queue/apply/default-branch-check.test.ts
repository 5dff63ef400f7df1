import { describe, expect, it } from 'vitest';
import type { GuestSpec } from '../../core/model.js';
import { makeClusterSpec, makeGuestPlan, makePlan, makeVmSpec } from '../../../test/helpers/factories.js';
import { guestsTheBranchChanged } from './default-branch-check.js';

const APPLIED = new Set(['create', 'update', 'destroy']);
const lab = makeClusterSpec();
const app = makeVmSpec('app-01', 100101, { memory: '4096' });
const db = makeVmSpec('db-01', 100102, { memory: '2048' });

/** A stored plan updating app-01 and db-01 to the given head specs (`undefined`: db-01 destroyed, no spec at head). */
function stored(head: { app: GuestSpec; db?: GuestSpec }) {
  return {
    plan: makePlan([
      makeGuestPlan({ name: 'app-01', vmid: 100101 }),
      makeGuestPlan({ name: 'db-01', vmid: 100102, action: head.db ? 'update' : 'destroy' }),
      makeGuestPlan({ name: 'web-01', vmid: 100103, action: 'noop' }),
    ]),
    specs: { clusters: [lab], guests: [head.app, ...(head.db ? [head.db] : [])] },
  };
}

describe('guestsTheBranchChanged', () => {
  it.each([
    ['the branch says what the head said', stored({ app, db }), { clusters: [lab], guests: [app, db] }, []],
    [
      'a document moved to another file or line changes nothing',
      stored({ app, db }),
      {
        clusters: [{ ...lab, source: { file: 'c.yaml', line: 9, col: 1 } }],
        guests: [{ ...app, source: { file: 'x.yaml', line: 3, col: 1 } }, db],
      },
      [],
    ],
    [
      'a later merge set another memory',
      stored({ app, db }),
      { clusters: [lab], guests: [{ ...app, config: { memory: '8192' } }, db] },
      ['lab/app-01'],
    ],
    ['a later merge removed the spec', stored({ app, db }), { clusters: [lab], guests: [db] }, ['lab/app-01']],
    [
      'a later merge changed the Cluster document',
      stored({ app, db }),
      { clusters: [{ ...lab, prune: true }], guests: [app, db] },
      ['lab/app-01', 'lab/db-01'],
    ],
    ['a destroy the branch agrees with (no spec there either)', stored({ app }), { clusters: [lab], guests: [app] }, []],
    ['a destroy the branch undid (the spec is back)', stored({ app }), { clusters: [lab], guests: [app, db] }, ['lab/db-01']],
    [
      'a guest the plan does not change is not compared',
      stored({ app, db }),
      { clusters: [lab], guests: [app, db, makeVmSpec('web-01', 100103, { memory: '1' })] },
      [],
    ],
  ])('%s', (_name, plan, branch, expected) => {
    expect(guestsTheBranchChanged(plan, branch, APPLIED)).toEqual(expected);
  });
});
