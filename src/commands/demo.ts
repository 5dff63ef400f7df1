/**
 * `pve-gitops demo`: the whole story on two simulated clusters, nothing to set up — validate, plan
 * (clones of a template among the creates), apply, plan again, an operator's change outside git,
 * drift, and the plan that reverts it. It runs the real commands against the bundled simulator and
 * `specs-example/`; it is not a test harness.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import labFixture from '../demo/lab-fixture.json' with { type: 'json' };
import prodFixture from '../demo/prod-fixture.json' with { type: 'json' };
import { startSimulator, type RunningSimulator } from '../pve/sim/index.js';
import type { SimFixture } from '../pve/sim/schema.js';
import { envPrefix } from '../core/cluster-name.js';
import { applyCommand } from './apply.js';
import { intFlag, parseFlags } from './args.js';
import { driftCommand } from './drift.js';
import { planCommand } from './plan.js';
import { validateCommand } from './validate.js';
import type { Command, CommandIO } from './types.js';

/** The specs-example directory shipped with the package, wherever it is installed. */
function bundledSpecs(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    const candidate = resolve(dir, 'specs-example');
    if (existsSync(candidate)) return candidate;
    dir = resolve(dir, '..');
  }
  return resolve('specs-example');
}

function heading(io: CommandIO, step: number, title: string, explain: string): void {
  io.stdout.write(`\n━━ ${step}. ${title}\n${explain}\n\n`);
}

/**
 * The whole story on simulated clusters, nothing to set up: a lived-in estate, a plan of the
 * example specs, the apply, a second plan that is empty, an operator's change made outside git,
 * the drift report that finds it, and the plan that would revert it.
 */
async function runDemo(io: CommandIO, options: { specs?: string; taskMs?: number; latencyMs?: number } = {}): Promise<number> {
  const specs = options.specs ?? bundledSpecs();
  const started: RunningSimulator[] = [];
  const work = await mkdtemp(join(tmpdir(), 'pve-gitops-demo-'));
  const savedPlan = join(work, 'plan.json');
  try {
    const lab = await startSimulator({
      port: 0,
      nodes: ['pve-01', 'pve-02'],
      fixture: labFixture as SimFixture,
      taskMs: options.taskMs ?? 20,
      latencyMs: options.latencyMs ?? 0,
      clusterName: 'lab',
      tls: true,
    });
    started.push(lab);
    const prod = await startSimulator({
      port: 0,
      nodes: ['pve-11', 'pve-12'],
      fixture: prodFixture as SimFixture,
      taskMs: options.taskMs ?? 20,
      latencyMs: options.latencyMs ?? 0,
      clusterName: 'prod',
      tls: true,
    });
    started.push(prod);

    const env: NodeJS.ProcessEnv = { ...io.env, NO_COLOR: io.env.NO_COLOR ?? '' };
    for (const [name, sim] of [
      ['lab', lab],
      ['prod', prod],
    ] as const) {
      env[`${envPrefix(name)}URL`] = sim.url;
      env[`${envPrefix(name)}TOKEN`] = sim.token;
      env[`${envPrefix(name)}READ_TOKEN`] = sim.auditToken;
      // As a real cluster is set up: TLS, with the simulator's certificate pinned by fingerprint.
      if (sim.fingerprint) env[`${envPrefix(name)}FINGERPRINT`] = sim.fingerprint;
    }
    const sub: CommandIO = { ...io, env };
    const run = (command: Command, args: string[]): Promise<number> => command.run(['--specs', specs, ...args], sub);

    io.stdout.write(
      [
        'pve-gitops demo — two simulated Proxmox VE clusters, nothing to set up.',
        `  lab:  ${lab.url} (nodes pve-01, pve-02; ${labFixture.guests.length} guests already there)`,
        `  prod: ${prod.url} (nodes pve-11, pve-12; ${prodFixture.guests.length} guests already there)`,
        `  specs: ${specs}`,
        '',
      ].join('\n'),
    );

    heading(
      io,
      1,
      'Validate the specs',
      '`pve-gitops validate` checks every document: schema, VMID ranges, names, storages, bridges, Proxmox option names.',
    );
    if ((await run(validateCommand, [])) !== 0) return 1;

    heading(
      io,
      2,
      'Plan',
      'A read-only plan against the live clusters, with the read-only audit token: creates — two cloned from the template debian-12-cloud, which an earlier pull request built from a cloud image — an adoption, a destroy, a change pending until restart. Unowned guests are left alone. The plan is saved for the apply.',
    );
    const first = await run(planCommand, ['--save', savedPlan]);
    if (first !== 2) return 1;

    heading(
      io,
      3,
      'Apply the saved plan',
      'Every guest: read again, change recomputed and compared with the reviewed one, written with the digest of that read, tasks awaited.',
    );
    if ((await run(applyCommand, ['--plan', savedPlan])) !== 0) return 1;

    heading(io, 4, 'Plan again', 'Right after an apply the plan is empty: a perpetual diff would be a bug.');
    if ((await run(planCommand, [])) !== 0) return 1;

    heading(
      io,
      5,
      "An operator's change outside git",
      'During an incident someone caps the CPU of lab/web-02 in the web UI (cpulimit takes effect at once).',
    );
    lab.sim.operatorEdit(100102, { set: { cpulimit: '2' } });
    io.stdout.write('lab/web-02 (100102): cpulimit 2, written directly to the cluster\n');

    heading(io, 6, 'Drift report', '`pve-gitops drift` reads every owned guest and reports what changed outside git. It never writes.');
    if ((await run(driftCommand, [])) !== 2) return 1;

    heading(
      io,
      7,
      'Plan once more',
      'Applying the specs would remove the cap again (a `delete`, never an empty value): merge only if that is intended, or take the live value into the spec.',
    );
    if ((await run(planCommand, [])) !== 2) return 1;

    io.stdout.write('\nDone. Try it on your own cluster: see README.md, "Cluster connections".\n');
    return 0;
  } finally {
    await Promise.allSettled(started.map((s) => s.close()));
    await rm(work, { recursive: true, force: true });
  }
}

export const demoCommand: Command = {
  name: 'demo',
  summary: 'the whole story on simulated clusters: plan, apply, drift, plan again',
  usage: 'pve-gitops demo [--specs DIR] [--task-ms N] [--latency-ms N]',
  async run(args, io) {
    const flags = parseFlags(args, {
      specs: { type: 'string' },
      'task-ms': { type: 'string' },
      'latency-ms': { type: 'string' },
    });
    const options: { specs?: string; taskMs?: number; latencyMs?: number } = {
      taskMs: intFlag(flags['task-ms'], 'task-ms', 20),
      latencyMs: intFlag(flags['latency-ms'], 'latency-ms', 0),
    };
    if (flags.specs !== undefined) options.specs = resolve(io.cwd, flags.specs);
    return runDemo(io, options);
  },
};
