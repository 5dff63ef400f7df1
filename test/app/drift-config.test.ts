import { describe, expect, it } from 'vitest';
import { adoptEnabled, parseRepoConfig, RepoConfigError } from '../../src/github/repo-config.js';
import { intervalWords, loadServerConfig } from '../../src/server/config.js';
import { VALID_SERVER_ENV } from './server-env.js';

const valid = VALID_SERVER_ENV;

async function load(env: Record<string, string>): Promise<{ config?: Record<string, unknown>; problems: string[] }> {
  const result = await loadServerConfig({ ...valid, ...env }, { cwd: process.cwd(), role: 'all' });
  return result.ok ? { config: result.config as unknown as Record<string, unknown>, problems: [] } : { problems: result.problems };
}

describe('server configuration of the drift report and the metrics', () => {
  it('defaults: an hourly drift report, /metrics on the webhook port', async () => {
    expect((await load({})).config).toMatchObject({ driftIntervalMs: 3600_000, metricsPath: '/metrics', metricsPort: undefined });
  });

  it.each([
    ['0', 0],
    ['3600', 3600_000],
    ['90s', 90_000],
    ['30m', 1800_000],
    ['2h', 7200_000],
    ['1d', 86_400_000],
  ])('DRIFT_INTERVAL=%s is %d ms', async (raw, ms) => {
    expect((await load({ DRIFT_INTERVAL: raw })).config?.driftIntervalMs).toBe(ms);
  });

  it.each(['59', '10s', '8d', 'hourly', '-1'])('DRIFT_INTERVAL=%s is refused, naming the variable', async (raw) => {
    const { problems } = await load({ DRIFT_INTERVAL: raw });
    expect(problems).toEqual([`DRIFT_INTERVAL: must be 0 (off) or from 60s to 7d, like 3600, 30m or 1h; got '${raw}'`]);
  });

  it('METRICS_PORT and METRICS_PATH: a port of their own, a path that is not taken', async () => {
    expect((await load({ METRICS_PORT: '9464', METRICS_PATH: '/internal/metrics' })).config).toMatchObject({
      metricsPort: 9464,
      metricsPath: '/internal/metrics',
    });
    expect((await load({ METRICS_PATH: '/healthz' })).problems).toEqual([
      "METRICS_PATH: '/healthz' is taken by the webhook or health endpoints",
    ]);
    expect((await load({ METRICS_PATH: 'metrics' })).problems[0]).toMatch(/^METRICS_PATH: must be a URL path/);
    expect((await load({ METRICS_PORT: '70000' })).problems[0]).toMatch(/^METRICS_PORT: must be the TCP port of the metrics/);
  });

  it.each([
    [3600_000, 'every hour'],
    [1800_000, 'every 30 minutes'],
    [86_400_000, 'every day'],
    [90_000, 'every 90 seconds'],
  ])('%d ms reads "%s" in the report', (ms, words) => {
    expect(intervalWords(ms)).toBe(words);
  });
});

describe('.github/pve-gitops.yml drift.allow', () => {
  const path = '.github/pve-gitops.yml';

  it('reads entries by name or VMID, with an optional expiry day', () => {
    const text = [
      'specs: estate',
      'drift:',
      '  allow:',
      '    - guest: lab/web-01',
      '      keys: [memory, cores]',
      '      reason: load test',
      '      expires: 2030-03-31',
      '    - guest: lab/100160',
      '      keys: [unowned]',
      '      reason: managed by hand',
    ].join('\n');
    expect(parseRepoConfig(path, text)).toEqual({
      specs: 'estate',
      specRoot: 'estate',
      drift: {
        allow: [
          { guest: 'lab/web-01', keys: ['memory', 'cores'], reason: 'load test', expires: '2030-03-31' },
          { guest: 'lab/100160', keys: ['unowned'], reason: 'managed by hand' },
        ],
      },
    });
  });

  it.each([
    [
      'a guest without its cluster',
      'guest: web-01\n      keys: [memory]\n      reason: x',
      'drift.allow.0.guest: must be cluster/name or cluster/vmid',
    ],
    ['no reason', 'guest: lab/web-01\n      keys: [memory]', 'drift.allow.0.reason:'],
    ['an empty reason', "guest: lab/web-01\n      keys: [memory]\n      reason: ' '", 'must say why the difference is intended'],
    ['no keys', 'guest: lab/web-01\n      keys: []\n      reason: x', 'drift.allow.0.keys:'],
    [
      'a day that does not exist',
      'guest: lab/web-01\n      keys: [memory]\n      reason: x\n      expires: 2030-02-30',
      'must be a real date YYYY-MM-DD',
    ],
    [
      'a time instead of a day',
      "guest: lab/web-01\n      keys: [memory]\n      reason: x\n      expires: '2030-02-01T00:00'",
      'must be a date YYYY-MM-DD',
    ],
    [
      'an unknown key',
      'guest: lab/web-01\n      keys: [memory]\n      reason: x\n      until: 2030-01-01',
      'unknown key until (known: guest, keys, reason, expires)',
    ],
  ])('refuses %s, naming the file and the entry', (_name, entry, message) => {
    const text = `drift:\n  allow:\n    - ${entry}\n`;
    expect(() => parseRepoConfig(path, text)).toThrow(RepoConfigError);
    expect(() => parseRepoConfig(path, text)).toThrow(message);
  });

  it('an unknown key under drift names what is known', () => {
    expect(() => parseRepoConfig(path, 'drift:\n  ignore: []\n')).toThrow('drift: unknown key ignore (known: allow)');
    expect(() => parseRepoConfig(path, 'drfit: {}\n')).toThrow('unknown key drfit (known: specs, drift, forks, adopt, rehearsal)');
  });

  it('adopt: on (or true) turns `/pve adopt` on; off, false or absent leave it off; anything else is an error', () => {
    expect(adoptEnabled(parseRepoConfig(path, 'adopt: on\n'))).toBe(true);
    expect(adoptEnabled(parseRepoConfig(path, 'adopt: true\n'))).toBe(true);
    expect(adoptEnabled(parseRepoConfig(path, 'adopt: off\n'))).toBe(false);
    expect(adoptEnabled(parseRepoConfig(path, 'adopt: false\n'))).toBe(false);
    expect(adoptEnabled(parseRepoConfig(path, undefined))).toBe(false);
    expect(() => parseRepoConfig(path, 'adopt: maybe\n')).toThrow(/^\.github\/pve-gitops\.yml: adopt: /);
  });
});
