import { mkdtemp, readFile, rm, writeFile, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli.js';
import { parsePlanJson } from '../../src/core/render/render-json.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import { startTinyServer } from '../client/helpers/tiny-server.js';
import { SPECS_EXAMPLE } from '../engine/helpers.js';
import { type CliClusters, failingReads, startExampleClusters } from './clusters.js';
import { cli } from './run-cli.js';

let dir: string;
let lab: RunningSimulator;
let prod: RunningSimulator;
let env: NodeJS.ProcessEnv;
let clusters: CliClusters<'lab' | 'prod'>;

// Every test gets its own simulated clusters and directory: none depends on what another left.
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-cli-'));
  clusters = await startExampleClusters();
  ({ lab, prod, env } = clusters);
});

afterEach(async () => {
  await clusters.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the command table', () => {
  it('lists each command with the name and summary of the module it loads', async () => {
    for (const entry of COMMANDS) {
      const command = await entry.load();
      expect({ name: command.name, summary: command.summary }).toEqual({ name: entry.name, summary: entry.summary });
    }
  });
});

describe('pve-gitops validate', () => {
  it('exits 0 for specs-example', async () => {
    const run = await cli(['validate', '--specs', SPECS_EXAMPLE]);
    expect(run).toMatchObject({ code: 0, stdout: '' });
    expect(run.stderr).toMatch(/valid \(2 clusters, 15 guests\)/);
  });

  it('exits 1 with one file:line:col: message per error', async () => {
    const specs = join(dir, 'broken');
    await cp(SPECS_EXAMPLE, specs, { recursive: true });
    const web = join(specs, 'lab', 'web.yaml');
    const text = await readFile(web, 'utf8');
    await writeFile(web, text.replace('  cores: 2\n', '  cores: 2\n  corez: 4\n').replace('vmid: 100102', 'vmid: 100101'));
    const run = await cli(['validate', '--specs', specs]);
    expect(run.code).toBe(1);
    const lines = run.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line).toMatch(/^lab\/web\.yaml:\d+:\d+: /);
    expect(run.stdout).toMatch(/corez/);
    expect(run.stdout).toMatch(/100101/);
  });

  it('says what is wrong with its flags', async () => {
    const run = await cli(['validate', '--spec', 'x']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/Unknown option '--spec'/);
    expect(run.stderr).toMatch(/Usage: pve-gitops validate/);
  });

  it('takes the spec limits from the environment, and refuses a bad one', async () => {
    const refused = await cli(['validate', '--specs', SPECS_EXAMPLE], { PVE_GITOPS_MAX_FILES: '2' });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/: more than 2 spec files; the limit is 2 \(PVE_GITOPS_MAX_FILES\)\n$/);
    const big = await cli(['validate', '--specs', SPECS_EXAMPLE], { PVE_GITOPS_MAX_FILE_BYTES: '100' });
    expect(big.stdout).toMatch(
      /^clusters\.yaml: [\d.,]+ (bytes|KiB) is more than a spec file may hold; the limit is 100 bytes \(PVE_GITOPS_MAX_FILE_BYTES\)$/m,
    );
    const bad = await cli(['validate', '--specs', SPECS_EXAMPLE], { PVE_GITOPS_MAX_YAML_DEPTH: 'deep' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/PVE_GITOPS_MAX_YAML_DEPTH must be a positive integer/);
  });
});

