/**
 * The parts of undici the Proxmox client uses, loaded alone. undici's index loads all of
 * undici (fetch, WebSocket, caches, mocks, …): about 0.1 s of every command that talks to a
 * cluster, for a connection pool, its `request` and a TLS connector. The package has no `exports`
 * map, so these files are part of what it publishes; the types are the index's. (The index also
 * puts `request` on every dispatcher's prototype; here it is called on the pool instead.)
 */
import { createRequire } from 'node:module';
import type { buildConnector as BuildConnector, Pool as UndiciPool } from 'undici';

const require = createRequire(import.meta.url);

export const Pool: typeof UndiciPool = require('undici/lib/dispatcher/pool.js');
export type Pool = UndiciPool;
const apiRequest: UndiciPool['request'] = require('undici/lib/api/api-request.js');

/** `pool.request(options)`, as undici's index defines it. */
export function poolRequest(pool: UndiciPool, options: Parameters<UndiciPool['request']>[0]): ReturnType<UndiciPool['request']> {
  return apiRequest.call(pool, options);
}

export const buildConnector: typeof BuildConnector = require('undici/lib/core/connect.js');
