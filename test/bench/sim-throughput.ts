/**
 * Simulator throughput: starts the simulator with 10,000 guests in a child process (so the load
 * generator does not share its event loop), reports the server's start time and memory, then
 * measures requests per second over loopback with bounded concurrency (undici Pool) for
 *   - GET /nodes/{node}/qemu/{vmid}/pending   (random guests)
 *   - GET /nodes/{node}/qemu/{vmid}/config    (random guests)
 *   - GET /cluster/resources?type=vm          (the whole 10,000-guest listing)
 *   - PUT /nodes/{node}/qemu/{vmid}/config    (random guests, one write each)
 *
 * Usage: node --import tsx test/bench/sim-throughput.ts [--guests 10000] [--seconds 5] [--concurrency 32]
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Pool, request } from 'undici';
import { startSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';

const { values } = parseArgs({
  options: {
    guests: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '32' },
    serve: { type: 'boolean', default: false },
  },
});
const GUEST_COUNT = Number(values.guests);
const NODES = ['pve-01', 'pve-02', 'pve-03'];
const FIRST_VMID = 100000;

/** A lived-in estate: 80 % VMs (a quarter of them running with a pending change), 20 % CTs. */
function fixture(count: number): SimFixture {
  const guests: NonNullable<SimFixture['guests']> = [];
  for (let i = 0; i < count; i++) {
    const vmid = FIRST_VMID + i;
    const node = NODES[i % NODES.length] as string;
    const mac =
      `BC:24:11:${((i >> 16) & 0xff).toString(16).padStart(2, '0')}:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`.toUpperCase();
    if (i % 5 === 4) {
      guests.push({
        vmid,
        type: 'lxc',
        node,
        running: i % 2 === 0,
        config: {
          arch: 'amd64',
          cores: 2,
          hostname: `ct-${i}`,
          memory: 1024,
          net0: `name=eth0,bridge=vmbr0,hwaddr=${mac},ip=dhcp,type=veth`,
          ostype: 'debian',
          rootfs: `local-lvm:vm-${vmid}-disk-0,size=8G`,
          swap: 512,
          tags: 'bench;ct',
          unprivileged: 1,
        },
      });
      continue;
    }
    const running = i % 4 === 0;
    const main = [
      'agent: 1',
      'boot: order=scsi0;net0',
      'cores: 2',
      `description: bench guest ${i}`,
      'memory: 4096',
      `meta: creation-qemu=9.0.2,ctime=${1_700_000_000 + i}`,
      `name: vm-${i}`,
      `net0: virtio=${mac},bridge=vmbr0,firewall=1`,
      'ostype: l26',
      `scsi0: local-lvm:vm-${vmid}-disk-0,discard=on,iothread=1,size=32G,ssd=1`,
      'scsihw: virtio-scsi-single',
      `smbios1: uuid=00000000-0000-4000-8000-${String(vmid).padStart(12, '0')}`,
      'tags: bench;vm',
      `vmgenid: 00000000-0000-4000-9000-${String(vmid).padStart(12, '0')}`,
    ]
      .filter((line) => !line.startsWith('description'))
      .join('\n');
    guests.push({
      vmid,
      type: 'qemu',
      node,
      running,
      config: `#bench guest ${i}\n${main}\n${running ? '\n[PENDING]\ncores: 4\n' : ''}`,
    });
  }
  return { nodes: NODES, guests };
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Child role: serve the simulator and report start-up figures on stdout. */
async function serve(): Promise<void> {
  const started = performance.now();
  const data = fixture(GUEST_COUNT);
  const sim = await startSimulator({ port: 0, taskMs: 5, fixture: data });
  const loadMs = performance.now() - started;
  (globalThis as { gc?: () => void }).gc?.();
  const mem = process.memoryUsage();
  process.stdout.write(`${JSON.stringify({ url: sim.url, token: sim.token, loadMs, rss: mem.rss, heapUsed: mem.heapUsed })}\n`);
  process.on('SIGTERM', () => {
    (globalThis as { gc?: () => void }).gc?.();
    const after = process.memoryUsage();
    process.stderr.write(`${JSON.stringify({ rssAfter: after.rss, heapAfter: after.heapUsed })}\n`);
    void sim.close().then(() => process.exit(0));
  });
}

interface Scenario {
  name: string;
  concurrency: number;
  next: (i: number) => { method: 'GET' | 'PUT'; path: string; body?: string };
}

function randomQemu(i: number): { vmid: number; node: string } {
  // Deterministic spread over all qemu guests (every fifth index is a CT).
  let n = (i * 7919) % GUEST_COUNT;
  if (n % 5 === 4) n = (n + 1) % GUEST_COUNT;
  return { vmid: FIRST_VMID + n, node: NODES[n % NODES.length] as string };
}

async function run(pool: Pool, token: string, scenario: Scenario, seconds: number): Promise<void> {
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let bytes = 0;
  let counter = 0;
  const deadline = performance.now() + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const { method, path, body } = scenario.next(counter++);
      const t0 = performance.now();
      const res = await pool.request({
        method,
        path,
        headers: {
          authorization: `PVEAPIToken=${token}`,
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        ...(body ? { body } : {}),
      });
      const buf = await res.body.arrayBuffer();
      latencies.push(performance.now() - t0);
      bytes += buf.byteLength;
      if (res.statusCode === 200) ok++;
      else failed++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: scenario.concurrency }, worker));
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number): string => (latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0).toFixed(1);
  console.log(
    `${scenario.name.padEnd(34)} ${String(Math.round(ok / elapsed)).padStart(7)} req/s  ` +
      `p50 ${pct(0.5).padStart(7)} ms  p99 ${pct(0.99).padStart(7)} ms  ` +
      `avg body ${(bytes / Math.max(1, ok + failed) / 1024).toFixed(1)} KiB  (${ok} ok, ${failed} failed, concurrency ${scenario.concurrency})`,
  );
}

