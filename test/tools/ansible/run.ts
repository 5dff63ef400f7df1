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
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../../../src/pve/sim/index.js';
import { reportRequestsAndExit, runClient, tokenParts } from '../client-run.js';

const PLAYBOOK = fileURLToPath(new URL('container-lifecycle.yml', import.meta.url));

const sim = await startSimulator({ port: 0, tls: true, taskMs: 200 });
const url = new URL(sim.url);
const { user, tokenName, secret } = tokenParts(sim);
const extraVars = {
  pve_host: `${url.hostname}:${url.port}`,
  pve_user: user,
  pve_token_id: tokenName,
  pve_token_secret: secret,
};
const code = await runClient('ansible-playbook', 'ansible-playbook', [PLAYBOOK, '-e', JSON.stringify(extraVars)], {
  ...process.env,
  ANSIBLE_NOCOLOR: '1',
  ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3',
});
await reportRequestsAndExit(sim, code);
