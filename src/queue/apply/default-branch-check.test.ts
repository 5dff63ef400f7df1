import { describe, expect, it } from 'vitest';
import type { GuestSpec, ObjectPlan, ObjectSpec } from '../../core/model.js';
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

describe('guestsTheBranchChanged, for items of other kinds', () => {
  const web: ObjectSpec = {
    kind: 'pool',
    document: 'Pool',
    cluster: 'lab',
    id: 'web',
    state: 'present',
    fields: { comment: 'Web servers' },
    source: { file: 'pools.yaml', line: 1, col: 1 },
  };
  const item = (key: string, name: string, after?: string): ObjectPlan => ({
    kind: key.split('/')[1] as string,
    key,
    cluster: 'lab',
    name,
    action: 'update',
    changes: [],
    operations: [{ op: 'set' }],
    drift: [],
    errors: [],
    warnings: [],
    severity: 'configuration',
    ...(after !== undefined ? { after: [after] } : {}),
    payload: {},
  });
  const plan = { ...makePlan([makeGuestPlan({ name: 'app-01', vmid: 100101, action: 'noop' })]) };
  plan.objects = [item('lab/pool/web', 'web'), item('lab/pool-member/100101', 'app-01', 'lab/100101')];
  const storedWith = { plan, specs: { clusters: [lab], guests: [app], objects: [web] } };

  it.each([
    ['the branch says what the head said', storedWith, { clusters: [lab], guests: [app], objects: [web] }, []],
    [
      "a later merge changed the object's document",
      storedWith,
      { clusters: [lab], guests: [app], objects: [{ ...web, fields: { comment: 'Front ends' } }] },
      ['lab: pool web'],
    ],
    [
      'a later merge changed the guest an item follows',
      storedWith,
      { clusters: [lab], guests: [{ ...app, config: { memory: '8192' } }], objects: [web] },
      ['lab: pool-member app-01'],
    ],
    [
      "a plan stored without its objects' documents cannot show the branch agrees",
      { plan, specs: { clusters: [lab], guests: [app] } },
      { clusters: [lab], guests: [app], objects: [web] },
      ['lab: pool web'],
    ],
  ])('%s', (_name, stored, branch, expected) => {
    expect(guestsTheBranchChanged(stored, branch, APPLIED)).toEqual(expected);
  });
});
