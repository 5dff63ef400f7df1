/**
 * What `pve-gitops plan` loads: the modules of its own path, not those of a flag it was not given.
 * The rehearsal (`--rehearse`) brings the engine's apply and the whole simulator, about 100
 * modules that every `plan` loaded at start-up and never ran. The command runs as a process with
 * an ESM loader hook that records every module loaded, against a simulated cluster: from the
 * sources, and built (`dist/bin.js`, the bundle), whose chunks are mapped back to the sources in
 * them by the build's metafile.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageDir, type ImageDir, sourcesByOutput } from '../build/image-dir.js';
import { startOneNodeLab, type CliClusters } from './clusters.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = pathToFileURL(join(ROOT, 'src/')).href;

/** Modules only the rehearsal needs. */
const REHEARSAL_ONLY = ['pve/sim/', 'pve/rehearse/sandbox', 'engine/rehearse/', 'core/rehearse/', 'engine/execute-plan'];

/** Modules only `serve` needs. */
const SERVE_ONLY = ['server/', 'webhooks/', 'commands/serve'];

let dir: string;
let clusters: CliClusters<'lab'>;
let image: ImageDir;

beforeAll(async () => {
  image = await imageDir();
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-start-up-'));
  clusters = await startOneNodeLab({ nodes: ['pve-01'], storages: ['local-lvm'] });
  // The hook runs on the loader's thread: it appends each URL loaded to the file it is told.
  await writeFile(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.LOADED_MODULES, url + '\\n');
  return next(url, context);
}
`,
  );
  await writeFile(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
  );
  const specs = join(dir, 'specs');
  await mkdir(specs);
  await writeFile(join(specs, 'clusters.yaml'), 'kind: Cluster\nname: lab\nvmids: { lower: 1000, upper: 2000 }\nnodes: [pve-01]\n');
  await writeFile(
    join(specs, 'app.yaml'),
    'kind: VM\nname: app-01\ncluster: lab\nnode: pve-01\nvmid: 1001\nconfig:\n  memory: 2048\n  scsi0: local-lvm:8\n',
  );
}, 120_000);

afterAll(async () => {
  await image?.remove();
  await clusters.close();
  await rm(dir, { recursive: true, force: true });
});

/**
 * Runs `pve-gitops plan <args>` as a process, from the sources or `built` (the bundle in the
 * image's directory); resolves with the exit code and the source modules it loaded (relative to src/).
 */
async function loadedBy(name: string, args: string[], built = false): Promise<{ code: number; modules: string[] }> {
  const log = join(dir, `${name}.loaded`);
  await writeFile(log, '');
  const child = spawn(
    process.execPath,
    [
      ...(built ? [] : ['--import', 'tsx']),
      '--import',
      pathToFileURL(join(dir, 'register.mjs')).href,
      built ? image.bin : 'src/bin.ts',
      'plan',
      '--specs',
      join(dir, 'specs'),
      ...args,
    ],
    { cwd: built ? image.app : ROOT, env: { ...process.env, ...clusters.env, LOADED_MODULES: log, NO_COLOR: '1' }, stdio: 'ignore' },
  );
  const code = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (status) => resolve(status ?? 1));
  });
  const urls = (await readFile(log, 'utf8')).split('\n');
  if (!built) return { code, modules: urls.filter((url) => url.startsWith(SRC)).map((url) => url.slice(SRC.length)) };
  const DIST = pathToFileURL(join(image.app, 'dist/')).href;
  const chunks = sourcesByOutput(image.metafile);
  const modules = urls
    .filter((url) => url.startsWith(DIST))
    .flatMap((url) => chunks.get(url.slice(DIST.length)) ?? [])
    .filter((source) => source.startsWith('src/'))
    .map((source) => source.slice('src/'.length));
  return { code, modules };
}

describe.each([
  ['from the sources', false],
  ['built', true],
])('the modules plan loads, %s', (_, built) => {
  it('leaves the rehearsal and the simulator out of a plan without --rehearse', async () => {
    const { code, modules } = await loadedBy('plan', [], built);
    expect(code).toBe(2);
    // The hook saw the plan's own path (the check is not vacuous) ...
    expect(modules).toEqual(expect.arrayContaining(['commands/plan.ts', 'engine/run-plan.ts', 'pve/client.ts']));
    // ... and none of the rehearsal's.
    expect(modules.filter((m) => REHEARSAL_ONLY.some((prefix) => m.startsWith(prefix)))).toEqual([]);
    // Nor anything of the App (`serve`: Probot, BullMQ, its HTTP server).
    expect(modules.filter((m) => SERVE_ONLY.some((prefix) => m.startsWith(prefix)))).toEqual([]);
  });

  it('loads them when --rehearse asks for the rehearsal', async () => {
    const { code, modules } = await loadedBy('rehearse', ['--rehearse'], built);
    expect(code).toBe(2);
    for (const prefix of REHEARSAL_ONLY) expect(modules.some((m) => m.startsWith(prefix))).toBe(true);
  });
});
