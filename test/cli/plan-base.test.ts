/**
 * `pve-gitops plan --base`: a pull request's plan, from a base tree and a head tree. What changed
 * is planned, and nothing else is read; the listing of each cluster the changed files name is
 * requested before either tree is parsed, so its wait is hidden under the loading; the
 * connections opened for it early say nothing, and cost nothing, when the specs are invalid.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parsePlanJson } from '../../src/core/render/render-json.js';
import { SPECS_EXAMPLE } from '../engine/helpers.js';
import { type CliClusters, startExampleClusters } from './clusters.js';
import { cli } from './run-cli.js';

/**
 * What happened, in order: each tree's parse starting (`parse head`), each listing request leaving
 * (`sent lab`) and each connection opened (`socket`).
 */
const events = vi.hoisted(() => [] as string[]);

vi.mock('../../src/spec-files/load-spec-files.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/spec-files/load-spec-files.js')>();
  return {
    ...real,
    loadSpecFiles: (...args: Parameters<typeof real.loadSpecFiles>) => {
      events.push(`parse ${args[1]?.label?.endsWith('base') ? 'base' : 'head'}`);
      return real.loadSpecFiles(...args);
    },
  };
});

let dir: string;
let clusters: CliClusters<'lab' | 'prod'>;
let head: string;
let base: string;

const onSent = (message: unknown): void => {
  const { request } = message as { request: { origin: string; path: string } };
  if (!request.path.startsWith('/api2/json/cluster/resources')) return;
  const name = Object.entries(clusters.env).find(([key, url]) => key.endsWith('_URL') && url === String(request.origin))?.[0];
  events.push(`sent ${name?.replace(/^PVE_CLUSTER_(.+)_URL$/, '$1').toLowerCase()}`);
};

/** Each connection opened (`socket`), among the events. */
const onSocket = (): void => {
  events.push('socket');
};

beforeEach(async () => {
  events.length = 0;
  dir = await mkdtemp(join(tmpdir(), 'pve-gitops-plan-base-'));
  clusters = await startExampleClusters();
  base = join(dir, 'base');
  head = join(dir, 'head');
  await cp(SPECS_EXAMPLE, base, { recursive: true });
  await cp(SPECS_EXAMPLE, head, { recursive: true });
  subscribe('undici:client:sendHeaders', onSent);
  subscribe('net.client.socket', onSocket);
});

afterEach(async () => {
  unsubscribe('undici:client:sendHeaders', onSent);
  unsubscribe('net.client.socket', onSocket);
  await clusters.close();
  await rm(dir, { recursive: true, force: true });
});

/** Edits a file of the head tree. */
async function edit(file: string, from: string, to: string): Promise<void> {
  const path = join(head, file);
  const text = await readFile(path, 'utf8');
  expect(text).toContain(from);
  await writeFile(path, text.replace(from, to));
}

const listings = (sim: CliClusters<'lab' | 'prod'>['lab']): number => sim.sim.stats().requests.byRoute['GET /cluster/resources'] ?? 0;

describe('pve-gitops plan --base', () => {
  it('requests the listing of the cluster a change names before either tree is parsed, and lists it once', async () => {
    await edit('lab/web.yaml', '  memory: 4096\n', '  memory: 6144\n');
    const run = await cli(['plan', '--specs', head, '--base', base, '--format', 'json'], clusters.env);
    expect(run.code).toBe(2);
    const plan = parsePlanJson(run.stdout);
    expect(plan.guests.map((g) => g.name)).toEqual(['web-01']);
    expect(events.filter((event) => event !== 'socket')).toEqual(['sent lab', 'parse head', 'parse base']);
    // The early listing is the plan's listing: read once, and the unchanged cluster not at all.
    expect(listings(clusters.lab)).toBe(1);
    expect(clusters.prod.sim.stats().requests.total).toBe(0);
  });

  it('opens the connections the reads will use before the trees are parsed, not after', async () => {
    await edit('lab/web.yaml', '  memory: 4096\n', '  memory: 6144\n');
    const run = await cli(['plan', '--specs', head, '--base', base, '--format', 'json'], {
      ...clusters.env,
      PVE_CLUSTER_LAB_CONCURRENCY: '3',
    });
    expect(run.code).toBe(2);
    // The listing's connection and two more beside it, as many as the cluster's concurrency; the
    // guest's read goes out on one of them, no handshake after loading.
    expect(events.filter((event) => event !== 'parse base')).toEqual(['socket', 'socket', 'socket', 'sent lab', 'parse head']);
  });

  it('plans exactly what a plan without the early listing plans', async () => {
    await edit('lab/web.yaml', '  memory: 4096\n', '  memory: 6144\n');
    const early = await cli(['plan', '--specs', head, '--base', base, '--format', 'json'], clusters.env);
    // A head that also differs in a comment of a file of the other cluster: both are connected
    // early, and the plan is the same (prod's listing was read for nothing).
    await edit('prod/web.yaml', 'kind: VM', '# a comment\nkind: VM');
    const both = await cli(['plan', '--specs', head, '--base', base, '--format', 'json'], clusters.env);
    const { createdAt: _one, ...plan } = parsePlanJson(early.stdout);
    const { createdAt: _other, ...same } = parsePlanJson(both.stdout);
    expect(same).toEqual(plan);
    expect(both.code).toBe(early.code);
    expect(both.stderr).toBe(early.stderr);
    expect(early.stderr).toMatch(/plain http:\/\//);
  });

  it('rehearses through the connection opened early', async () => {
    await edit('lab/web.yaml', '  memory: 4096\n', '  memory: 6144\n');
    const run = await cli(['plan', '--specs', head, '--base', base, '--rehearse'], clusters.env);
    expect(run.stdout).toContain('Rehearsal: 1 of 1 guest applied on a simulated copy');
    expect(run.code).toBe(2);
    // The guest listing once (opened early, used by the plan), and the rehearsal's one read of the
    // storages (`/cluster/resources?type=storage`, docs/rehearsal.md) on the same route.
    expect(listings(clusters.lab)).toBe(2);
  });

  it('reads nothing when no file differs', async () => {
    const run = await cli(['plan', '--specs', head, '--base', base], clusters.env);
    expect(run.code).toBe(0);
    expect(clusters.lab.sim.stats().requests.total + clusters.prod.sim.stats().requests.total).toBe(0);
  });

  it('reports invalid specs as before: nothing from the connection opened early, and no plan', async () => {
    await edit('lab/web.yaml', '  memory: 4096\n', '  memory: 6144\n');
    await writeFile(join(base, 'lab/web.yaml'), `${await readFile(join(base, 'lab/web.yaml'), 'utf8')}\n  corez: 4\n`);
    const run = await cli(['plan', '--specs', head, '--base', base], clusters.env);
    expect(run.code).toBe(1);
    // The connection opened early warns of plain http (see above): held, and dropped.
    expect(run.stdout).toMatch(/^base: lab\/web\.yaml:\d+:\d+: /);
    expect(run.stderr).toBe('the specs are invalid: nothing was planned\n');
  });

  it('says a cluster has no connection only once the specs are valid, as without a base', async () => {
    await edit('lab/web.yaml', '  memory: 4096\n', '  memory: 6144\n');
    const { PVE_CLUSTER_LAB_URL: _dropped, ...withoutLab } = clusters.env;
    const run = await cli(['plan', '--specs', head, '--base', base], withoutLab);
    const plain = await cli(['plan', '--specs', head], withoutLab);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(plain.stderr);
    expect(run.stderr).toMatch(/no connection configured for cluster lab/);
  });
});
