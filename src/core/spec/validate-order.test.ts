import { describe, expect, it } from 'vitest';
import { formatSpecError } from './errors.js';
import { loadSpecs, type SpecFile } from './load-specs.js';

const CLUSTER = `kind: Cluster
name: lab
vmids: { lower: 100000, upper: 199999 }
nodes: [pve-01]
`;

/** A VM `name` of `lab` with `extra` top-level lines. */
const vm = (name: string, vmid: number, extra = ''): string => `kind: VM
name: ${name}
cluster: lab
node: pve-01
vmid: ${vmid}
${extra}config:
  memory: 2048
`;

const run = (files: Record<string, string>): string[] => {
  const list: SpecFile[] = Object.entries(files).map(([path, text]) => ({ path, text }));
  return loadSpecs([{ path: 'clusters.yaml', text: CLUSTER }, ...list]).errors.map(formatSpecError);
};

describe('dependsOn and restart validation (file:line:col: message)', () => {
  it.each<[string, Record<string, string>, string[]]>([
    ['a valid dependency', { 'a.yaml': vm('a', 100001, 'dependsOn: [b]\n'), 'b.yaml': vm('b', 100002) }, []],
    [
      'an unknown name',
      { 'a.yaml': vm('a', 100001, 'dependsOn: [nope]\n') },
      ["a.yaml:6:13: dependsOn: no guest named 'nope' in cluster lab (dependsOn names guests of the same cluster)"],
    ],
    ['the guest itself', { 'a.yaml': vm('a', 100001, 'dependsOn: [a]\n') }, ['a.yaml:6:13: dependsOn: a is this guest itself']],
    [
      'a cycle of three, named once',
      {
        'a.yaml': vm('a', 100001, 'dependsOn: [b]\n'),
        'b.yaml': vm('b', 100002, 'dependsOn: [c]\n'),
        'c.yaml': vm('c', 100003, 'dependsOn: [a]\n'),
      },
      ['c.yaml:6:13: dependsOn cycle: a → b → c → a; no guest of it could ever apply'],
    ],
    [
      'restart: in-window on a guest',
      { 'a.yaml': vm('a', 100001, 'restart: in-window\n') },
      [
        'a.yaml:6:10: restart: in-window needs apply windows, which pve-gitops does not have yet; use never or allowed (see README "Restarts")',
      ],
    ],
    ['restart: allowed as a mapping', { 'a.yaml': vm('a', 100001, 'restart: { policy: allowed, force: true, timeout: 120 }\n') }, []],
  ])('%s', (_name, files, expected) => {
    expect(run(files).sort()).toEqual(expected);
  });

  it('reads restart and restartsInFlight from the Cluster document, and refuses in-window there too', () => {
    const loaded = loadSpecs([{ path: 'clusters.yaml', text: `${CLUSTER}restart: allowed\nrestartsInFlight: 3\n` }]);
    expect(loaded.errors).toEqual([]);
    expect(loaded.specs.clusters[0]).toMatchObject({ restart: { policy: 'allowed', force: false, timeout: 180 }, restartsInFlight: 3 });
    const refused = loadSpecs([{ path: 'clusters.yaml', text: `${CLUSTER}restart: in-window\n` }]).errors.map(formatSpecError);
    expect(refused).toEqual([
      'clusters.yaml:5:10: restart: in-window needs apply windows, which pve-gitops does not have yet; use never or allowed (see README "Restarts")',
    ]);
  });
});
