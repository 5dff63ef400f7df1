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
        'a.yaml:6:10: restart: in-window needs apply windows: add windows: to the guest or its Cluster document, or use never or allowed (see README "Apply windows")',
      ],
    ],
    [
      'restart: in-window with windows of its own',
      { 'a.yaml': vm('a', 100001, "restart: in-window\nwindows: ['Sat 02:00-05:00 Europe/Berlin']\n") },
      [],
    ],
    [
      'a window that does not parse, at its list item',
      {
        'a.yaml': vm(
          'a',
          100001,
          "windows: ['Sat 02:00-05:00 Europe/Berlin', 'Caturday 02:00-05:00 UTC', 'Sun 25:00-26:00 UTC', 'Sun 01:00-02:00 Mars/Olympus']\n",
        ),
      },
      [
        "a.yaml:6:44: windows: window 'Caturday 02:00-05:00 UTC': 'Caturday' is not a day, a range of days (Mon-Fri) or 'daily'; days are Mon Tue Wed Thu Fri Sat Sun",
        "a.yaml:6:72: windows: window 'Sun 25:00-26:00 UTC': times are HH:MM from 00:00 to 23:59 (an end may be 24:00)",
        "a.yaml:6:95: windows: window 'Sun 01:00-02:00 Mars/Olympus': 'Mars/Olympus' is not an IANA time zone (e.g. Europe/Berlin, UTC)",
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
      'clusters.yaml:5:10: restart: in-window needs apply windows: add windows: to the guest or its Cluster document, or use never or allowed (see README "Apply windows")',
    ]);
  });

  it('takes a cluster default of in-window with the cluster windows, and gives guests the windows in force', () => {
    const text = `${CLUSTER}restart: in-window\nwindows: ['Sat 02:00-05:00 Europe/Berlin']\n`;
    const loaded = loadSpecs([
      { path: 'clusters.yaml', text },
      { path: 'a.yaml', text: vm('a', 100001) },
      { path: 'b.yaml', text: vm('b', 100002, "windows: ['daily 03:00-04:00 UTC']\n") },
    ]);
    expect(loaded.errors.map(formatSpecError)).toEqual([]);
    expect(loaded.specs.clusters[0]?.windows).toEqual(['Sat 02:00-05:00 Europe/Berlin']);
    expect(loaded.specs.guests.find((g) => g.name === 'b')?.windows).toEqual(['daily 03:00-04:00 UTC']);
  });
});
