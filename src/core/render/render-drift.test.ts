import { describe, expect, it } from 'vitest';
import type { DriftFinding, DriftGuest, DriftReport } from '../drift/drift-report.js';
import { GITHUB_COMMENT_LIMIT } from './markdown-format.js';
import { DRIFT_MARKER_PREFIX, driftMarker, driftMarkerHash, renderDriftClosing, renderDriftReport, yamlScalar } from './render-drift.js';

const SEEN = '2030-06-01T08:00:00.000Z';

function finding(overrides: Partial<DriftFinding> = {}): DriftFinding {
  return { id: 'lab/100101#memory', kind: 'config', key: 'memory', expected: '2048', actual: '4096', firstSeen: SEEN, ...overrides };
}

function guest(overrides: Partial<DriftGuest> = {}): DriftGuest {
  return {
    cluster: 'lab',
    name: 'web-01',
    vmid: 100101,
    node: 'pve-01',
    type: 'qemu',
    source: { file: 'vms/web.yaml', line: 1, col: 1 },
    keySources: { memory: { file: 'vms/web.yaml', line: 7, col: 3 } },
    findings: [finding()],
    ...overrides,
  };
}

function makeReport(overrides: Partial<DriftReport> = {}): DriftReport {
  return {
    ref: 'c'.repeat(40),
    checkedAt: '2030-06-15T12:00:00.000Z',
    clusters: [{ name: 'lab', checked: 2, drifted: 1, orphans: 0, unowned: 0, pending: 0, errors: 0, allowed: 0 }],
    problems: [],
    guests: [guest()],
    pending: [],
    guestErrors: [],
    expiredAllows: [],
    allowed: 0,
    firstSeen: {},
    ...overrides,
  };
}

const marker = driftMarker('0123456789abcdef0123456789abcdef');

/** The table row of `key` in a rendered report. */
function row(body: string, key: string): string | undefined {
  return body.split('\n').find((line) => line.startsWith(`| \`${key}\` |`));
}

