/**
 * The Dockerfile and compose.yaml, read as Docker would (no Docker engine runs here), and the
 * image's command run without Docker: the same `pve-gitops serve --role …` (from the sources
 * instead of `dist/`), with the environment compose gives it plus what an operator's `.env`
 * holds, against a real Redis — serving, healthy, ready, and stopping cleanly on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { appEnvironment } from './harness.js';
import { imageEntrypoint, imageInstructions, imageNodeFlags } from './image-command.js';
import { startClusters, type TestClusters } from './clusters.js';
import { GitHubDouble } from './github-double.js';
import { startAppProcess, type WorkerProcess } from './worker-process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'src/bin.ts');

// biome-ignore lint/suspicious/noExplicitAny: compose files are free-form YAML
async function compose(): Promise<any> {
  return parse(await readFile(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true });
}

let processes: WorkerProcess[] = [];
const cleanup: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(processes.map((p) => p.signal('SIGKILL')));
  processes = [];
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('the image', () => {
  it('runs `pve-gitops serve` as the unprivileged user node, health-checked on /healthz', async () => {
    const image = imageInstructions();
    const last = (op: string): string | undefined => image.filter((i) => i.op === op).pop()?.args;
    expect(last('USER')).toBe('node');
    expect(imageEntrypoint()).toEqual(['node', ...imageNodeFlags(), 'dist/bin.js']);
    // The young generation a burst of webhooks needs (README "Running it").
    expect(imageNodeFlags()).toEqual(['--max-semi-space-size=64']);
    expect(JSON.parse(last('CMD') ?? '')).toEqual(['serve']);
    expect(last('HEALTHCHECK')).toContain('/healthz');
    // dist/ is what `npm ci` builds (the prepare script) in the build stage.
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.scripts.prepare).toBe('npm run build');
    expect(pkg.bin['pve-gitops']).toBe('dist/bin.js');
  });

  it('compose runs web and workers on one Redis whose append-only file is on, and the simulator only when asked', async () => {
    const file = await compose();
    const { web, worker, redis, sim } = file.services;
    expect(web.command).toEqual(['serve', '--role', 'web']);
    expect(worker.command).toEqual(['serve', '--role', 'worker']);
    for (const service of [web, worker]) {
      expect(service.environment.REDIS_URL).toBe('redis://redis:6379');
      expect(service.env_file).toEqual([{ path: '.env', required: true }]);
      expect(service.depends_on.redis.condition).toBe('service_healthy');
    }
    expect(redis.command.join(' ')).toContain('--appendonly yes');
    expect(redis.command.join(' ')).toContain('--maxmemory-policy noeviction');
    expect(redis.volumes).toEqual(['redis-data:/data']);
    expect(sim.profiles).toEqual(['try']);
    expect(sim.command.slice(0, 4)).toEqual(['sim', '--host', '0.0.0.0', '--port']);
    expect(sim.command).toContain('--tls');
  });

  it('its commands, run without Docker in the environment compose gives them, serve, are ready, and stop cleanly', async () => {
    const file = await compose();
    const github = await GitHubDouble.start();
    cleanup.push(() => github.close());
    const clusters: TestClusters = await startClusters({ lab: {} });
    cleanup.push(() => clusters.close());
    const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-image-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const keyFile = join(dir, 'github-app.pem');
    await writeFile(keyFile, github.app.privateKeyPem);
    // What an operator's .env holds (README), then what compose sets, with this machine's
    // addresses for Redis, the key and the port.
    const { env: dotEnv } = appEnvironment(github, inject('redisUrl'), clusters.env);
    for (const name of ['web', 'worker'] as const) {
      const service = file.services[name];
      const env: Record<string, string> = {
        ...Object.fromEntries(Object.entries(dotEnv).filter(([key]) => !['PRIVATE_KEY', 'HOST'].includes(key))),
        ...service.environment,
        REDIS_URL: inject('redisUrl'),
        PRIVATE_KEY_PATH: keyFile,
        PORT: '0',
        // The flags the image's ENTRYPOINT gives node: NODE_OPTIONS takes them.
        NODE_OPTIONS: imageNodeFlags().join(' '),
      };
      const started = await startAppProcess(service.command, env);
      processes.push(started);
      expect((await fetch(`${started.url}/healthz`)).status).toBe(200);
      expect(await (await fetch(`${started.url}/readyz`)).text()).toBe('ready\n');
      await started.signal('SIGTERM');
      expect(await started.exited).toEqual({ code: 0, signal: null });
    }
  });

  it("the simulator's command serves a cluster over TLS with the token compose gives the App", async () => {
    const { sim } = (await compose()).services;
    // The image has the demo fixtures under dist/; the sources under src/. Port 0: any free one.
    const args = (sim.command as string[]).map((arg, i, all) =>
      all[i - 1] === '--port' ? '0' : all[i - 1] === '--host' ? '127.0.0.1' : arg.replace(/^dist\//, 'src/'),
    );
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] });
    cleanup.push(async () => {
      child.kill('SIGTERM');
    });
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
    });
    const info = JSON.parse(line) as { url: string; token: string; fingerprint?: string; guests: number };
    expect(info.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(info.token).toBe('root@pam!pve-gitops=try-it-out');
    expect(info.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(info.guests).toBeGreaterThan(0);
  });
});
