/**
 * The build: `dist/` as the package and the image run it (`npm run build`, after the typecheck).
 * One ESM bundle of the command line and its dependencies, `dist/bin.js`, split at every dynamic
 * import so that a command still loads only its own code (`validate` no Proxmox client, `plan` no
 * rehearsal without `--rehearse`, the CLI none of `serve`), in a few chunks beside it. Loading some
 * 220 modules one by one cost every command about a quarter of a second before any work, and
 * `serve` about a second (README "Running it" has the figures).
 *
 * What the bundle reads by path, relative to its own files, is kept where it looks:
 *   - the spec-loading worker threads are entries of their own, `dist/load-worker.js` and
 *     `dist/parse-worker.js`, beside the chunks whose `new URL('./…-worker.js', import.meta.url)`
 *     starts them;
 *   - the demo's fixtures are copied to `dist/demo/` (compose's simulator reads one from there);
 *   - `../package.json` (the version) and `specs-example/` (the demo's specs) are found from
 *     `dist/`, as from the emitted files before;
 *   - the few parts of undici the Proxmox client requires by path stay in node_modules, and so do
 *     the packages in {@link EXTERNAL}, which locate files from their own `__dirname` (undefined
 *     in an ES module bundle).
 */
import { chmod, cp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Packages left to node_modules, because they locate files from their own `__dirname` (undefined
 * in an ES module bundle) and, bundled, would fail or fall back silently: ioredis reads its
 * package.json by it (the version it gives Redis) and trims error stacks by it; msgpackr finds its
 * native decoder (bullmq packs with it); pino starts a transport's worker from a file beside its
 * own. Each is still one copy: what is bundled (bullmq, Probot) requires them from node_modules too.
 */
export const EXTERNAL = ['ioredis', 'msgpackr', 'pino'];

/**
 * Each chunk can `require` what a bundled CommonJS package asks for (Node's built-ins, optional
 * packages) through a `require` of its own, as ES modules have none.
 */
const REQUIRE_BANNER = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/** Builds the bundle into `outdir` (emptied first); resolves with esbuild's account of it (which sources are in which chunk). */
export async function buildBundle(outdir: string = join(ROOT, 'dist')): Promise<Metafile> {
  await rm(outdir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [
      { in: 'src/bin.ts', out: 'bin' },
      { in: 'src/spec-files/load-worker.ts', out: 'load-worker' },
      { in: 'src/spec-files/parse-worker.ts', out: 'parse-worker' },
    ],
    outdir,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    // Bundled together, two modules' classes of one name are renamed (DelayedError4), and an
    // error's name is its class's: bullmq and the worker metrics tell a parked job by its name.
    keepNames: true,
    external: EXTERNAL,
    metafile: true,
    logLevel: 'warning',
    banner: { js: REQUIRE_BANNER },
  });
  await cp(join(ROOT, 'src/demo'), join(outdir, 'demo'), { recursive: true });
  await chmod(join(outdir, 'bin.js'), 0o755);
  return result.metafile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildBundle(process.argv[2]);
