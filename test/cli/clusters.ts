/**
 * The simulated clusters the command-line tests run against, started with the App tests'
 * `startClusters` (one simulator per cluster, and the `PVE_CLUSTER_<NAME>_*` environment that
 * reaches it): the example specs' `lab` and `prod`, a one-node `lab`, and a proxy in front of a
 * cluster whose reads of some paths fail.
 */
import { envPrefix } from '../../src/core/cluster-name.js';
import type { RunningSimulator } from '../../src/pve/sim/index.js';
import type { SimFixture } from '../../src/pve/sim/schema.js';
import { startClusters, type TestClusters } from '../app/clusters.js';
import { startTinyServer, type TinyServer } from '../client/helpers/tiny-server.js';
import { LAB_TEMPLATE_FIXTURE } from '../engine/helpers.js';

/** Started clusters by name, the environment that reaches them, and how to stop them. */
export type CliClusters<Names extends string> = Record<Names, RunningSimulator> & Pick<TestClusters, 'env' | 'close'>;

/** `started`'s simulators by name beside its environment, with `withoutReadToken`'s read tokens left out. */
function named<Names extends string>(
  started: TestClusters,
  names: readonly Names[],
  withoutReadToken: readonly Names[],
): CliClusters<Names> {
  for (const name of withoutReadToken) delete started.env[`${envPrefix(name)}READ_TOKEN`];
  const sims = Object.fromEntries(names.map((name) => [name, started.sims[name]])) as Record<Names, RunningSimulator>;
  return { ...sims, env: started.env, close: () => started.close() };
}

/**
 * The clusters the example specs name: `lab` (two nodes, holding the example's template, read
 * with its audit token) and `prod` (two nodes, empty, with no read token: read with its apply token).
 */
export async function startExampleClusters(): Promise<CliClusters<'lab' | 'prod'>> {
  const started = await startClusters({
    lab: { nodes: ['pve-01', 'pve-02'], fixture: LAB_TEMPLATE_FIXTURE },
    prod: { nodes: ['pve-11', 'pve-12'] },
  });
  return named(started, ['lab', 'prod'], ['prod']);
}

/** A one-node `lab` (pve-01) holding `fixture`, reached with its apply token alone. */
export async function startOneNodeLab(fixture: SimFixture): Promise<CliClusters<'lab'>> {
  return named(await startClusters({ lab: { nodes: ['pve-01'], taskMs: 2, fixture } }), ['lab'], ['lab']);
}

/**
 * A proxy in front of `sim`: a GET whose path matches `failing` is answered 500 "got timeout", as a
 * busy pveproxy does; every other request is passed through.
 */
export function failingReads(sim: RunningSimulator, failing: RegExp): Promise<TinyServer> {
  return startTinyServer(async (req, res, body) => {
    if (req.method === 'GET' && failing.test(req.url ?? '')) {
      res.writeHead(500, 'got timeout', { 'content-type': 'application/json' });
      res.end('{"data":null}');
      return;
    }
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length', 'accept-encoding'].includes(name)),
    ) as Record<string, string>;
    const answer = await fetch(`${sim.url}${req.url}`, { method: req.method, headers, ...(body !== '' ? { body } : {}) });
    res.writeHead(answer.status, answer.statusText, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
}
