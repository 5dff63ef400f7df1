/**
 * `whenRequestSent`: resolves once a request to the cluster has left the process, while its answer
 * is still to come — what `plan --base` waits for before it parses its trees — and only for the
 * request it watches.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PveClient } from '../../src/pve/client.js';
import { whenRequestSent } from '../../src/pve/request-sent.js';
import { sendJson, startTinyServer, type TinyServer } from './helpers/tiny-server.js';

const TOKEN = 'root@pam!test=00000000-0000-0000-0000-000000000000';

let server: TinyServer | undefined;
let client: PveClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

/** A cluster that holds every answer until `release` is called. */
async function heldCluster(): Promise<{ client: PveClient; arrived: Promise<string>; release: () => void }> {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let arrive: (path: string) => void = () => undefined;
  const arrived = new Promise<string>((resolve) => {
    arrive = resolve;
  });
  server = await startTinyServer(async (req, res) => {
    arrive(req.url ?? '');
    await released;
    sendJson(res, 200, { data: [] });
  });
  client = new PveClient({ cluster: 'lab', url: server.url, token: TOKEN });
  return { client, arrived, release };
}

describe('whenRequestSent', () => {
  it('resolves when the watched request has left, before its answer', async () => {
    const cluster = await heldCluster();
    const watch = whenRequestSent(cluster.client.url, '/cluster/resources');
    let answered = false;
    const listing = cluster.client.clusterResources().then(() => {
      answered = true;
    });
    await watch.sent;
    expect(answered).toBe(false);
    expect(await cluster.arrived).toBe('/api2/json/cluster/resources?type=vm');
    cluster.release();
    await listing;
  });

  it('does not resolve for another path, another cluster, or once stopped', async () => {
    const cluster = await heldCluster();
    const other = whenRequestSent(cluster.client.url, '/nodes');
    const elsewhere = whenRequestSent('http://127.0.0.1:1', '/cluster/resources');
    const stopped = whenRequestSent(cluster.client.url, '/cluster/resources');
    stopped.stop();
    const watched = whenRequestSent(cluster.client.url, '/cluster/resources');
    let resolved = 0;
    for (const watch of [other, elsewhere, stopped]) void watch.sent.then(() => (resolved += 1));
    const listing = cluster.client.clusterResources();
    await watched.sent;
    await cluster.arrived;
    cluster.release();
    await listing;
    other.stop();
    elsewhere.stop();
    expect(resolved).toBe(0);
  });
});