describe('pve-gitops plan, apply, drift against simulated clusters', () => {
  it('tells how to configure a cluster that has no connection', async () => {
    const run = await cli(['plan', '--specs', SPECS_EXAMPLE], {
      PVE_CLUSTER_LAB_URL: lab.url,
      PVE_CLUSTER_LAB_TOKEN: lab.token,
      PVE_CLUSTER_LAB_ALLOW_HTTP: '1',
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no connection configured for cluster prod: set PVE_CLUSTER_PROD_URL and PVE_CLUSTER_PROD_TOKEN/);
  });

  it('plans (exit 2), saves the plan, refuses to apply unconfirmed, applies the saved plan, then plans nothing (exit 0)', async () => {
    const saved = join(dir, 'plan.json');
    const plan = await cli(['plan', '--specs', SPECS_EXAMPLE, '--save', saved], env);
    expect(plan.code).toBe(2);
    expect(plan.stdout).toMatch(/Plan: 13 to create, 0 to update, 0 to destroy\./);
    expect(parsePlanJson(await readFile(saved, 'utf8')).summary.create).toBe(13);

    const markdown = await cli(['plan', '--specs', SPECS_EXAMPLE, '--format', 'markdown'], env);
    expect(markdown.code).toBe(2);
    expect(markdown.stdout).toMatch(/^### pve-gitops plan/);
    expect(markdown.stdout).toMatch(/\| Cluster \|/);

    const unconfirmed = await cli(['apply', '--specs', SPECS_EXAMPLE], env);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toMatch(/refusing to apply without confirmation: pass --yes/);
    expect(lab.sim.stats().writes.total).toBe(0);

    const apply = await cli(['apply', '--plan', saved, '--format', 'json'], env);
    expect(apply.code).toBe(0);
    const result = JSON.parse(apply.stdout) as { guests: { status: string }[] };
    expect(result.guests.filter((g) => g.status === 'applied')).toHaveLength(13);
    expect(apply.stderr).toMatch(/lab\/db-01 \(100201\): create — create on pve-01 \[UPID:pve-01:/);

    const again = await cli(['plan', '--specs', SPECS_EXAMPLE], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/No changes\./);

    const clean = await cli(['drift', '--specs', SPECS_EXAMPLE], env);
    expect(clean.code).toBe(0);

    lab.sim.operatorEdit(100102, { set: { cpulimit: '2' } });
    const drift = await cli(['drift', '--specs', SPECS_EXAMPLE, '--format', 'json'], env);
    expect(drift.code).toBe(2);
    const report = parsePlanJson(drift.stdout);
    expect(report.guests.find((g) => g.name === 'web-02')?.drift).toEqual([{ key: 'cpulimit', actual: '2' }]);
  });

  it('does not apply a stored plan with errors', async () => {
    const good = join(dir, 'plan.json');
    expect((await cli(['plan', '--specs', SPECS_EXAMPLE, '--save', good], env)).code).toBe(2);
    const saved = join(dir, 'bad-plan.json');
    const plan = parsePlanJson(await readFile(good, 'utf8'));
    plan.errors.push({ cluster: 'lab', message: 'the cluster listing is empty' });
    await writeFile(saved, JSON.stringify(plan));
    const before = lab.sim.stats().writes.total;
    const run = await cli(['apply', '--plan', saved], env);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/error: lab: the cluster listing is empty/);
    expect(lab.sim.stats().writes.total).toBe(before);
  });

  it('apply --specs applies the guests it could read and reports the one whose read failed at plan time', async () => {
    expect((await cli(['apply', '--specs', SPECS_EXAMPLE, '--yes'], env)).code).toBe(0);
    lab.sim.operatorEdit(100101, { set: { cpulimit: '2' } });
    lab.sim.operatorEdit(100102, { set: { cpulimit: '2' } });
    // In front of the simulator: every read of web-02 (100102) fails as a busy pveproxy does, the rest passes through.
    const faulty = await failingReads(lab, /^\/api2\/json\/nodes\/[^/]+\/qemu\/100102(\/|$)/);
    try {
      const run = await cli(['apply', '--specs', SPECS_EXAMPLE, '--yes', '--format', 'json'], { ...env, PVE_CLUSTER_LAB_URL: faulty.url });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('1 guest could not be read and will not be applied; the others will be');
      expect(run.stdout).toMatch(/guest 100102 is listed on pve-0\d but could not be read/);
      // The plan is shown first, then the result.
      const json = run.stdout.slice(run.stdout.indexOf('{\n  "version"'));
      const result = JSON.parse(json) as { guests: { vmid: number; status: string; error?: string; retryable?: boolean }[] };
      expect(result.guests.find((g) => g.vmid === 100101)?.status).toBe('applied');
      const unread = result.guests.find((g) => g.vmid === 100102);
      expect(unread).toMatchObject({ status: 'failed', retryable: true });
      expect(unread?.error).toMatch(/^not read at plan time: guest 100102 is listed on pve-0\d but could not be read: /);
    } finally {
      await faulty.close();
    }
    expect(lab.sim.getGuest(100101)?.rawConfig).not.toMatch(/^cpulimit:/m);
    expect(lab.sim.getGuest(100102)?.rawConfig).toMatch(/^cpulimit: 2$/m);
  });

  it('refuses a tampered stored plan whose specs validate would refuse, before writing anything', async () => {
    const saved = join(dir, 'tampered-plan.json');
    const planned = await cli(['plan', '--specs', SPECS_EXAMPLE, '--save', saved, '--format', 'json'], env);
    expect(planned.code).toBeLessThan(3);
    const plan = parsePlanJson(await readFile(saved, 'utf8'));
    const target = plan.guests.find((g) => g.target.spec && g.action !== 'noop') ?? plan.guests.find((g) => g.target.spec);
    if (!target?.target.spec) throw new Error('the example plan has no guest with a spec');
    target.target.spec.config.memory = 'lots';
    await writeFile(saved, JSON.stringify(plan));
    const before = lab.sim.stats().writes.total + prod.sim.stats().writes.total;
    const run = await cli(['apply', '--plan', saved], env);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/config\.memory: .*got 'lots'/);
    expect(run.stderr).toMatch(/the specs stored in .*tampered-plan\.json do not pass validate: nothing was applied/);
    expect(lab.sim.stats().writes.total + prod.sim.stats().writes.total).toBe(before);
  });

  it('rejects a stored plan of another version with a clear message', async () => {
    const saved = join(dir, 'v3.json');
    await writeFile(saved, JSON.stringify({ version: 3 }));
    const run = await cli(['apply', '--plan', saved], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/plan version 3 is not supported by this pve-gitops \(expects 2\): plan again/);
  });

  it('reads connections from a file, with the token from the environment', async () => {
    const file = join(dir, 'clusters.yaml');
    await writeFile(
      file,
      `clusters:\n  lab:\n    url: ${lab.url}\n    allowHttp: true\n    tokenEnv: LAB_TOKEN\n  prod:\n    url: ${prod.url}\n    allowHttp: true\n    token: "${prod.auditToken}"\n`,
    );
    const run = await cli(['plan', '--specs', SPECS_EXAMPLE, '--clusters', file], { LAB_TOKEN: lab.auditToken });
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/Plan: 13 to create, 0 to update, 0 to destroy\./);
    const missing = await cli(['plan', '--specs', SPECS_EXAMPLE, '--clusters', file], {});
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cluster lab token: environment variable LAB_TOKEN is not set/);
  });

  it('logs every Proxmox request as JSON on stderr when asked, without the token', async () => {
    const run = await cli(['plan', '--specs', SPECS_EXAMPLE], { ...env, PVE_GITOPS_LOG_LEVEL: 'debug' });
    const lines = run.stderr.split('\n').filter((l) => l.startsWith('{'));
    const requests = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'proxmox request');
    expect(requests.length).toBeGreaterThan(2);
    expect(requests[0]).toMatchObject({ name: 'pve-gitops', method: 'GET', path: '/cluster/resources', status: 200 });
    expect(new Set(requests.map((r) => r.cluster))).toEqual(new Set(['lab', 'prod']));
    // Each line names its cluster once (JSON.parse keeps only the last of repeated keys).
    for (const line of lines) expect(line.match(/"cluster":/g) ?? [], line).toHaveLength(line.includes('"cluster"') ? 1 : 0);
    expect(run.stderr).not.toContain(lab.auditToken.split('=')[1]);
  });

  it('gives up on a cluster that does not answer after PVE_CLUSTER_<NAME>_TIMEOUT seconds', async () => {
    const silent = await startTinyServer(() => undefined); // accepts, never answers
    try {
      const run = await cli(['plan', '--specs', SPECS_EXAMPLE], { ...env, PVE_CLUSTER_LAB_URL: silent.url, PVE_CLUSTER_LAB_TIMEOUT: '1' });
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/cluster 'lab' could not be read: GET \/cluster\/resources timed out after 1000 ms/);
      expect(silent.requests).toHaveLength(1);
    } finally {
      await silent.close();
    }
  });

  it('fails a plan whose token is wrong, without printing the token', async () => {
    const run = await cli(['plan', '--specs', SPECS_EXAMPLE], { ...env, PVE_CLUSTER_LAB_READ_TOKEN: 'auditor@pve!audit=wrong-secret-123' });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/cluster 'lab' could not be read: Authentication failed!/);
    expect(run.stdout + run.stderr).not.toMatch(/wrong-secret-123/);
  });
});

