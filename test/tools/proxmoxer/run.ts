/**
 * Runs calls.py (proxmoxer, the client library of Ansible's Proxmox modules) against a fresh
 * simulator over TLS, then prints the API requests it made, one per line, from the simulator's
 * journal.
 *
 *   node --import tsx test/tools/proxmoxer/run.ts [--json]
 *
 * Needs python3-proxmoxer (Debian: `apt-get install python3-proxmoxer`). Not part of `npm test`:
 * test/sim/proxmoxer-replay.test.ts replays the recorded sequence instead.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../../../src/pve/sim/index.js';

const SCRIPT = fileURLToPath(new URL('calls.py', import.meta.url));

const sim = await startSimulator({ port: 0, tls: true, taskMs: 100 });
sim.sim.addGuest({ vmid: 100, type: 'qemu', node: 'pve-01', running: true, config: 'name: web-01\ncores: 2\nmemory: 2048\n' });
sim.sim.addGuest({
  vmid: 200,
  type: 'lxc',
  node: 'pve-01',
  running: true,
  config: 'arch: amd64\nhostname: db-01\nmemory: 512\nostype: debian\nrootfs: local-lvm:vm-200-disk-0,size=8G\n',
});
const url = new URL(sim.url);
const eq = sim.token.lastIndexOf('=');
const [user, tokenName] = sim.token.slice(0, eq).split('!') as [string, string];
const code = await new Promise<number>((resolve) => {
  const child = spawn('/usr/bin/python3', [SCRIPT, url.hostname, url.port, user, tokenName, sim.token.slice(eq + 1)], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  child.on('exit', (status) => resolve(status ?? 1));
  child.on('error', (err) => {
    process.stderr.write(`cannot run calls.py: ${err.message}\n`);
    resolve(127);
  });
});
const requests = sim.sim.statsCollector.requests();
if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(requests, null, 1)}\n`);
else for (const r of requests) process.stdout.write(`${r.status} ${r.method} ${r.path} ${JSON.stringify(r.params)}\n`);
await sim.close();
process.exit(code);
