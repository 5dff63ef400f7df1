import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { SpecSet } from '../core/model.js';
import { formatSpecError } from '../core/spec/errors.js';
import { loadSpecs, type LoadedSpecs, type SpecFile } from '../core/spec/load-specs.js';
import type { SpecFileInput } from '../core/spec/spec-text.js';
import { validateSpecs } from '../core/spec/validate-specs.js';
import { defaultWorkers, loadSpecFiles } from './load-spec-files.js';
import { readSpecDir } from './read-spec-dir.js';

const EXAMPLE = fileURLToPath(new URL('../../specs-example', import.meta.url));

const CLUSTERS = `kind: Cluster
name: lab
vmids: { lower: 100000, upper: 199999 }
nodes: [pve-01, pve-02]
storages: [local-lvm]
bridges: [vmbr0]
---
kind: Cluster
name: prod
vmids: { lower: 200000, upper: 200300 }
nodes: [pve-11]
`;

/** Guest `i`, valid or broken in one of several ways (every eleventh one is broken). */
function guest(i: number): string {
  const cluster = i % 3 === 0 ? 'prod' : 'lab';
  const node = cluster === 'prod' ? 'pve-11' : `pve-0${(i % 2) + 1}`;
  const vmid = i % 2 === 0 ? `vmid: ${cluster === 'prod' ? 200000 + i : 100000 + i}\n` : '';
  const base = `kind: ${i % 5 === 0 ? 'Container' : 'VM'}
name: g-${i}
cluster: ${cluster}
node: ${node}
${vmid}${i % 5 === 0 ? 'create:\n  ostemplate: local:vztmpl/debian-12.tar.zst\n' : ''}config:
  memory: ${1024 + i}
  net0: &nic { ${i % 5 === 0 ? 'name: eth0, ' : 'model: virtio, '}bridge: vmbr0 }
  tags: [t-${i % 7}]
`;
  if (i % 11 !== 5) return base;
  switch (Math.floor(i / 11) % 12) {
    case 0:
      return `${base}  cores: [1, 2\n`; // YAML syntax
    case 1:
      return `${base}  memory: 1\n`; // duplicate key
    case 2:
      return `- ${base.split('\n').join('\n  ')}`; // not a mapping
    case 3:
      return base.replace(/^kind: \w+/, 'kidn: VM'); // no kind
    case 4:
      return base.replace(/^kind: \w+/, 'kind: Vm'); // unknown kind
    case 5:
      return `${base}powr: running\n`; // unknown key
    case 6:
      return base.replace(`cluster: ${cluster}`, 'cluster: nowhere'); // unknown cluster
    case 7:
      return base.replace(`name: g-${i}`, 'name: g-1'); // duplicate name
    case 8:
      return `${base}  bogus0: 1\n  cores: { n: 1 }\n  net1: { <<: *nic, bridge: vmbr9 }\n`; // config keys and values
    case 9:
      return `${base}ignore: [tags, descripton, memory]\n`; // ignore rules
    case 10:
      return `${base}extra: &r { self: *r }\n`; // a recursive alias
    default:
      return `${base}vmid: 99\n`.replace(vmid, ''); // a VMID Proxmox refuses
  }
}

/** A repository of `guests` guests in files of ten, with a few special files. */
function generatedRepo(guests: number): SpecFile[] {
  const files: SpecFile[] = [{ path: 'clusters.yaml', text: CLUSTERS }];
  for (let from = 0; from < guests; from += 10) {
    const docs = Array.from({ length: Math.min(10, guests - from) }, (_, k) => guest(from + k));
    files.push({ path: `guests/file-${String(from / 10).padStart(3, '0')}.yaml`, text: docs.join('---\n') });
  }
  const ten = (item: string): string => `[${Array(10).fill(item).join(', ')}]`;
  const laughs = [
    `a: &a ${ten('x')}`,
    ...'bcdefg'.split('').map((name, i) => `${name}: &${name} ${ten(`*${'abcdef'[i]}`)}`),
    `h: ${ten('*g')}`,
  ];
  files.push(
    { path: 'empty.yaml', text: '# nothing yet\n---\n' },
    { path: 'crlf.yaml', text: `\uFEFF${guest(1000).replace('name: g-1000', 'name: G_1000').replace(/\n/g, '\r\n')}` },
    { path: 'laughs.yaml', text: `kind: VM\n${laughs.join('\n')}\n` },
  );
  return files;
}

