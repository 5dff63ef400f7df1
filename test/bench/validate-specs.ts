/**
 * Benchmark: load and validate a spec repository of 10,000 guests in 250 files (4 clusters, half
 * the VMIDs derived, a fifth of them containers), entirely in memory, in-thread (`loadSpecs`) and
 * with parsing spread over worker threads (`loadSpecFiles`, what the CLI uses). Prints each run's
 * wall time and, for reference, the time the YAML library needs just to parse the same text in
 * one thread. Target: < 3 s for the parallel loader on two cores. Run it on a quiet machine: the
 * load average is printed with the figures.
 *
 *   node --import tsx test/bench/validate-specs.ts [guests] [files]
 */
import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { LineCounter, parseAllDocuments } from 'yaml';
import { withEnvSnapshot } from '../../src/spec-files/env-snapshot.js';
import { loadSpecs, type LoadedSpecs, type SpecFile } from '../../src/core/spec/load-specs.js';
import { loadSpecFiles } from '../../src/spec-files/load-spec-files.js';

const GUESTS = Number(process.argv[2] ?? 10_000);
const FILES = Number(process.argv[3] ?? 250);
const CLUSTERS = 4;

function clustersFile(): SpecFile {
  const docs = Array.from({ length: CLUSTERS }, (_, c) =>
    [
      'kind: Cluster',
      `name: c${c}`,
      `vmids: { lower: ${(c + 1) * 100_000}, upper: ${(c + 1) * 100_000 + 99_999} }`,
      `nodes: [c${c}-n1, c${c}-n2, c${c}-n3]`,
      'storages: [local-lvm, ceph-vm]',
      'bridges: [vmbr0, vmbr1]',
    ].join('\n'),
  );
  return { path: 'clusters.yaml', text: docs.join('\n---\n') };
}

function guestDoc(i: number): string {
  const c = i % CLUSTERS;
  const pinned = i % 2 === 0 ? `vmid: ${(c + 1) * 100_000 + i}\n` : '';
  if (i % 5 === 0) {
    return `kind: Container
name: ct-${i}
cluster: c${c}
node: c${c}-n${(i % 3) + 1}
${pinned}power: running
create:
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
config:
  memory: 1024
  swap: 512
  cores: 2
  unprivileged: true
  features: { nesting: true }
  rootfs: local-lvm:8
  net0: name=eth0,bridge=vmbr0,ip=dhcp
  tags: [bench, ct]
`;
  }
  return `kind: VM
name: vm-${i}
cluster: c${c}
node: c${c}-n${(i % 3) + 1}
${pinned}power: running
config:
  memory: 4096
  cores: 2
  cpu: x86-64-v2-AES
  ostype: l26
  scsihw: virtio-scsi-single
  scsi0: local-lvm:32,discard=on,iothread=1,ssd=1
  scsi1: ceph-vm:100,iothread=1
  ide2: local-lvm:cloudinit
  boot: order=scsi0
  net0: { model: virtio, bridge: vmbr0, firewall: true }
  agent: 1,fstrim_cloned_disks=1
  ciuser: debian
  ipconfig0: ip=10.0.${Math.floor(i / 250)}.${i % 250}/16,gw=10.0.0.1
  sshkeys: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb9lZ0m8r8pXv2mQm3bXo6vB1k7aF0sJp5mT2nQe7Yd ops@example.net]
  onboot: true
  tags: [bench, env-${c}]
`;
}

function generate(): SpecFile[] {
  const files: SpecFile[] = [clustersFile()];
  const perFile = Math.ceil(GUESTS / FILES);
  for (let f = 0; f < FILES; f++) {
    const docs: string[] = [];
    for (let i = f * perFile; i < Math.min(GUESTS, (f + 1) * perFile); i++) docs.push(guestDoc(i));
    files.push({ path: `guests/file-${String(f).padStart(4, '0')}.yaml`, text: docs.join('---\n') });
  }
  return files;
}

/** Wall time of `fn` in milliseconds. */
async function time(fn: () => unknown): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

const RUNS = 3;
const files = generate();
const bytes = files.reduce((n, f) => n + f.text.length, 0);
const loadBefore = loadavg()[0] ?? 0;
let guests = 0;
const problems: string[] = [];
const check = (label: string, result: LoadedSpecs): void => {
  guests = result.specs.guests.length;
  if (result.errors.length > 0) problems.push(`${label}: ${result.errors.length} unexpected validation errors`);
};
// The first run of each includes JIT warm-up (and, in parallel, worker start-up), as a CLI
// invocation would; the best run is the steady state. Runs alternate so both see the same load.
const inThread: number[] = [];
const parallel: number[] = [];
for (let run = 0; run < RUNS; run++) {
  inThread.push(await time(() => check('loadSpecs', loadSpecs(files))));
  parallel.push(
    await time(async () =>
      check('loadSpecFiles', await loadSpecFiles(files, { onWorkerFailure: (error) => problems.push(`worker failed: ${error.message}`) })),
    ),
  );
}
// The floor set by the YAML library: parsing alone, same input, same env snapshot as loadSpecs.
const parseOnly = await time(() =>
  withEnvSnapshot(() => {
    for (const file of files) parseAllDocuments(file.text, { lineCounter: new LineCounter(), prettyErrors: false, merge: true });
  }),
);
for (const problem of problems) console.error(problem);
if (problems.length > 0) process.exitCode = 1;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const best = (runs: number[]): number => Math.min(...runs);
const parsers = Math.min(availableParallelism(), 4);
console.log(
  `validate-specs: ${guests} guests in ${files.length} files (${(bytes / 1e6).toFixed(1)} MB of YAML); ${availableParallelism()} cores, load average ${loadBefore.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after`,
);
console.log(`  in-thread (loadSpecs):               ${inThread.map(seconds).join(', ')}; best ${seconds(best(inThread))}`);
console.log(`  parallel (loadSpecFiles, ${parsers} threads): ${parallel.map(seconds).join(', ')}; best ${seconds(best(parallel))}`);
console.log(`  YAML parsing alone, one thread:      ${seconds(parseOnly)}`);
console.log(`  target < 3 s for the parallel loader: ${best(parallel) < 3000 ? 'met' : 'NOT met'}`);
