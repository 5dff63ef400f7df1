/**
 * Runs container-lifecycle.yml (community.general.proxmox) against a fresh simulator over TLS,
 * then prints the API requests the module made, one per line, from the simulator's journal.
 *
 *   node --import tsx test/tools/ansible/run.ts [--json]
 *
 * Needs `ansible-playbook` with community.general and python3-proxmoxer (Debian: `apt-get install
 * ansible python3-proxmoxer`). Not part of `npm test`: test/sim/ansible-replay.test.ts replays the
 * recorded sequence instead.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../../../src/pve/sim/index.js';

const PLAYBOOK = fileURLToPath(new URL('container-lifecycle.yml', import.meta.url));

const sim = await startSimulator({ port: 0, tls: true, taskMs: 200 });
const url = new URL(sim.url);
const eq = sim.token.lastIndexOf('=');
const [user, tokenId] = sim.token.slice(0, eq).split('!') as [string, string];
const extraVars = {
  pve_host: `${url.hostname}:${url.port}`,
  pve_user: user,
  pve_token_id: tokenId,
  pve_token_secret: sim.token.slice(eq + 1),
};
const code = await new Promise<number>((resolve) => {
  const child = spawn('ansible-playbook', [PLAYBOOK, '-e', JSON.stringify(extraVars)], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, ANSIBLE_NOCOLOR: '1', ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3' },
  });
  child.on('exit', (status) => resolve(status ?? 1));
  child.on('error', (err) => {
    process.stderr.write(`cannot run ansible-playbook: ${err.message}\n`);
    resolve(127);
  });
});
const requests = sim.sim.statsCollector.requests();
if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(requests, null, 1)}\n`);
else for (const r of requests) process.stdout.write(`${r.status} ${r.method} ${r.path} ${JSON.stringify(r.params)}\n`);
await sim.close();
process.exit(code);