/**
 * The errors each result's positions give for the same deliberate mistakes in every spec, so
 * positions are compared on many paths: names, nodes, clusters, VMIDs, every config key and value,
 * and list items.
 */
function errorsFromPositions(loaded: LoadedSpecs): string[] {
  const broken: SpecSet = {
    clusters: loaded.specs.clusters.map((cluster) =>
      Object.assign(cluster, { ownerTag: 'Bad Tag', nodes: [...cluster.nodes, cluster.nodes[0] ?? 'x'] }),
    ),
    guests: loaded.specs.guests.map((guest) =>
      Object.assign(guest, {
        name: `${guest.name}_`,
        node: 'elsewhere',
        power: 'running',
        state: 'absent',
        ignore: ['tags', 'nonsense', ...guest.ignore],
        config: Object.fromEntries(Object.keys(guest.config).map((key) => [key, '\u0000'])),
      }),
    ),
  };
  return validateSpecs(broken, { positions: loaded.positions }).map(formatSpecError).sort();
}

async function expectSameAsInThread(files: SpecFileInput[]): Promise<void> {
  const failures: Error[] = [];
  const parallel = await loadSpecFiles(files, {
    threshold: 0,
    workers: 2,
    mainThreadParses: false,
    onWorkerFailure: (e) => failures.push(e),
  });
  const inThread = loadSpecs(files);
  // The workers did the parsing: none of them fell back to the main thread.
  expect(failures).toEqual([]);
  expect(parallel.errors.map(formatSpecError)).toEqual(inThread.errors.map(formatSpecError));
  expect(parallel.specs).toEqual(inThread.specs);
  const positionErrors = errorsFromPositions(inThread);
  expect(positionErrors.length).toBeGreaterThan(inThread.specs.guests.length * 4);
  expect(errorsFromPositions(parallel)).toEqual(positionErrors);
}

describe('loadSpecFiles with worker threads gives what loadSpecs gives', () => {
  it('with the main thread parsing too (the default)', async () => {
    const files = generatedRepo(400);
    const failures: Error[] = [];
    const parallel = await loadSpecFiles(files, { threshold: 0, workers: 1, onWorkerFailure: (e) => failures.push(e) });
    const inThread = loadSpecs(files);
    expect(failures).toEqual([]);
    expect(parallel.errors.map(formatSpecError)).toEqual(inThread.errors.map(formatSpecError));
    expect(parallel.specs).toEqual(inThread.specs);
    expect(errorsFromPositions(parallel)).toEqual(errorsFromPositions(inThread));
  });

  it('for the example estate', async () => {
    await expectSameAsInThread(await readSpecDir(EXAMPLE));
  });

  it('for a generated repository of 400 guests with errors of many kinds', async () => {
    const files = generatedRepo(400);
    const errors = loadSpecs(files).errors.map(formatSpecError).join('\n');
    // The repository has the errors it is meant to have.
    for (const text of [
      'YAML: Flow sequence',
      'Map keys must be unique',
      'must be a mapping',
      'has no kind',
      'unknown kind',
      'unknown key "powr"',
      'unknown cluster',
      'duplicate guest name',
      'unknown config key "bogus0"',
      'ignore: unknown config key',
      'vmid: must be at least 100',
      'laughs.yaml:8:20: YAML: too large with its aliases expanded (over 5,000,000 values)',
      'YAML: alias *r refers to a value that contains it (a recursive alias)',
      'crlf.yaml:2:7: name "G_1000"',
    ]) {
      expect(errors).toContain(text);
    }
    await expectSameAsInThread(files);
  });
});

/** Worker scripts that fail in different ways. */
const FAILING_WORKERS: [string, string][] = [
  ['exits on its first batch', `parentPort.on('message', () => process.exit(3));`],
  ['throws on its first batch', `parentPort.on('message', () => { throw new Error('boom'); });`],
  ['cannot parse any batch', `parentPort.on('message', (m) => parentPort.postMessage({ batch: m.batch, failed: 'cannot' }));`],
  ['answers garbage', `parentPort.on('message', (m) => parentPort.postMessage({ batch: m.batch, parsed: 'nonsense' }));`],
];

const dataWorker = (body: string): URL =>
  new URL(
    `data:text/javascript,${encodeURIComponent(`import { parentPort } from 'node:worker_threads';
${body}`)}`,
  );

