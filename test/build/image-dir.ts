/**
 * The image's /app without Docker (no engine runs here): a directory holding what the Dockerfile's
 * last stage copies and nothing else, the build stage's products made as `npm run build` makes
 * them — `dist/` the bundle (built here), `node_modules` the project's (linked), the rest copied
 * from the checkout. A file the bundle needs that the image does not copy is missing here too.
 */
import { cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Metafile } from 'esbuild';
import { buildBundle } from '../../scripts/build.js';
import { imageInstructions } from '../app/image-command.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The image's working directory and what the build said of the bundle in it. */
export interface ImageDir {
  /** Stands for /app: the image's WORKDIR. */
  app: string;
  /** `app/dist/bin.js`: the ENTRYPOINT's script. */
  bin: string;
  metafile: Metafile;
  remove(): Promise<void>;
}

/** One COPY instruction: the build stage it copies from (or the build context), its sources and destination. */
function copies(): { from?: string; sources: string[]; dest: string }[] {
  return imageInstructions()
    .filter((i) => i.op === 'COPY')
    .map((i) => {
      const words = i.args.split(/\s+/);
      const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
      const paths = words.filter((w) => !w.startsWith('--'));
      return { ...(from ? { from } : {}), sources: paths.slice(0, -1), dest: paths.at(-1) ?? '' };
    });
}

/** Assembles the image's /app in a new temporary directory. */
export async function imageDir(): Promise<ImageDir> {
  const root = await mkdtemp(join(tmpdir(), 'pve-gitops-image-'));
  const app = join(root, 'app');
  await mkdir(app);
  let metafile: Metafile | undefined;
  for (const copy of copies()) {
    for (const source of copy.sources) {
      const target = copy.dest.endsWith('/') ? join(app, copy.dest, basename(source)) : join(app, copy.dest);
      if (copy.from === undefined) {
        await cp(join(ROOT, source), target, { recursive: true });
        continue;
      }
      // From the build stage, whose WORKDIR is /app: what `npm ci` (and its prepare, the build) left there.
      const path = source.replace(/^\/app\//, '');
      if (path === 'dist') metafile = await buildBundle(target);
      else if (path === 'node_modules') await symlink(join(ROOT, 'node_modules'), target, 'dir');
      else await cp(join(ROOT, path), target, { recursive: true });
    }
  }
  if (metafile === undefined) throw new Error('the image copies no dist/ from the build stage');
  return { app, bin: join(app, 'dist/bin.js'), metafile, remove: () => rm(root, { recursive: true, force: true }) };
}

/** The sources (relative to the project, such as `src/pve/sim/index.ts`) bundled into each output file of `dist/` (by its name). */
export function sourcesByOutput(metafile: Metafile): Map<string, string[]> {
  return new Map(Object.entries(metafile.outputs).map(([output, { inputs }]) => [basename(output), Object.keys(inputs)]));
}