async function main(): Promise<void> {
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--serve', '--guests', String(GUEST_COUNT)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`simulator exited with ${code}: ${stderr}`)));
  });
  const info = JSON.parse(line) as { url: string; token: string; loadMs: number; rss: number; heapUsed: number };
  console.log(
    `simulator with ${GUEST_COUNT} guests: started in ${Math.round(info.loadMs)} ms, RSS ${mib(info.rss)}, heap used ${mib(info.heapUsed)} (after GC)`,
  );

  const concurrency = Number(values.concurrency);
  const seconds = Number(values.seconds);
  const pool = new Pool(info.url, { connections: Math.min(concurrency, 64), pipelining: 1 });
  const scenarios: Scenario[] = [
    {
      name: 'GET …/qemu/{vmid}/pending',
      concurrency,
      next: (i) => {
        const g = randomQemu(i);
        return { method: 'GET', path: `/api2/json/nodes/${g.node}/qemu/${g.vmid}/pending` };
      },
    },
    {
      name: 'GET …/qemu/{vmid}/config',
      concurrency,
      next: (i) => {
        const g = randomQemu(i);
        return { method: 'GET', path: `/api2/json/nodes/${g.node}/qemu/${g.vmid}/config` };
      },
    },
    {
      name: 'GET …/qemu/{vmid}/config?current=1',
      concurrency,
      next: (i) => {
        const g = randomQemu(i);
        return { method: 'GET', path: `/api2/json/nodes/${g.node}/qemu/${g.vmid}/config?current=1` };
      },
    },
    {
      name: 'GET /cluster/resources?type=vm',
      concurrency: 4,
      next: () => ({ method: 'GET', path: '/api2/json/cluster/resources?type=vm' }),
    },
    {
      name: 'PUT …/qemu/{vmid}/config (write)',
      concurrency,
      next: (i) => {
        const g = randomQemu(i);
        return { method: 'PUT', path: `/api2/json/nodes/${g.node}/qemu/${g.vmid}/config`, body: `onboot=${i % 2}` };
      },
    },
  ];
  for (const scenario of scenarios) {
    // Warm up connections and caches briefly so the figures are steady-state.
    await run(pool, info.token, { ...scenario, name: 'warm-up' }, 0.3).catch(() => undefined);
    await run(pool, info.token, scenario, seconds);
  }
  await pool.close();
  const stats = await request(`${info.url}/_sim/stats`);
  const json = (await stats.body.json()) as { requests: { total: number } };
  console.log(`simulator counted ${json.requests.total} API requests`);
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  const after = stderr.split('\n').find((l) => l.startsWith('{"rssAfter"'));
  if (after) {
    const m = JSON.parse(after) as { rssAfter: number; heapAfter: number };
    console.log(`after the load: RSS ${mib(m.rssAfter)}, heap used ${mib(m.heapAfter)} (after GC; view caches warm)`);
  }
}

if (values.serve) await serve();
else await main();