describe('loadSpecFiles falls back to the main thread', () => {
  it.each(FAILING_WORKERS)('when the worker %s, with the full result and every worker terminated', async (_name, body) => {
    const files = generatedRepo(120);
    const failures: Error[] = [];
    const workers: Worker[] = [];
    const result = await loadSpecFiles(files, {
      threshold: 0,
      workers: 2,
      mainThreadParses: false,
      workerUrl: dataWorker(body),
      onWorkerFailure: (e) => failures.push(e),
      onWorkerStart: (worker) => workers.push(worker),
    });
    const expected = loadSpecs(files);
    expect(result.errors.map(formatSpecError)).toEqual(expected.errors.map(formatSpecError));
    expect(result.specs).toEqual(expected.specs);
    expect(failures.length).toBeGreaterThan(0);
    // Both workers were started and both have stopped by the time loading returned: Node sets a
    // worker's threadId to -1 once its thread is gone (no clock, no broadcast that a terminated
    // worker may never deliver).
    expect(workers).toHaveLength(2);
    expect(workers.map((worker) => worker.threadId)).toEqual([-1, -1]);
  });

  it('when a worker never answers, by parsing what it holds in the main thread', async () => {
    // Waiting for the worker would never end (the test would time out).
    const files = generatedRepo(400);
    const result = await loadSpecFiles(files, { threshold: 0, workers: 1, workerUrl: dataWorker('') });
    expect(result.errors.map(formatSpecError)).toEqual(loadSpecs(files).errors.map(formatSpecError));
    expect(result.specs).toEqual(loadSpecs(files).specs);
  });

  it.each<[string, URL]>([
    ['a worker script that does not exist', new URL('./no-such-worker.js', import.meta.url)],
    ['a worker URL Node cannot load', new URL('https://example.invalid/parse-worker.js')],
  ])('for %s', async (_name, workerUrl) => {
    const files = generatedRepo(60);
    const failures: Error[] = [];
    const result = await loadSpecFiles(files, {
      threshold: 0,
      workers: 2,
      mainThreadParses: false,
      workerUrl,
      onWorkerFailure: (e) => failures.push(e),
    });
    expect(result.errors.map(formatSpecError)).toEqual(loadSpecs(files).errors.map(formatSpecError));
    expect(result.specs).toEqual(loadSpecs(files).specs);
    expect(failures.length).toBeGreaterThan(0);
  });

  it('parses in-thread below the threshold, without starting a worker', async () => {
    const failures: Error[] = [];
    const files = generatedRepo(30);
    const result = await loadSpecFiles(files, {
      workers: 2,
      workerUrl: new URL('./no-such-worker.js', import.meta.url),
      onWorkerFailure: (e) => failures.push(e),
    });
    expect(failures).toEqual([]);
    expect(result.specs).toEqual(loadSpecs(files).specs);
  });
});

describe('loadSpecFiles in the main thread', () => {
  it('gives the event loop turns while it parses a large repository, and loads what loadSpecs loads', async () => {
    // Parsing 3,000 guests takes much more than the longest stretch between two turns on any
    // machine: what is in flight meanwhile (a plan's early listing, its connections) goes on.
    const files: SpecFile[] = [{ path: 'clusters.yaml', text: CLUSTERS }];
    for (let file = 0; file < 300; file++) {
      const docs = Array.from({ length: 10 }, (_, k) => {
        const i = file * 10 + k;
        return `kind: VM\nname: g-${i}\ncluster: lab\nnode: pve-01\nvmid: ${100000 + i}\nconfig:\n  memory: ${1024 + i}\n  cores: 2\n`;
      });
      files.push({ path: `guests/file-${file}.yaml`, text: docs.join('---\n') });
    }
    let turns = 0;
    let loading = true;
    const turn = (): void => {
      turns += 1;
      if (loading) setImmediate(turn);
    };
    setImmediate(turn);
    const loaded = await loadSpecFiles(files, { workers: 0 });
    loading = false;
    expect(turns).toBeGreaterThan(0);
    expect(loaded.specs).toEqual(loadSpecs(files).specs);
  });
});

describe('defaultWorkers', () => {
  it.each([
    [2, 0, 1],
    [2, 0.4, 1],
    [2, 1, 0],
    [2, 7.5, 0],
    [8, 0, 3],
    [8, 2, 1],
    [1, 0, 0],
  ])('on %i cores with a load average of %f starts %i', (cores, load, expected) => {
    expect(defaultWorkers(cores, load)).toBe(expected);
  });
});
