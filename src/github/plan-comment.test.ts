import { describe, expect, it } from 'vitest';
import { makeGuestPlan, makePlan } from '../../test/helpers/factories.js';
import { GITHUB_COMMENT_LIMIT } from '../core/render/markdown-format.js';
import { planAnnotations, planCheckResult, renderPlanComment, renderProblemsComment } from './plan-comment.js';

const commits = { headSha: 'a'.repeat(40), baseSha: 'b'.repeat(40), draft: false };

function bigPlan(guests: number) {
  return makePlan(
    Array.from({ length: guests }, (_, i) =>
      makeGuestPlan({
        name: `app-${i}`,
        vmid: 100000 + i,
        changes: Array.from({ length: 30 }, (_, k) => ({
          key: `key${k}`,
          from: 'x'.repeat(60),
          to: 'y'.repeat(60),
          impact: 'live' as const,
        })),
        source: { file: `lab/app-${i}.yaml`, line: 1, col: 1 },
      }),
    ),
  );
}

describe('the plan comment', () => {
  it('is the same text for the same plan made at another time, so an unchanged re-plan edits nothing', () => {
    const plan = makePlan([makeGuestPlan({ changes: [{ key: 'memory', from: '1024', to: '2048', impact: 'live' }] })]);
    const later = { ...plan, createdAt: '2031-05-05T05:05:05.555Z' };
    expect(renderPlanComment(later, commits, [])).toBe(renderPlanComment(plan, commits, []));
    expect(renderPlanComment(plan, commits, [])).not.toMatch(/20\d\d-\d\d-\d\d/);
  });

  it('stays under GitHub’s limit for 10,000 changed guests that all race with other pull requests', () => {
    const plan = bigPlan(10_000);
    const overlaps = plan.guests.map((g) => ({ guest: `lab/${g.name}`, vmid: g.vmid, prs: [1, 2, 3] }));
    const body = renderPlanComment(plan, { ...commits, draft: true }, overlaps);
    expect(body.length).toBeLessThan(GITHUB_COMMENT_LIMIT);
    expect(body).toContain('| **lab/app-0** (100000) | #1, #2, #3 |');
    expect(body).toContain('…and 9950 more guests other pull requests touch too.');
    expect(body).toContain('> 📝 **Draft pull request**');
    expect(body).toMatch(/\*\*10,?000 to update\*\*/);
  });

  it('names spec files by their repository path', () => {
    const plan = makePlan([
      makeGuestPlan({ changes: [{ key: 'cores', from: '1', to: '2', impact: 'live' }], source: { file: 'web.yaml', line: 4, col: 1 } }),
    ]);
    expect(renderPlanComment(plan, commits, [], (file) => `specs/${file}`)).toContain('spec: `specs/web.yaml:4`');
  });

  it('escapes what a spec author wrote in a problem, so it cannot ping, link or break the list', () => {
    const body = renderProblemsComment(
      'The specs are invalid',
      [{ path: 'a|b.yaml', line: 2, col: 3, message: '@everyone <img src=x> [x](http://evil)' }],
      commits,
    );
    expect(body).toContain('- `a\\|b.yaml:2:3`: @everyone \\<img src=x\\> \\[x\\](http://evil)');
  });

  it('keeps a problems comment under the limit whatever the number of problems', () => {
    const problems = Array.from({ length: 50_000 }, (_, i) => ({ path: `f${i}.yaml`, line: i, col: 1, message: 'unknown key "x" in VM' }));
    const body = renderProblemsComment('The specs are invalid', problems, commits);
    expect(body.length).toBeLessThan(GITHUB_COMMENT_LIMIT);
    expect(body).toMatch(/…and \d+ more problems\./);
  });
});

describe('the check run result', () => {
  it('fails on plan errors with annotations on the Cluster document and guest specs; succeeds on changes', () => {
    const failing = makePlan(
      [
        makeGuestPlan({
          action: 'error',
          errors: ['VMID 100101 is taken by an unowned guest'],
          source: { file: 'web.yaml', line: 7, col: 1 },
        }),
      ],
      {
        errors: [{ cluster: 'lab', message: "cluster 'lab' could not be read: connect ECONNREFUSED" }],
      },
    );
    const annotations = planAnnotations(failing, (f) => `specs/${f}`, new Map([['lab', { file: 'cluster.yaml', line: 3 }]]));
    expect(annotations.map((a) => [a.path, a.start_line, a.annotation_level])).toEqual([
      ['specs/cluster.yaml', 3, 'failure'],
      ['specs/web.yaml', 7, 'failure'],
    ]);
    const result = planCheckResult(failing, commits, [], annotations);
    expect(result.conclusion).toBe('failure');
    expect(result.summary).toContain("- ⚠️ cluster 'lab' could not be read: connect ECONNREFUSED");
    const passing = makePlan([makeGuestPlan({ changes: [{ key: 'cores', from: '1', to: '2', impact: 'live' }] })]);
    expect(planCheckResult(passing, commits, [], []).conclusion).toBe('success');
  });
});
