import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { WEB_CONFIG } from './helpers.js';

const SCRIPT = fileURLToPath(new URL('./run-sim-cli.ts', import.meta.url));

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
}

/** Spawns the CLI; `onLine` gets the first stdout line and decides when to stop it. */
function runCli(args: string[], onLine?: (line: string) => Promise<void>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let handled = false;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const nl = stdout.indexOf('\n');
      if (onLine && !handled && nl >= 0) {
        handled = true;
        onLine(stdout.slice(0, nl))
          .catch((err: unknown) => reject(err as Error))
          .finally(() => child.kill('SIGTERM'));
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ stdout, stderr, code }));
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pve-sim-cli-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('pve-gitops sim', () => {
  it('prints one JSON line once ready, serves the API, and stops on SIGTERM', async () => {
    const fixture = join(dir, 'fixture.json');
    await writeFile(fixture, JSON.stringify({ guests: [{ vmid: 100, type: 'qemu', node: 'pve-01', running: true, config: WEB_CONFIG }] }));
    let status = 0;
    const run = await runCli(
      ['--port', '0', '--nodes', 'pve-01,pve-02', '--token', 'root@pam!ci=abc123', '--task-ms', '10', '--fixture', fixture],
      async (line) => {
        const info = JSON.parse(line) as Record<string, unknown>;
        expect(info).toMatchObject({ token: 'root@pam!ci=abc123', nodes: ['pve-01', 'pve-02'], guests: 1 });
        expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(info.auditToken).toMatch(/^auditor@pve!audit=/);
        const res = await request(`${info.url as string}/api2/json/nodes/pve-01/qemu/100/config`, {
          headers: { authorization: `PVEAPIToken=${info.token as string}` },
        });
        status = res.statusCode;
        await res.body.text();
      },
    );
    expect(status).toBe(200);
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('shutting down');
  });

  it('rejects bad flags with the usage on stderr and exit status 1', async () => {
    const run = await runCli(['--port', 'eighty']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('--port must be a non-negative integer');
    expect(run.stderr).toContain('Usage: pve-gitops sim');
    const unknown = await runCli(['--bogus']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Usage: pve-gitops sim');
  });

  it('fails clearly on an invalid fixture', async () => {
    const fixture = join(dir, 'bad.json');
    await writeFile(fixture, JSON.stringify({ guests: [{ vmid: 5, type: 'vm', node: 'pve-01', config: '' }] }));
    const run = await runCli(['--port', '0', '--fixture', fixture]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('guests.0.vmid');
    expect(run.stderr).toContain('guests.0.type');
  });

  it('--help prints the usage', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: pve-gitops sim [--host 127.0.0.1] [--port 8006]');
  });
});
