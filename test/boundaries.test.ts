/**
 * The architecture as a test: every import of every source file, read with TypeScript's own
 * parser, checked against the rules between folders that the README's layout table states.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Project-relative source file → what it imports: project files (relative paths) and packages. */
type ImportGraph = Map<string, { files: string[]; packages: string[] }>;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function readGraph(): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of sourceFiles('src')) {
    const info = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
    const files: string[] = [];
    const packages: string[] = [];
    for (const { fileName } of info.importedFiles) {
      if (fileName.startsWith('.')) files.push(relative(ROOT, resolve(ROOT, dirname(file), fileName)).replace(/\.js$/, '.ts'));
      else
        packages.push(
          fileName.startsWith('node:')
            ? fileName
            : fileName
                .split('/')
                .slice(0, fileName.startsWith('@') ? 2 : 1)
                .join('/'),
        );
    }
    graph.set(file.split('\\').join('/'), { files, packages });
  }
  return graph;
}

/** Everything a file reaches through imports, itself excluded. */
function reachable(graph: ImportGraph, start: string): Set<string> {
  const seen = new Set<string>();
  const stack = [...(graph.get(start)?.files ?? [])];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    stack.push(...(graph.get(next)?.files ?? []));
  }
  return seen;
}

const IO_MODULES = [
  'fs',
  'net',
  'http',
  'https',
  'tls',
  'dgram',
  'child_process',
  'worker_threads',
  'cluster',
  'undici',
  'pino',
  'probot',
  'bullmq',
  'ioredis',
  'tar-stream',
];
const isIo = (pkg: string): boolean => IO_MODULES.includes(pkg.replace(/^node:/, '').split('/')[0] ?? '');
const under = (file: string, dir: string): boolean => file.startsWith(`${dir}/`) || file === `${dir}.ts`;
const WEBHOOK_SIDE = (file: string): boolean => under(file, 'src/webhooks');
/** Folders above the GitHub adapters: the queue and its workers use `src/github`, never the other way round. */
const ABOVE_GITHUB = ['src/queue', 'src/webhooks', 'src/server', 'src/commands', 'src/cli'];
const TALKS_TO_PROXMOX = ['src/pve', 'src/engine', 'src/connections'];
/**
 * The commands that run the simulator: `sim` serves it, `demo` plays on it, `plan --rehearse`
 * (`plan-rehearse.ts`, which `plan.ts` imports only for that flag: test/cli/start-up-modules.test.ts
 * keeps a plain plan from loading it) and `serve`'s plan worker apply a plan on a simulated copy.
 * Any other command (`drift`, `apply`, …) loading it would pay for it in start-up and run none of it.
 */
const RUN_THE_SIMULATOR = [
  'src/commands/sim.ts',
  'src/commands/demo.ts',
  'src/commands/plan.ts',
  'src/commands/plan-rehearse.ts',
  'src/commands/serve.ts',
];
/** The queue's feature folders and the features each builds on; the shared files at the top of `src/queue` import none. */
const QUEUE_FEATURES: Readonly<Record<string, readonly string[]>> = { plan: [], apply: ['plan'], drift: [] };
const queueFeature = (file: string): string | undefined => {
  const [src, queue, feature, rest] = file.split('/');
  return src === 'src' && queue === 'queue' && rest !== undefined && feature !== undefined && feature in QUEUE_FEATURES
    ? feature
    : undefined;
};