describe('the drift report body', () => {
  it('starts with the marker carrying the content hash, which reads back', () => {
    const body = renderDriftReport(makeReport(), { marker });
    expect(body.startsWith(`${DRIFT_MARKER_PREFIX} content=0123456789abcdef0123456789abcdef -->\n`)).toBe(true);
    expect(driftMarkerHash(body)).toBe('0123456789abcdef0123456789abcdef');
    expect(driftMarkerHash('<!-- pve-gitops:plan -->')).toBeUndefined();
  });

  it.each<[string, Partial<DriftFinding>, string]>([
    ['a changed value: set it in the spec, at the key', {}, 'set `memory: 4096` in `specs/vms/web.yaml:7`'],
    ['a value the guest lost: remove it from the spec', { actual: undefined }, 'remove `memory` from `specs/vms/web.yaml:7`'],
    [
      'a value the spec does not set: add it',
      { key: 'balloon', expected: undefined, actual: '0' },
      'add `balloon: 0` under `config:` in `specs/vms/web.yaml`',
    ],
    [
      'a value needing quotes in YAML',
      { key: 'description', expected: 'a', actual: 'two words: yes' },
      'set `description: "two words: yes"` in `specs/vms/web.yaml:1`',
    ],
    [
      'a secret: never shown',
      { key: 'cipassword', expected: 'old', actual: 'hunter2' },
      'set `cipassword` to the live value in `specs/vms/web.yaml:1`',
    ],
    ['power', { kind: 'power', key: 'power', expected: 'running', actual: 'stopped' }, 'set `power: stopped` in `specs/vms/web.yaml:1`'],
    ['power in another state', { kind: 'power', key: 'power', expected: 'running', actual: 'paused' }, 'set `power: ignore`'],
  ])('%s', (_name, overrides, keepLive) => {
    const f = finding(overrides);
    const body = renderDriftReport(makeReport({ guests: [guest({ findings: [f] })] }), { marker, repoPath: (file) => `specs/${file}` });
    const line = row(body, f.key);
    expect(line).toBeDefined();
    expect(line).toContain(keepLive);
    expect(line).toContain('2030-06-01 08:00 UTC');
    if (f.key === 'cipassword') {
      expect(body).not.toContain('hunter2');
      expect(body).not.toContain('`old`');
      expect(line).toContain('`(sensitive)`');
    }
  });

  it('a missing guest: keep git creates it again, keep live removes the spec', () => {
    const body = renderDriftReport(
      makeReport({ guests: [guest({ findings: [finding({ kind: 'missing', key: 'missing', expected: 'present', actual: undefined })] })] }),
      { marker },
    );
    expect(body).toContain('| *(the guest)* | present | **missing** |');
    expect(body).toContain('delete `vms/web.yaml`, or set `state: absent` in it');
    expect(body).toContain('**Keep git:** `pve-gitops apply` on the default branch creates the guest again.');
  });

  it('orphans and unowned guests say how to keep, adopt or let them go', () => {
    const body = renderDriftReport(
      makeReport({
        guests: [
          guest({ name: 'old-01', vmid: 100150, findings: [finding({ kind: 'orphan', key: 'orphan', expected: undefined })] }),
          guest({ name: 'hand-01', vmid: 100160, findings: [finding({ kind: 'unowned', key: 'unowned', actual: "no 'pve-gitops' tag" })] }),
        ],
      }),
      { marker },
    );
    expect(body).toContain('**lab/old-01** (100150) on pve-01: owned, without a spec');
    expect(body).toContain('set `prune: true` on cluster `lab`');
    expect(body).toContain('**lab/hand-01** (100160) on pve-01: not owned');
    expect(body).toContain('`adopt: true`');
    expect(body).toContain('`keys: [unowned]`');
  });

  it('escapes what comes from the cluster: names and values cannot break the table or add markup', () => {
    const body = renderDriftReport(makeReport({ guests: [guest({ name: 'x|<img src=y>', findings: [finding({ actual: 'a|b`c' })] })] }), {
      marker,
    });
    expect(body).not.toMatch(/(^|[^\\])<img/);
    expect(body).toContain('x\\|\\<img src=y\\>');
    expect(row(body, 'memory')).toContain('| ``a\\|b`c`` |');
  });

  it('names the schedule when there is one, and the allowed differences', () => {
    const body = renderDriftReport(makeReport({ allowed: 2 }), { marker, schedule: 'every hour' });
    expect(body).toContain('pve-gitops reads the clusters every hour; this issue is edited only when the findings change');
    expect(body).toContain('_2 intended differences allowed by `.github/pve-gitops.yml`, not listed._');
  });

  it('says how to adopt the live values where the repository turned `/pve adopt` on, and only there', () => {
    expect(renderDriftReport(makeReport(), { marker, adopt: true })).toContain(
      '`/pve adopt` here opens a pull request taking every live value into the specs (`/pve adopt <guest> [<key> …]`: only those).',
    );
    expect(renderDriftReport(makeReport(), { marker })).not.toContain('/pve adopt');
  });

  it('stays under GitHub’s limit for 10,000 drifted guests, keeps the summary, and says what it left out', () => {
    const guests = Array.from({ length: 10_000 }, (_, i) =>
      guest({
        name: `vm-${i}`,
        vmid: 100000 + i,
        findings: [finding({ id: `lab/${100000 + i}#memory` }), finding({ key: 'cores', expected: '2', actual: '4' })],
      }),
    );
    const clusters = [{ name: 'lab', checked: 10_000, drifted: 10_000, orphans: 0, unowned: 0, pending: 0, errors: 0, allowed: 0 }];
    const body = renderDriftReport(makeReport({ guests, clusters }), { marker });
    expect(body.length).toBeLessThanOrEqual(65_000);
    expect(body.length).toBeLessThan(GITHUB_COMMENT_LIMIT);
    expect(body).toContain('**10000 drifted guests**');
    expect(body).toMatch(
      /\*\*\d+ entries left out\*\* to stay under GitHub's size limit: `pve-gitops drift --format json` lists everything\./,
    );
  });

  it('no findings: says so', () => {
    const report = makeReport({
      guests: [],
      clusters: [{ name: 'lab', checked: 2, drifted: 0, orphans: 0, unowned: 0, pending: 0, errors: 0, allowed: 1 }],
      allowed: 1,
    });
    expect(renderDriftReport(report, { marker })).toContain('**No drift**: every owned guest matches the default branch.');
    expect(renderDriftClosing(report)).toBe(
      'No drift left: every owned guest matches the default branch at `cccccccccccc` (1 allowed difference not counted), read on 2030-06-15 12:00 UTC. Closing; pve-gitops reopens this issue when drift returns.',
    );
  });
});

describe('yamlScalar', () => {
  it.each([
    ['4096', '4096'],
    ['virtio,bridge=vmbr0', 'virtio,bridge=vmbr0'],
    ['local-lvm:32', '"local-lvm:32"'],
    ['two words', '"two words"'],
    ['#comment', '"#comment"'],
    ['a"b', '"a\\"b"'],
    ['', '""'],
  ])('%s → %s', (value, expected) => {
    expect(yamlScalar(value)).toBe(expected);
  });
});
