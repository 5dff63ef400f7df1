/**
 * The build (`scripts/build.ts`): one bundle of the command line, run as the image runs it, from a
 * directory holding only what the Dockerfile copies (`image-dir.ts`). Everything the bundle finds by
 * a path relative to its own files — the worker threads' scripts, the version in package.json, the
 * demo's fixtures and specs, node_modules for what stays outside it — is found there: the
 * commands run, `serve` serves and stops, the demo tells its whole story.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import type { SpecFile } from '../../src/core/spec/load-specs.js';
import { loadSpecFiles } from '../../src/spec-files/load-spec-files.js';
import { readSpecDir } from '../../src/spec-files/read-spec-dir.js';
import { SpecLoadThread } from '../../src/spec-files/spec-load-thread.js';
import { EXTERNAL } from '../../scripts/build.js';
import { appEnvironment } from '../app/harness.js';
import { startClusters } from '../app/clusters.js';
import { GitHubDouble } from '../app/github-double.js';
import { imageNodeFlags } from '../app/image-command.js';
import { openPullRequestAddingOneVm } from '../app/plan-flow.js';
import { startAppProcess, type WorkerProcess } from '../app/worker-process.js';
import { imageDir, type ImageDir, ROOT } from './image-dir.js';

let image: ImageDir;

beforeAll(async () => {
  image = await imageDir();
}, 120_000);

afterAll(async () => {
  await image?.remove();
});

/** Runs `node dist/bin.js <args>` in the image's /app; resolves with its exit code and output. */
async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [image.bin, ...args], { cwd: image.app, env: { ...process.env, ...env, NO_COLOR: '1' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status) => resolve(status ?? 1));
  });
  return { code, stdout, stderr };
}

/** The JavaScript files of the bundle with their text. */
async function bundleFiles(): Promise<{ name: string; text: string }[]> {
  const names = (await readdir(join(image.app, 'dist'))).filter((name) => name.endsWith('.js'));
  return Promise.all(names.map(async (name) => ({ name, text: await readFile(join(image.app, 'dist', name), 'utf8') })));
}