/** Every broken rule, as `file: why`. */
function violations(graph: ImportGraph): string[] {
  const found: string[] = [];
  for (const [file, { files, packages }] of graph) {
    // A circle, even of type-only imports, means neither file can be read or moved without the other.
    if (reachable(graph, file).has(file)) found.push(`${file}: is in an import circle`);
    if (under(file, 'src/core')) {
      for (const pkg of packages.filter(isIo)) found.push(`${file}: the core does no I/O, but imports ${pkg}`);
      for (const f of files.filter((f) => !under(f, 'src/core'))) found.push(`${file}: the core imports only the core, not ${f}`);
    }
    if (under(file, 'src/pve')) {
      for (const f of files) {
        for (const dir of ['src/engine', 'src/commands', 'src/cli', 'src/github', 'src/queue', 'src/webhooks', 'src/server']) {
          if (under(f, dir)) found.push(`${file}: the Proxmox adapter must not import ${f}`);
        }
      }
    }
    if (!under(file, 'src/commands') && file !== 'src/cli.ts') {
      for (const f of files.filter((f) => under(f, 'src/commands'))) found.push(`${file}: only the CLI entry imports commands, not ${f}`);
    }
    if (under(file, 'src/commands') && !RUN_THE_SIMULATOR.includes(file)) {
      for (const f of reachable(graph, file))
        if (under(f, 'src/pve/sim')) found.push(`${file}: only the commands that run the simulator load it, but this reaches ${f}`);
    }
    if (under(file, 'src/engine')) {
      for (const f of reachable(graph, file)) if (under(f, 'src/pve')) found.push(`${file}: the engine reaches ${f}; use the ports`);
    }
    if (under(file, 'src/github')) {
      for (const f of files.filter((f) => ABOVE_GITHUB.some((dir) => under(f, dir))))
        found.push(`${file}: the GitHub adapters import nothing above them (an upward import), not ${f}`);
    }
    if (under(file, 'src/queue')) {
      const own = queueFeature(file);
      for (const f of files) {
        const other = queueFeature(f);
        if (other === undefined || other === own || (own !== undefined && QUEUE_FEATURES[own]?.includes(other))) continue;
        found.push(`${file}: the queue's shared pieces and features import only the features they build on, not ${f}`);
      }
    }
    if (WEBHOOK_SIDE(file)) {
      for (const f of reachable(graph, file)) {
        if (TALKS_TO_PROXMOX.some((dir) => under(f, dir))) found.push(`${file}: webhook handlers only enqueue, but reach ${f}`);
      }
      for (const pkg of [...reachable(graph, file)].flatMap((f) => graph.get(f)?.packages ?? [])) {
        if (pkg === 'undici') found.push(`${file}: webhook handlers reach undici (Proxmox's HTTP client)`);
      }
    }
  }
  return [...new Set(found)].sort();
}

describe('import boundaries', () => {
  it('reads a real graph (the check is not vacuous)', () => {
    const graph = readGraph();
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get('src/cli.ts')?.files.some((f) => under(f, 'src/commands'))).toBe(true);
    expect([...graph.keys()].some(WEBHOOK_SIDE)).toBe(true);
    expect(Object.keys(QUEUE_FEATURES).every((feature) => [...graph.keys()].some((f) => queueFeature(f) === feature))).toBe(true);
  });

  it('holds for every source file', () => {
    expect(violations(readGraph())).toEqual([]);
  });

  it.each([
    ['the core importing node:fs', 'src/core/x.ts', { files: [], packages: ['node:fs'] }, 'the core does no I/O'],
    ['the core importing the engine', 'src/core/x.ts', { files: ['src/engine/run-plan.ts'], packages: [] }, 'the core imports only'],
    ['the adapter importing the engine', 'src/pve/x.ts', { files: ['src/engine/run-plan.ts'], packages: [] }, 'adapter must not'],
    ['the queue importing a command', 'src/queue/x.ts', { files: ['src/commands/plan.ts'], packages: [] }, 'only the CLI entry'],
    ['the engine importing the client', 'src/engine/x.ts', { files: ['src/pve/client.ts'], packages: [] }, 'the engine reaches'],
    ['a webhook handler reaching Proxmox', 'src/webhooks/x.ts', { files: ['src/engine/run-plan.ts'], packages: [] }, 'only enqueue'],
    ['a GitHub adapter importing the queue', 'src/github/x.ts', { files: ['src/queue/enqueue.ts'], packages: [] }, 'an upward import'],
    ['a GitHub adapter importing a handler', 'src/github/x.ts', { files: ['src/webhooks/app.ts'], packages: [] }, 'an upward import'],
    [
      "the queue's shared pieces importing a feature",
      'src/queue/x.ts',
      { files: ['src/queue/apply/apply-run.ts'], packages: [] },
      'build on',
    ],
    [
      'the drift feature importing the apply feature',
      'src/queue/drift/x.ts',
      { files: ['src/queue/apply/apply-store.ts'], packages: [] },
      'build on',
    ],
    [
      'a command that does not run the simulator loading it',
      'src/commands/drift.ts',
      { files: ['src/commands/plan.ts'], packages: [] },
      'run the simulator',
    ],
    [
      'the flavour table importing the model',
      'src/core/guest-flavours.ts',
      { files: ['src/core/model.ts'], packages: [] },
      'import circle',
    ],
  ])('fails on a deliberate violation: %s', (_what, file, imports, message) => {
    const graph = readGraph();
    graph.set(file, imports);
    expect(violations(graph).some((v) => v.startsWith(`${file}:`) && v.includes(message))).toBe(true);
  });
});
