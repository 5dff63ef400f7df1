/**
 * The Dockerfile's image as Docker reads it (no Docker engine runs here): its last stage's
 * instructions, and the node flags its ENTRYPOINT runs the App with — which the benchmarks give
 * the processes they measure, so a figure is the image's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The instructions of the Dockerfile's last stage (the image), continuation lines joined. */
export function imageInstructions(): { op: string; args: string }[] {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
  const lines = text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
  const last =
    lines
      .map((l, i) => (/^FROM /.test(l) ? i : -1))
      .filter((i) => i >= 0)
      .pop() ?? 0;
  return lines.slice(last).map((line) => {
    const [op = '', ...rest] = line.trim().split(/\s+/);
    return { op, args: rest.join(' ') };
  });
}

/** The image's ENTRYPOINT, as its exec form's list. */
export function imageEntrypoint(): string[] {
  const entrypoint = imageInstructions()
    .filter((i) => i.op === 'ENTRYPOINT')
    .pop()?.args;
  if (entrypoint === undefined) throw new Error('the Dockerfile has no ENTRYPOINT');
  return JSON.parse(entrypoint) as string[];
}

/** The flags the image gives node before `dist/bin.js` (for NODE_OPTIONS of a process run from the sources). */
export function imageNodeFlags(): string[] {
  const entrypoint = imageEntrypoint();
  const bin = entrypoint.indexOf('dist/bin.js');
  if (entrypoint[0] !== 'node' || bin < 0) throw new Error(`the image's ENTRYPOINT is not node … dist/bin.js: ${entrypoint.join(' ')}`);
  return entrypoint.slice(1, bin);
}