describe('the bundle', () => {
  it('is dist/bin.js in a few chunks, with the version from package.json and a command loaded on demand', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(await run(['--version'])).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
    const help = await run(['drift', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: pve-gitops drift/);
    // Every source is in it: none is loaded from src/ at run time.
    const sources = Object.keys(image.metafile.inputs).filter((input) => input.startsWith('src/'));
    expect(sources).toEqual(expect.arrayContaining(['src/cli.ts', 'src/commands/drift.ts', 'src/core/proxmox-api-schema.json']));
  });

  it("is built by the image's build stage from what it copies", async () => {
    // The build stage's COPY sources (the build context), up to the next FROM.
    const dockerfile = (await readFile(join(ROOT, 'Dockerfile'), 'utf8')).replace(/\\\n\s*/g, ' ').split('\n');
    const from = dockerfile.findIndex((line) => /^FROM .* AS build$/.test(line));
    const to = dockerfile.findIndex((line, i) => i > from && line.startsWith('FROM '));
    const copied = dockerfile
      .slice(from, to)
      .filter((line) => line.startsWith('COPY ') && !line.includes('--from='))
      .flatMap((line) => line.split(/\s+/).slice(1, -1));
    // What `npm run build` reads: the paths its command names, the tsconfig src/ extends, the bundle's own files.
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: { build: string } };
    const named = pkg.scripts.build.split(/\s+/).filter((word) => /^[\w.-]+\//.test(word) || word === 'src');
    const bundled = Object.keys(image.metafile.inputs).filter((input) => !input.includes('node_modules/'));
    const read = new Set(
      [...named, ...bundled, 'tsconfig.json', 'package.json', 'package-lock.json'].map((path) => path.split('/')[0] ?? path),
    );
    expect(named).toEqual(['src', 'scripts/build.ts']);
    expect([...read].filter((path) => !copied.includes(path))).toEqual([]);
  });

  it('validates the example specs with the Proxmox schema it carries', async () => {
    const result = await run(['validate', '--specs', 'specs-example']);
    expect(result).toMatchObject({ code: 0, stderr: expect.stringMatching(/^specs-example: valid \(\d+ clusters, \d+ guests\)\n$/) });
  });

  it('starts each worker thread from a script beside the chunk that names it', async () => {
    const files = await bundleFiles();
    // Every `new URL('./…', import.meta.url)` of the bundle, with the .js alternative of a .ts one.
    const named = files.flatMap(({ name, text }) =>
      [...text.matchAll(/new URL\(([^;]*?), import\.meta\.url\)/g)].flatMap((m) =>
        [...(m[1] ?? '').matchAll(/"\.\/([^"]+\.js)"/g)].map((s) => ({ chunk: name, script: s[1] ?? '' })),
      ),
    );
    expect(named.map((n) => n.script).sort()).toEqual(['load-worker.js', 'parse-worker.js']);
    for (const { script } of named) expect(existsSync(join(image.app, 'dist', script))).toBe(true);
  });

  it('answers a load and a parse on its worker threads as the sources do, not falling back to the main thread', async () => {
    const specs: SpecFile[] = (await readSpecDir(join(image.app, 'specs-example'))).map((file) =>
      'text' in file ? file : { path: file.path, text: new TextDecoder().decode(file.bytes) },
    );
    const failures: Error[] = [];
    const thread = new SpecLoadThread({
      workerUrl: new URL(`file://${join(image.app, 'dist/load-worker.js')}`),
      onWorkerFailure: (error) => failures.push(error),
    });
    try {
      const threaded = await thread.load(specs);
      const parsed = await loadSpecFiles(specs, {
        threshold: 0,
        workers: 1,
        mainThreadParses: false,
        workerUrl: new URL(`file://${join(image.app, 'dist/parse-worker.js')}`),
        onWorkerFailure: (error) => failures.push(error),
      });
      const here = await loadSpecFiles(specs, { workers: 0 });
      expect(failures).toEqual([]);
      expect(threaded.specs).toEqual(here.specs);
      expect(parsed.specs).toEqual(here.specs);
      expect(here.errors).toEqual([]);
    } finally {
      await thread.close();
    }
  });

  it('refers to no __dirname of a bundled package but in code the App never runs', async () => {
    // esbuild heads each bundled module with a comment naming its file; an ES module has no
    // __dirname, so a package that finds its files by it fails there (those packages are EXTERNAL).
    const users = new Set<string>();
    for (const { text } of await bundleFiles()) {
      let module = '';
      for (const line of text.split('\n')) {
        const head = /^\/\/ (\S+)$/.exec(line);
        if (head) module = head[1]?.replace(/^.*node_modules\//, '') ?? '';
        else if (/\b__(dirname|filename)\b/.test(line)) users.add(module);
      }
    }
    // bullmq's Worker, only for a sandboxed processor (one given as a file): the App's are functions.
    expect([...users]).toEqual(['bullmq/dist/cjs/classes/worker.js']);
    const bundled = Object.keys(image.metafile.inputs).map((input) => input.replace(/^.*node_modules\//, ''));
    for (const name of EXTERNAL) expect(bundled.filter((input) => input.startsWith(`${name}/`))).toEqual([]);
  });

  it('keeps the names of classes it renames, which errors carry and the App reads', async () => {
    // Bundled together, two modules' classes of one name are renamed (`var DelayedError4 = class`),
    // and an error's name is its class's: the worker metrics tell bullmq's DelayedError (a job
    // parked, not failed) by its name.
    const unnamed: string[] = [];
    let delayedError = false;
    for (const { name, text } of await bundleFiles()) {
      for (const m of text.matchAll(
        /\b(?:var|let|const) ([A-Za-z_$][\w$]*?\d+) = class\b[^{]*\{\s*static \{\s*__name\(this, "([^"]+)"\)|\b(?:var|let|const) ([A-Za-z_$][\w$]*?\d+) = class\b/g,
      )) {
        if (m[3] !== undefined) unnamed.push(`${name}: ${m[3]}`);
        if (m[2] === 'DelayedError') delayedError = true;
      }
    }
    expect(unnamed).toEqual([]);
    expect(delayedError).toBe(true);
  });

  it('serves the simulator compose runs, from the fixture under dist/ it names', async () => {
    const compose = parse(await readFile(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true });
    const args = (compose.services.sim.command as string[]).map((arg, i, all) =>
      all[i - 1] === '--port' ? '0' : all[i - 1] === '--host' ? '127.0.0.1' : arg,
    );
    expect(args).toContain('dist/demo/lab-fixture.json');
    const child = spawn(process.execPath, [image.bin, ...args], { cwd: image.app, stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
      });
      expect((JSON.parse(line) as { guests: number }).guests).toBeGreaterThan(0);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('serves as the web and the worker role: a pull request is planned and commented, then both stop cleanly on SIGTERM', async () => {
    const github = await GitHubDouble.start();
    const clusters = await startClusters({ lab: {} });
    const started: WorkerProcess[] = [];
    try {
      const { env, webhookSecret } = appEnvironment(github, inject('redisUrl'), {
        ...clusters.env,
        LOG_LEVEL: 'info',
        NODE_OPTIONS: imageNodeFlags().join(' '),
      });
      const [web, worker] = [
        await startAppProcess(['serve', '--role', 'web'], env, { bin: image.bin, cwd: image.app }),
        await startAppProcess(['serve', '--role', 'worker'], env, { bin: image.bin, cwd: image.app }),
      ];
      started.push(web, worker);
      for (const app of started) {
        expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
        expect(await (await fetch(`${app.url}/readyz`)).text()).toBe('ready\n');
      }
      // Probot's webhook check, BullMQ's scripts in Redis, the worker's spec-loading thread, the
      // Proxmox client, the comment: the App's whole path, bundled.
      const repo = { id: 4_343_434, owner: 'acme', name: 'estate' };
      const { delivery, check, comment } = await openPullRequestAddingOneVm(github, repo, web.url, webhookSecret);
      expect(delivery.status).toBe(200);
      await worker.until((line) => line.msg === 'plan posted');
      expect((await check.result()).conclusion).toBe('success');
      expect(await comment.body()).toContain('**1 to create**');
      github.verify();
      for (const app of started) {
        await app.signal('SIGTERM');
        expect(await app.exited).toEqual({ code: 0, signal: null });
        // No warning but the test clusters' plain http: one would be, for example, the spec load
        // falling back to the main thread.
        expect(app.lines.filter((line) => line.level >= 40 && line.msg !== 'insecure cluster connection')).toEqual([]);
      }
    } finally {
      for (const app of started) await app.signal('SIGKILL');
      await clusters.close();
      await github.close();
    }
  });

  it('tells the whole demo: plan, apply, no changes, drift, the plan that reverts it', async () => {
    const result = await run(['demo']);
    expect(result.code).toBe(0);
    for (const step of ['1. Validate the specs', '3. Apply the saved plan', '6. Drift report']) expect(result.stdout).toContain(step);
    expect(result.stdout).toContain('No changes.');
    expect(result.stdout).toContain('Done.');
  }, 60_000);
});
