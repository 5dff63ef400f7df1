/**
 * Benchmark: `validate` of a hostile spec tree — megabytes of unknown config keys, which once cost
 * about 6 s per MB in "did you mean" searches (3 MB: more than 12 s). Writes each tree to a
 * temporary directory and runs the whole command as a user would (`pve-gitops validate`, from
 * source through tsx unless `--bin` names a build), then loads the same files in this process to
 * print its time, its CPU (what a busy machine does not distort) and the work of the searches.
 * Target: 3 MB under 2 s.
 *
 *   node --import tsx test/bench/hostile-validate.ts [--bin dist/bin.js]
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadSpecs, type SpecFile } from '../../src/core/spec/load-specs.js';
import { suggestionWork } from '../../src/core/spec/nearest-name.js';
import { pick, seededRandom } from '../helpers/seeded-random.js';
import { SOURCE_BIN } from './bench-kit.js';
import { writeEstate } from './estate.js';

const { values } = parseArgs({ options: { bin: { type: 'string' } } });
const BIN = values.bin ?? SOURCE_BIN;

const CLUSTER = 'kind: Cluster\nname: lab\nvmids: { lower: 100000, upper: 199999 }\nnodes: [pve-01]\n';

/** `bytes` of VM documents in `files` files, each with `keysPerDocument` unknown config keys. */
function tree(bytes: number, files: number, keysPerDocument: number): SpecFile[] {
  const random = seededRandom(3);
  const letters = 'acdefhimnoprstu';
  const out: SpecFile[] = [{ path: 'cluster.yaml', text: CLUSTER }];
  let guest = 0;
  for (let f = 0; f < files; f++) {
    const docs: string[] = [];
    let size = 0;
    while (size < bytes / files) {
      const keys = Array.from({ length: keysPerDocument }, (_, k) => {
        const length = 4 + Math.floor(random() * 12);
        return `  ${Array.from({ length }, () => pick(random, [...letters])).join('')}${k}: 1`;
      });
      const doc = `kind: VM\nname: vm-${guest++}\ncluster: lab\nnode: pve-01\nconfig:\n${keys.join('\n')}\n`;
      docs.push(doc);
      size += doc.length + 4;
    }
    out.push({ path: `hostile-${f}.yaml`, text: docs.join('---\n') });
  }
  return out;
}

/** Runs `validate` on `dir`; resolves with its exit code and wall time. */
function validate(dir: string): Promise<{ code: number | null; ms: number }> {
  const args = [...(BIN.endsWith('.ts') ? ['--import', 'tsx'] : []), BIN, 'validate', '--specs', dir];
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'ignore'] });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, ms: performance.now() - started })));
}

async function main(): Promise<void> {
  process.stdout.write(
    `validate of unknown config keys (${BIN.endsWith('.ts') ? 'from source, through tsx' : BIN}), Node ${process.version}, load ${loadavg()[0]?.toFixed(1)}\n\n`,
  );
  process.stdout.write(
    `${'tree'.padEnd(42)} ${'command'.padStart(7)}   ${'in-process'.padStart(20)}   search work   errors shown   target\n`,
  );
  const shapes = [
    { name: '1 MB, one document of unknown keys', bytes: 1e6, files: 1, keys: 1_000_000 },
    { name: '3 MB, one document of unknown keys', bytes: 3e6, files: 1, keys: 1_000_000 },
    { name: '3 MB, 12 files of 20 unknown keys a guest', bytes: 3e6, files: 12, keys: 20 },
  ];
  for (const shape of shapes) {
    const files = tree(shape.bytes, shape.files, Math.min(shape.keys, Math.ceil(shape.bytes / 20)));
    const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-hostile-'));
    try {
      await writeEstate(dir, files);
      const run = await validate(dir);
      const work = suggestionWork();
      const started = performance.now();
      const cpu = process.cpuUsage();
      const loaded = loadSpecs(files);
      const ms = performance.now() - started;
      const used = process.cpuUsage(cpu);
      const cpuS = (used.user + used.system) / 1e6;
      const target = shape.bytes === 3e6 ? '< 2 s' : '';
      process.stdout.write(
        `${shape.name.padEnd(42)} ${`${(run.ms / 1000).toFixed(2)} s`.padStart(7)}   ${`${(ms / 1000).toFixed(2)} s (${cpuS.toFixed(2)} s CPU)`.padStart(20)}   ${String(suggestionWork() - work).padStart(11)}   ${String(loaded.errors.length).padStart(12)}   ${target}${run.code === 1 ? '' : ` (exit ${run.code})`}\n`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

await main();
