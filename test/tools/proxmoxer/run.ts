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
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../../../src/pve/sim/index.js';
import { reportRequestsAndExit, runClient, tokenParts } from '../client-run.js';

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
const { user, tokenName, secret } = tokenParts(sim);
const code = await runClient('calls.py', '/usr/bin/python3', [SCRIPT, url.hostname, url.port, user, tokenName, secret]);
await reportRequestsAndExit(sim, code);
