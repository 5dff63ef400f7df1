import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A real `redis-server` child process on a free loopback port, for tests. */
export interface RedisServer {
  url: string;
  port: number;
  /** Stops the server (SIGTERM, or SIGKILL: a crash) and starts it again on the same port and data directory. */
  restart(options?: { signal?: 'SIGTERM' | 'SIGKILL' }): Promise<void>;
  stop(): Promise<void>;
}

/** Options of {@link startRedisServer}. */
export interface RedisServerOptions {
  binary?: string;
  /**
   * Persistence as production runs it: the append-only file, fsynced on every write, so even a
   * SIGKILL loses nothing. Default off (faster, and nothing to keep).
   */
  appendOnly?: boolean;
}

/** Asks the kernel for a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Spawns redis-server and resolves once it accepts connections (and has loaded its data). */
async function spawnRedis(binary: string, args: string[]): Promise<ChildProcess> {
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start in 10 s:\n${output}`)), 10_000);
    const check = (): void => {
      if (/Ready to accept connections/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${binary}: ${err.message} (install it: apt-get install -y redis-server)`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code}:\n${output}`));
    });
  });
  return child;
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

/**
 * Spawns `redis-server` on a free port and resolves once it accepts connections. Without
 * persistence unless `appendOnly`. Fails with the server's own output when it cannot start (e.g.
 * not installed).
 */
export async function startRedisServer(options: RedisServerOptions | string = {}): Promise<RedisServer> {
  const { binary = process.env.REDIS_SERVER_BIN ?? 'redis-server', appendOnly = false } =
    typeof options === 'string' ? { binary: options } : options;
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'pve-gitops-redis-'));
  const persistence = appendOnly ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir];
  let child = await spawnRedis(binary, args);
  let stopped = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart(restart = {}) {
      await stopChild(child, restart.signal ?? 'SIGTERM');
      child = await spawnRedis(binary, args);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopChild(child, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