describe('pve-gitops check', () => {
  it('reports both tokens, the nodes and what the plan token sees', async () => {
    const run = await cli(['check', '--specs', SPECS_EXAMPLE], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^lab: http:\/\/127\.0\.0\.1:\d+\n {2}plan token: {2}ok — Proxmox VE [\d.]+, \d+ guests visible, \d+ owned \(tag pve-gitops\)/m,
    );
    expect(run.stdout).toMatch(/nodes: {7}pve-01, pve-02/);
    expect(run.stdout).toMatch(/apply token: ok/);
    expect(run.stderr).toMatch(/2 cluster\(s\): all good/);
  });

  it('reports the privileges an apply token lacks instead of "all good" (GET /access/permissions)', async () => {
    // The read-only auditor token as the apply token: it authenticates, and cannot write anything.
    const run = await cli(['check', '--specs', SPECS_EXAMPLE], { ...env, PVE_CLUSTER_LAB_TOKEN: lab.auditToken });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/apply token: ok — authenticated/);
    expect(run.stdout).toMatch(
      /problem: {5}apply token lacks VM\.Allocate on \/vms\/\d+, \/vms\/\d+, \/vms\/\d+ and \d+ more \(to create and destroy guests\)/,
    );
    expect(run.stdout).toMatch(/problem: {5}apply token lacks Datastore\.AllocateSpace on \/storage\/local-lvm/);
    expect(run.stdout).toMatch(/problem: {5}apply token lacks VM\.PowerMgmt on/);
    expect(run.stdout).not.toMatch(/plan token lacks/);
    expect(run.stderr).not.toMatch(/all good/);
  });

  it('reports a plan token that cannot see every guest of the specs', async () => {
    const id = 'partial@pve!plan';
    lab.sim.tokens.add({ id, secret: 'partial-secret', role: 'audit', vmids: new Set([100101]) });
    const run = await cli(['check', '--specs', SPECS_EXAMPLE], { ...env, PVE_CLUSTER_LAB_READ_TOKEN: `${id}=partial-secret` });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/problem: {5}plan token lacks VM\.Audit on \/vms\/\d+/);
    expect(run.stdout).toMatch(/apply token: holds what an apply needs on \d+ paths/);
  });

  it('names the token that fails and the nodes that do not exist', async () => {
    const run = await cli(['check', '--specs', SPECS_EXAMPLE], { ...env, PVE_CLUSTER_PROD_TOKEN: 'root@pam!pve-gitops=not-the-secret' });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/prod: [\s\S]*problem: {5}apply token: Authentication failed!/);
    expect(run.stdout).toMatch(/problem: {5}plan token: Authentication failed!/);
    expect(run.stdout + run.stderr).not.toMatch(/not-the-secret/);
  });
});

describe('pve-gitops demo', () => {
  it('tells the whole story on simulated clusters and exits 0', async () => {
    const run = await cli(['demo']);
    expect(run.stderr).not.toMatch(/failed|conflict/);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Plan: 11 to create, 2 to update, 1 to destroy\./);
    expect(run.stdout).toMatch(/Apply: 14 applied, 1 unchanged, 0 conflict, 0 failed, 0 skipped\./);
    // The clones of the template, with the template, linked or full, and the storage; no move after a full clone.
    expect(run.stdout).toMatch(/> linked clone of template debian-12-cloud \(VMID 109000\) on pve-01 to node pve-01\n/);
    expect(run.stdout).toMatch(/> full clone of template debian-12-cloud \(VMID 109000\) on pve-01 to node pve-01 on storage shared-rbd\n/);
    expect(run.stdout).not.toMatch(/move scsi0/);
    expect(run.stdout).toMatch(/4\. Plan again[\s\S]*No changes\./);
    expect(run.stdout).toMatch(/cpulimit: spec \(unset\), cluster 2/);
  });
});
